#!/usr/bin/env bash
# The table of docs/benchmarks.md: Ember's Vulkan backend against llama.cpp's CUDA backend (flash
# attention off and on) on the same GPU and the same GGUF files, pp512 and tg128, and optionally
# an older Ember build interleaved with this one (old, new, old, new) to check a change for speed.
#
# Two steps, because the GPU machine has no network and no Qt:
#   bench/h200.sh pack [--new TREE] [--old TREE] [--llama SRC]    here, on a Debian 12 machine
#       Builds ember-cli and test_vulkan (scripts/device/bundle.sh) of this checkout, or of
#       --new TREE, and gathers them in .bench/ (git-ignored) with the libraries they need.
#       --old TREE: a checkout of another commit (`git worktree add ../old <commit>`), whose
#       ember-cli is built the same way and runs as "old". --llama SRC: a llama.cpp checkout or
#       git directory; its source is packed for a CUDA build of llama-bench on the GPU machine.
#   bench/h200.sh run [--rows "t4 t8 tk l4 l8 lk"] [-r 3] [--rounds 2] [--no-llama] [--tests]
#                     [--no-bench] [--warm]
#       On the GPU machine, from the repository root, with .bench/ and .gl/ (the Vulkan loader's
#       .deb files, see the device tool's README) beside it; with the device tool:
#       run(command="bash bench/h200.sh run --tests --no-bench", carry=[".gl", ".bench"],
#           kind="nvidia-h200"), then at once the same with "bash bench/h200.sh run --warm
#           --rounds 3" (about 7.5 and 4.5 minutes on the H200)
#       Builds llama-bench (CUDA, sm_90) if its source was packed, writes the six models with
#       `ember-cli mkmodel`, runs `ember-cli bench -p 512 -n 128 -r R` (old and new alternating,
#       --rounds times, after an untimed pass of each with --warm, which fills the pipeline
#       caches) and `llama-bench -p 512 -n 128 -ngl 99 -fa 0,1` on each, and prints the
#       table (--no-bench: only the builds, files and tests, which a second call on the same warm
#       machine then reuses, as each call may run 10 minutes at most); logs and JSON go to
#       $BENCH_OUT (default /tmp/ember-bench-out), and, where $OUT is set (the device tool),
#       into $OUT/bench-results.tgz.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pack="$root/.bench"
cmd="${1:-}"
shift || true

pack_cmd() {
    local new="$root" old="" llama=""
    while [ $# -gt 0 ]; do
        case "$1" in
        --new) new="$2"; shift 2 ;;
        --old) old="$2"; shift 2 ;;
        --llama) llama="$2"; shift 2 ;;
        *) echo "h200.sh pack: unknown option '$1'" >&2; return 2 ;;
        esac
    done
    set -e
    rm -rf "$pack/new" "$pack/old" "$pack/shared"
    bash "$new/scripts/device/bundle.sh" >/dev/null
    mkdir -p "$pack/new" "$pack/shared"
    cp "$new/.devbuild/bin/ember-cli" "$new/.devbuild/bin/test_vulkan" "$pack/new/"
    git -C "$new" rev-parse --short HEAD >"$pack/new/commit"
    tar -C "$new/.devbuild/lib" -cJf "$pack/lib.tar.xz" .
    cp -r "$new/.devbuild/shared/models" "$pack/shared/"
    if [ -n "$old" ]; then
        bash "$old/scripts/device/bundle.sh" >/dev/null
        mkdir -p "$pack/old"
        cp "$old/.devbuild/bin/ember-cli" "$pack/old/"
        git -C "$old" rev-parse --short HEAD >"$pack/old/commit"
    fi
    if [ -n "$llama" ]; then
        # Only what a CUDA build of llama-bench reads (no models, web UI or other backends).
        rm -f "$pack"/llama.cpp-*.tar.gz
        local rev
        rev=$(git -C "$llama" describe --tags --always HEAD)
        git -C "$llama" archive --format=tar --prefix=llama.cpp/ HEAD -- . ':!models' ':!media' \
            ':!docs' ':!gguf-py' ':!.github' ':!tests' ':!Sources' ':!poetry.lock' \
            ':!examples/server/public' ':!examples/server/public_legacy' \
            ':!examples/server/themes' ':!examples/server/webui' ':!ggml/src/ggml-sycl' \
            ':!ggml/src/ggml-cann' ':!ggml/src/ggml-metal' ':!ggml/src/ggml-opencl' \
            ':!ggml/src/ggml-kompute' | gzip -9 >"$pack/llama.cpp-$rev.tar.gz"
    fi
    du -sh "$pack"
}

