#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each for SECONDS
# (default 60) on a copy of its seed corpus fuzz/corpus/<target>. Fails on any crash, leak,
# timeout or out-of-memory; the input that caused it is left in build-fuzz/artifacts/.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (targets: gguf tokenizer chat_template)
# EMBER_FUZZ_SEED=N fixes libFuzzer's seed and EMBER_FUZZ_RUNS=N stops each target after N
# inputs: CI uses both, so that a red run replays exactly here (SECONDS then only caps the
# time). Without them every run explores new inputs, which is what hunting for bugs wants.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_FUZZ_BUILD_DIR:-$root/build-fuzz}"
secs="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf tokenizer chat_template)

for tool in clang clang++; do
    command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (scripts/deps.sh test installs it)" >&2; exit 1; }
done

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DEMBER_FUZZ=ON -DEMBER_SANITIZE=ON -DEMBER_BUILD_APP=OFF -DEMBER_VULKAN=OFF \
    -DEMBER_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --parallel "${EMBER_JOBS:-$(nproc)}" \
    --target $(printf 'fuzz_%s ' "${targets[@]}")

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
mkdir -p "$build/artifacts"
status=0
for t in "${targets[@]}"; do
    seeds="$root/fuzz/corpus/$t"
    work="$build/corpus/$t"  # new inputs go here, never into the repository
    mkdir -p "$work"
    args=(-max_total_time="$secs" -timeout=25 -rss_limit_mb=3072 -print_final_stats=1
          -artifact_prefix="$build/artifacts/$t-")
    [ -f "$root/fuzz/$t.dict" ] && args+=(-dict="$root/fuzz/$t.dict")
    [ "$t" = tokenizer ] && args+=(-max_len=4096)
    [ -n "${EMBER_FUZZ_SEED:-}" ] && args+=(-seed="$EMBER_FUZZ_SEED")
    [ -n "${EMBER_FUZZ_RUNS:-}" ] && args+=(-runs="$EMBER_FUZZ_RUNS")
    echo "fuzz.sh: fuzz_$t for $secs s" >&2
    if ! "$build/fuzz/fuzz_$t" "${args[@]}" "$work" "$seeds" >"$build/fuzz_$t.log" 2>&1; then
        tail -n 60 "$build/fuzz_$t.log" >&2
        echo "fuzz.sh: fuzz_$t FAILED; reproduce with: $build/fuzz/fuzz_$t $(ls -t "$build"/artifacts/"$t"-* 2>/dev/null | head -n 1)" >&2
        status=1
    else
        grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/fuzz_$t.log" | tr '\n' ' ' >&2
        echo >&2
    fi
done
[ $status -eq 0 ] && echo "fuzz.sh: ${#targets[@]} targets ran $secs s each with no crash, leak or timeout" >&2
exit $status
