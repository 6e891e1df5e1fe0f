#!/usr/bin/env bash
# The model dialog in the real app under Xvfb, in a fresh profile holding the tiny model, a file
# that is not a model, and a paused catalog download (a sparse .part and its state file).
# Saves model-dialog.png (the catalog tab), model-dialog-installed.png and
# model-dialog-downloads.png in OUTPUT_DIR.
# Usage: screenshot.sh EMBER_BINARY MODEL OUTPUT_DIR
set -euo pipefail
app="$1"; model="$2"; out="$3"
mkdir -p "$out"
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
export XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config" XDG_RUNTIME_DIR="$home/run"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
models="$XDG_DATA_HOME/ember/models"
mkdir -p "$models"
cp "$model" "$models/"
echo "this is not a model" > "$models/unfinished-export.gguf"
# 40% of Llama 3.2 1B, as an earlier run would have left it.
part="$models/Llama-3.2-1B-Instruct-Q4_0.gguf.part"
truncate -s 309210368 "$part"
cat > "$part.json" <<JSON
{"version": 1,
 "url": "https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_0.gguf",
 "expected_size": 773025920, "checksum_algorithm": "md5", "checksum": "48ff0243978606fdba19d899b77802fc",
 "bytes_done": 309210368}
JSON

for tab in catalog installed downloads; do
    shot="$out/model-dialog.png"
    [ "$tab" = catalog ] || shot="$out/model-dialog-$tab.png"
    rm -f "$shot"
    log="$out/model-dialog-$tab.log"
    status=0
    xvfb-run -a -s "-screen 0 1280x800x24" \
        "$app" --model "$models/$(basename "$model")" --show-model-dialog "$tab" --screenshot "$shot" >"$log" 2>&1 || status=$?
    cat "$log"
    [ "$status" -eq 0 ] || { echo "screenshot: ember exited with $status" >&2; exit 1; }
    [ -s "$shot" ] || { echo "screenshot: no $shot" >&2; exit 1; }
    head -c 8 "$shot" | od -An -tx1 | grep -q '89 50 4e 47' || { echo "screenshot: $shot is not a PNG" >&2; exit 1; }
    echo "screenshot: $shot"
done
# The paused download was only shown, not resumed or removed.
[ -f "$part" ] && [ -f "$part.json" ] || { echo "screenshot: the .part was touched" >&2; exit 1; }
