#!/usr/bin/env bash
# The QML passes file paths as paths (ChatController::loadModelFile) or as the URLs its dialogs give,
# never as a URL made of a string ("file://" + path breaks on '#' or '%' in a name; issue 46).
# Usage: check_paths.sh APP_DIR (the QML lives in its feature folders)
set -euo pipefail
app="$1"
[ -d "$app/chat" ] || { echo "check_paths: no $app/chat" >&2; exit 1; }
found="$(grep -rnE "[\"']file:" --include='*.qml' --include='*.js' "$app" || true)"
if [ -n "$found" ]; then
    echo "check_paths: a file URL made of a string (pass the path, or the dialog's URL):" >&2
    echo "$found" >&2
    exit 1
fi
echo "check_paths: no file URL made of a string in $app"
