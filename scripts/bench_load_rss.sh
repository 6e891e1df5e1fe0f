#!/usr/bin/env bash
# Host memory of a loaded model (issue 48): starts `ember-cli serve` on MODEL, waits until it says
# what it serves (the model is loaded, nothing generated), and reads its /proc/PID/status: the peak
# (VmHWM) and steady-state (VmRSS) resident set, split into file pages (RssFile: the model's
# mapping, libraries) and anonymous memory (RssAnon). On lavapipe the "device" memory is host
# memory too, so the weights' device bytes (gpu_mem_used, from a one-token `generate --json`)
# are given beside it. Prints one JSON object.
#   scripts/bench_load_rss.sh MODEL [EMBER_CLI] [ember-cli options: --backend vulkan --device ...]
# e.g. on lavapipe (whose heap is 2 GiB, so a 12-layer Llama-2-7B shape from
# `ember-cli mkmodel --preset llama2-7b --layers 12 --type q4_k_m`):
#   scripts/bench_load_rss.sh l12-q4km.gguf build/tools/ember-cli --backend vulkan --device llvmpipe
set -euo pipefail
model="$1"
cli="${2:-$(cd "$(dirname "$0")/.." && pwd)/build/tools/ember-cli}"
shift $(( $# >= 2 ? 2 : 1 ))
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(--backend vulkan)

gpu_used=$("$cli" generate -m "$model" -p hi -n 1 --json "${opts[@]}" 2>/dev/null |
           sed -n 's/.*"gpu_mem_used":\([0-9]*\).*/\1/p')
log=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
start=$(date +%s.%N)
"$cli" serve -m "$model" --port 0 --ctx 512 "${opts[@]}" 2>"$log" &
pid=$!
until grep -q "serving .* on " "$log"; do
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.05
done
loaded=$(date +%s.%N)
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
printf '{"model": "%s", "file_bytes": %s, "load_s": %s, "gpu_mem_used": %s, ' \
    "$model" "$(stat -c %s "$model")" "$(awk -v a="$start" -v b="$loaded" 'BEGIN { printf "%.2f", b - a }')" \
    "${gpu_used:-null}"
printf '"peak_rss_kb": %s, "rss_kb": %s, "rss_anon_kb": %s, "rss_file_kb": %s}\n' \
    "$(kb VmHWM)" "$(kb VmRSS)" "$(kb RssAnon)" "$(kb RssFile)"
