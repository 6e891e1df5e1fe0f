#!/usr/bin/env bash
# End to end: starts the real app under Xvfb with the tiny model, sends a prompt, waits for the
# reply, and checks that it was printed, saved, and that a screenshot of the window exists.
# A second run shows the performance overlay on DEVICE (default cpu; "llvmpipe" for the Vulkan
# software device) and saves overlay-e2e.png.
# Usage: e2e.sh EMBER_BINARY MODEL OUTPUT_DIR [DEVICE]
set -euo pipefail
app="$1"; model="$2"; out="$3"; device="${4:-cpu}"
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

# The performance overlay during a generation on the chosen device, in a fresh profile.
export XDG_DATA_HOME="$home/data2" XDG_CONFIG_HOME="$home/config2"
ovl="$out/overlay-e2e.png"
rm -f "$ovl"
log="$out/overlay-e2e.log"
status=0
xvfb-run -a -s "-screen 0 1280x800x24" \
    "$app" --model "$model" --device "$device" --overlay --send "Once upon a time" \
    --screenshot "$ovl" >"$log" 2>&1 || status=$?
cat "$log"
[ "$status" -eq 0 ] || { echo "e2e: ember (overlay, $device) exited with $status" >&2; exit 1; }
[ -s "$ovl" ] || { echo "e2e: no screenshot at $ovl" >&2; exit 1; }
perf="$(sed -n 's/^EMBER_PERF: //p' "$log")"
[ -n "$perf" ] || { echo "e2e: no performance numbers printed" >&2; exit 1; }
want_backend=vulkan; [ "$device" = cpu ] && want_backend=cpu
case " $perf " in *" backend=$want_backend "*) ;; *) echo "e2e: expected backend $want_backend: $perf" >&2; exit 1;; esac
# The overlay's numbers are real: tokens were counted and the device memory was read.
tokens="$(sed -n 's/.* tokens=\([0-9]*\) .*/\1/p' <<<"$perf")"
used="$(sed -n 's/.* mem_used=\([0-9]*\) .*/\1/p' <<<"$perf")"
budget="$(sed -n 's/.* mem_budget=\([0-9]*\) .*/\1/p' <<<"$perf")"
[ "${tokens:-0}" -gt 0 ] || { echo "e2e: no tokens counted: $perf" >&2; exit 1; }
[ "${used:-0}" -gt 0 ] && [ "${budget:-0}" -ge "${used:-0}" ] \
    || { echo "e2e: no memory numbers: $perf" >&2; exit 1; }
# The context counted up while the reply was generated (not only at its end), to about where
# it ended (the last token drawn is not evaluated: one more).
live="$(sed -n 's/.* live_context=\([0-9]*\) .*/\1/p' <<<"$perf")"
context="$(sed -n 's/.* context=\([0-9]*\)\/.*/\1/p' <<<"$perf")"
[ "${live:-0}" -gt 0 ] && [ "${live:-0}" -le $((${context:-0} + 1)) ] \
    || { echo "e2e: the context did not count up during the reply: $perf" >&2; exit 1; }
echo "e2e: overlay on $want_backend; screenshot $ovl"

# Screenshots of the main states, each in a fresh profile on the CPU (quick on a busy machine;
# the model dialog on DEVICE),
# into OUTPUT_DIR/screenshots (the README's pictures in docs/screenshots/ are copies of these).
shots="$out/screenshots"
mkdir -p "$shots"
n=0
shot() {
    local name="$1"; shift
    n=$((n + 1))
    export XDG_DATA_HOME="$home/shot$n/data" XDG_CONFIG_HOME="$home/shot$n/config"
    local png="$shots/$name.png" slog="$shots/$name.log" rc=0
    rm -f "$png"
    xvfb-run -a -s "-screen 0 1280x800x24" "$app" "$@" --screenshot "$png" >"$slog" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || { cat "$slog"; echo "e2e: screenshot $name: ember exited with $rc" >&2; exit 1; }
    [ -s "$png" ] || { cat "$slog"; echo "e2e: screenshot $name was not saved" >&2; exit 1; }
}
markdown=$'Format this:\n\n**Bold** and `code`, a poem\nline one\nline two\n\n| Model | Size |\n|---|---|\n| tiny | 260K |\n\n```c\n#include <stdio.h>\nint main(void) { return 0; } // done\n```'
shot empty --model "$model" --device cpu
shot chat-markdown --model "$model" --device cpu --send "$markdown"
# The catalog's fit verdicts on DEVICE (llvmpipe's budget is 2 GiB: small models fit, 7B ones not).
shot model-dialog --model "$model" --device "$device" --show-model-dialog catalog
shot overlay --model "$model" --device cpu --overlay --send "Once upon a time"
shot settings --model "$model" --device cpu --show-settings
shot dark --model "$model" --device cpu --theme dark --overlay --send "$markdown"
echo "e2e: screenshots in $shots"
