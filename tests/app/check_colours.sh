#!/usr/bin/env bash
# Every colour of the QML user interface comes from app/shell/Theme.qml, so that both themes are
# readable: no colour literal (hex, Qt.rgba, a named colour) in any other QML or JS file.
# Usage: check_colours.sh APP_DIR (the QML lives in its feature folders)
set -euo pipefail
ui="$1"
[ -f "$ui/shell/Theme.qml" ] || { echo "check_colours: no $ui/shell/Theme.qml" >&2; exit 1; }
found="$(grep -rnE '"#[0-9a-fA-F]{3,8}"|Qt\.rgba|Qt\.hsla|Qt\.hsva|"(red|white|black|gray|grey|green|blue|yellow|orange)"' \
    --include='*.qml' --include='*.js' "$ui" | grep -v "^$ui/shell/Theme.qml:" || true)"
if [ -n "$found" ]; then
    echo "check_colours: hard-coded colours outside Theme.qml:" >&2
    echo "$found" >&2
    exit 1
fi
echo "check_colours: no hard-coded colours outside Theme.qml"