# The rows: t = TinyLlama-1.1B, l = Llama-2-7B; 4 = Q4_0, 8 = Q8_0, k = Q4_K_M (llama.cpp's mixes).
ALL_ROWS="t4 t8 tk l4 l8 lk"
row_preset() { case "$1" in t*) echo tinyllama-1.1b ;; l*) echo llama2-7b ;; esac; }
row_type() { case "$1" in *4) echo q4_0 ;; *8) echo q8_0 ;; *k) echo q4_k_m ;; esac; }

device_setup() {
    if ! ldconfig -p | grep -q libvulkan.so.1; then  # the GPU machine has no Vulkan loader
        for f in "$root"/.gl/*.deb; do dpkg -x "$f" /; done
        ldconfig
    fi
    mkdir -p /tmp/ember-lib
    tar -C /tmp/ember-lib -xJf "$pack/lib.tar.xz"
    export LD_LIBRARY_PATH="/tmp/ember-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export EMBER_SHARED_DIR="$pack/shared"
    # The NVIDIA ICD in libGLX_nvidia.so.0 cannot create an instance on a headless machine; the
    # same driver's libEGL_nvidia.so.0 can.
    if ! "$pack/new/ember-cli" devices 2>/dev/null | grep -q NVIDIA; then
        printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.3.0"}}' \
            >/tmp/nv_egl_icd.json
        export VK_DRIVER_FILES=/tmp/nv_egl_icd.json
    fi
}

build_llama() {  # llama-bench with the CUDA backend for sm_90 in /tmp/llama/build
    local tgz
    tgz=$(ls "$pack"/llama.cpp-*.tar.gz 2>/dev/null | head -1)
    LLAMA_BENCH=/tmp/llama/build/bin/llama-bench
    [ -x "$LLAMA_BENCH" ] && return 0
    [ -n "$tgz" ] || { echo "no llama.cpp source in .bench (pack --llama)"; return 1; }
    rm -rf /tmp/llama && mkdir -p /tmp/llama && tar -C /tmp/llama --strip-components=1 -xzf "$tgz"
    basename "$tgz" .tar.gz >/tmp/llama/REV
    mkdir -p /tmp/llama/pocs && touch -a /tmp/llama/pocs/CMakeLists.txt
    PATH="/usr/local/cuda/bin:$PATH" cmake -S /tmp/llama -B /tmp/llama/build \
        -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DCMAKE_POLICY_VERSION_MINIMUM=3.5 >"$out/llama_cmake.log" 2>&1 &&
        cmake --build /tmp/llama/build --target llama-bench -j"$(nproc)" >"$out/llama_build.log" 2>&1
}

make_models() {  # all rows' files at once, in $MODELS (kept between calls on a warm machine)
    local r
    mkdir -p "$MODELS"
    for r in $ROWS; do
        [ -s "$MODELS/$r.gguf" ] && continue
        ("$pack/new/ember-cli" mkmodel -o "$MODELS/$r.tmp" --preset "$(row_preset $r)" \
            --type "$(row_type $r)" >"$out/mkmodel_$r.log" 2>&1 && mv "$MODELS/$r.tmp" "$MODELS/$r.gguf") &
    done
    wait
}

ember_bench() {  # which row round (round "warm": kept apart from the table's runs)
    local f="$out/$2_$1_$3"
    [ "$3" = warm ] && f="$out/$2_$1-warm"
    XDG_CACHE_HOME="/tmp/ember-cache-$1" timeout 300 "$pack/$1/ember-cli" bench -m "$MODELS/$2.gguf" \
        -p 512 -n 128 -r "$REPS" --backend vulkan --json >"$f.json" 2>"$f.err" ||
        echo "ember $1 $2 round $3 failed: $(tail -2 "$out/$2_$1_$3.err")"
}

run_cmd() {
    ROWS="$ALL_ROWS" REPS=3 ROUNDS=2 local_llama=1 tests=0 bench=1 warm=0
    while [ $# -gt 0 ]; do
        case "$1" in
        --rows) ROWS="$2"; shift 2 ;;
        -r) REPS="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --no-llama) local_llama=0; shift ;;
        --tests) tests=1; shift ;;
        --no-bench) bench=0; shift ;;
        --warm) warm=1; shift ;;
        *) echo "h200.sh run: unknown option '$1'" >&2; return 2 ;;
        esac
    done
    out="${BENCH_OUT:-/tmp/ember-bench-out}"
    MODELS="${MODELS:-/tmp/ember-bench-models}"
    rm -rf "$out" && mkdir -p "$out"
    device_setup
    "$pack/new/ember-cli" devices 2>&1 | tee "$out/devices.txt"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
        2>/dev/null | tee "$out/gpu.txt"
    echo "$(nproc) cores, Linux $(uname -r)"
    local builds="new" r i b t0=$SECONDS
    [ -x "$pack/old/ember-cli" ] && builds="old new"
    for b in $builds; do cp "$pack/$b/commit" "$out/commit_$b" 2>/dev/null; done
    # Build llama-bench while the models are written and the tests run; nothing is timed yet.
    [ $local_llama = 1 ] && { build_llama || { echo "llama.cpp build failed"; tail -20 "$out"/llama_*.log; }; } &
    make_models
    if [ $tests = 1 ]; then
        EMBER_VULKAN_TEST_DEVICE=NVIDIA XDG_CACHE_HOME=/tmp/ember-cache-test timeout 400 \
            "$pack/new/test_vulkan" --gtest_brief=1 >"$out/test_vulkan.log" 2>&1
        echo "test_vulkan rc=$?"; grep -E "PASSED|FAILED|SKIPPED|tests ran" "$out/test_vulkan.log"
    fi
    wait
    [ -x /tmp/llama/build/bin/llama-bench ] && cp /tmp/llama/REV "$out/llama_rev" || local_llama=0
    echo "setup took $((SECONDS - t0)) s"
    for r in $ROWS; do
        [ $bench = 1 ] || break
        [ -s "$MODELS/$r.gguf" ] || { echo "$r: mkmodel failed: $(tail -2 "$out/mkmodel_$r.log")"; continue; }
        if [ $warm = 1 ]; then  # an untimed first pass fills each build's pipeline cache
            for b in $builds; do REPS=1 ember_bench "$b" "$r" warm; done
        fi
        for i in $(seq 1 "$ROUNDS"); do
            for b in $builds; do ember_bench "$b" "$r" "$i"; done
        done
        if [ $local_llama = 1 ]; then
            timeout 300 /tmp/llama/build/bin/llama-bench -m "$MODELS/$r.gguf" -p 512 -n 128 -ngl 99 \
                -fa 0,1 -o json >"$out/${r}_llama.json" 2>"$out/${r}_llama.err" ||
                echo "llama-bench $r failed: $(tail -2 "$out/${r}_llama.err")"
        fi
        echo "$r done at $((SECONDS - t0)) s"
    done
    python3 "$root/bench/table.py" "$out" "$ROWS" | tee "$out/table.md"
    # The device tool brings back at most 8 files from $OUT: one archive of everything.
    [ -n "${OUT:-}" ] && tar -C "$out" -czf "$OUT/bench-results.tgz" . && cp "$out/table.md" "$OUT/"
    return 0
}

case "$cmd" in
pack) pack_cmd "$@" ;;
run) run_cmd "$@" ;;
*) sed -n '2,20p' "$0"; exit 2 ;;
esac
