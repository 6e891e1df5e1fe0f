#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Ember and starts it.
# Arguments go to the app (e.g. --model PATH).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh" engine app
"$root/scripts/build.sh" -DEMBER_BUILD_TESTS=OFF
build="${EMBER_BUILD_DIR:-$root/build}"
if [ -x "$build/app/ember" ]; then
    exec "$build/app/ember" "$@"
fi
# Until the desktop app is built, show the engine working on the bundled tiny model.
model="${1:-$root/../shared/models/stories260K.gguf}"
exec "$build/tools/ember-cli" generate -m "$model" -p "Once upon a time" -n 64
