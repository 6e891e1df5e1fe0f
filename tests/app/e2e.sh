#!/usr/bin/env bash
# End to end: starts the real app under Xvfb with the tiny model, sends a prompt, waits for the
# reply, and checks that it was printed, saved, and that a screenshot of the window exists.
# Usage: e2e.sh EMBER_BINARY MODEL OUTPUT_DIR
set -euo pipefail
app="$1"; model="$2"; out="$3"
mkdir -p "$out"
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
# A fresh profile: settings, conversation database and models folder of this run only.
export XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config" XDG_RUNTIME_DIR="$home/run"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
shot="$out/ember-e2e.png"
rm -f "$shot"

"$app" --version | grep -E '^ember [0-9]+\.[0-9]+\.[0-9]+' >/dev/null

log="$out/ember-e2e.log"
status=0
xvfb-run -a -s "-screen 0 1280x800x24" \
    "$app" --model "$model" --send "Once upon a time" --screenshot "$shot" >"$log" 2>&1 || status=$?
cat "$log"
[ "$status" -eq 0 ] || { echo "e2e: ember exited with $status" >&2; exit 1; }

reply="$(sed -n 's/^EMBER_REPLY: //p' "$log")"
[ -n "${reply//[[:space:]\\n]/}" ] || { echo "e2e: the reply is empty" >&2; exit 1; }
[ -s "$shot" ] || { echo "e2e: no screenshot at $shot" >&2; exit 1; }
head -c 8 "$shot" | od -An -tx1 | grep -q '89 50 4e 47' || { echo "e2e: $shot is not a PNG" >&2; exit 1; }
# The conversation was stored: the database holds the prompt and the reply.
db="$XDG_DATA_HOME/ember/conversations.sqlite"
[ -s "$db" ] || { echo "e2e: no conversation database at $db" >&2; exit 1; }
grep -a -q "Once upon a time" "$db" "$db-wal" 2>/dev/null || { echo "e2e: the prompt is not in the database" >&2; exit 1; }
echo "e2e: reply of ${#reply} characters; screenshot $shot"
