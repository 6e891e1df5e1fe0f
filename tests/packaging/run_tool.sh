#!/usr/bin/env bash
# run_tool.sh DEBIAN_PACKAGE TOOL ARGS...: runs TOOL, failing with a hint when it is missing.
set -euo pipefail
package="$1"
shift
if ! command -v "$1" >/dev/null; then
    echo "$1 not found: install the Debian package $package (scripts/deps.sh test)" >&2
    exit 1
fi
exec "$@"
