#!/usr/bin/env bash
# The QML's boundaries are typed (issue 46): a C++ object is a property of its registered type, a
# model role a `required property` of its type, a list of values a list<T>. `property var` is left
# only for a value that really has no type, and then its line says why in a comment.
# Usage: check_typed.sh APP_DIR FEATURE... (the feature folders whose QML is checked)
set -euo pipefail
app="$1"
shift
dirs=()
for feature in "$@"; do
    [ -d "$app/$feature" ] || { echo "check_typed: no folder $app/$feature" >&2; exit 1; }
    dirs+=("$app/$feature")
done
found="$(grep -rnE '\bproperty[[:space:]]+var\b' --include='*.qml' "${dirs[@]}" | grep -v '//' || true)"
if [ -n "$found" ]; then
    echo "check_typed: untyped properties (type them, or say in a comment why they stay var):" >&2
    echo "$found" >&2
    exit 1
fi
echo "check_typed: no untyped property without a reason in: $*"
