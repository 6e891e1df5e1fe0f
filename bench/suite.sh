#!/usr/bin/env bash
# The GPU tables of docs/benchmarks.md past the first one: model families (issue 43), partial
# offload and loading (issue 48), long chats, and the full test_vulkan; Ember's Vulkan backend
# beside llama.cpp's CUDA backend on the same machine and the same GGUF files (mkmodel presets of
# the real shapes, random weights).
#
# Here, on a Debian 12 machine with the build dependencies (scripts/deps.sh):
#   bench/suite.sh pack [--tree TREE] [--build DIR] [--llama SRC]
#       Builds ember-cli (with `serve`) and test_vulkan of TREE (default: this checkout; measure a
#       clean `git worktree` of a commit, not a tree others are editing) in DIR (default
#       TREE/build-device-suite) and gathers them in .bench/ (git-ignored) with the libraries
#       they need, the Llama 2 vocabulary and ../shared/models/arch (which test_vulkan reads).
#       SRC: a llama.cpp checkout, or a .tar.gz of its source, built there with CUDA.
# There, on the GPU machine (no network, no Qt), from the repository root with .bench/ and .gl/
# (the Vulkan loader's .deb files, see the device tool's README) beside it:
#   bench/suite.sh start [--tag T] [--no-tests] [--filter GTEST_FILTER] JOB...
#       Starts, in the background (setsid: it outlives the call), the setup once per machine
#       (the Vulkan loader, llama.cpp's CUDA build, the GGUF files, test_vulkan on the GPU), then
#       the JOBs in order, and waits for them like `wait`. A later `start` with another --tag (a
#       new .bench/new packed in between) reuses the setup and measures that build.
#   bench/suite.sh wait [--tag T] [--for SECONDS]
#       Waits up to SECONDS (default 540) for the tag's jobs, prints the progress log and packs
#       every result into $OUT/suite-results.tgz (the device tool brings it back).
#   Jobs: base (Ember pp512 and tg128 of TinyLlama-1.1B and Llama-2-7B in Q4_0, Q8_0, Q4_K_M),
#   fam (Ember pp512, tg128 and tg128 at depth 4096 of each family file), famtwin (pp512 and tg128
#   of each family's twin: a Llama of its shape), famllama (llama-bench
#   on base's files and the family files llama.cpp b4748 loads), famdepth (llama.cpp's tg128 at
#   depth 4096), offload (Llama-2-7B Q4_0 with 16 of 32 layers on the GPU, beside llama.cpp
#   -ngl 16, and both on the CPU alone), load (cold and warm load time, host memory, a 512-token
#   prompt), long (depth 16384 and 32768), i49 (issue 49's table: pp512, tg128 and tg128 at depth
#   4096, 16384, 32768 of TinyLlama and Llama-2-7B in Q4_0/Q8_0/Q4_K_M and Llama-3.1-8B Q4_K_M,
#   files written with --ctx 33792, beside llama-bench and llama-batched-bench, FA off and on),
#   prof (EMBER_VULKAN_PROFILE=1 per-dispatch GPU time of tg32 of SUITE_PROF's files, default each
#   family file, and pp512 of SUITE_PROF_PP's, default Qwen and Gemma), profdepth (the same for
#   tg32 after 16384 tokens), cpu (test_cpu if packed, and the CPU backend's pp64/tg32 of
#   TinyLlama on 2 threads, at the host's ISA and at EMBER_CPU_ISA=avx2).
#   offload-e, load-e, long-e and i49-e are Ember's half of a job, offload-l, load-l, long-l and
#   i49-l llama.cpp's. llama.cpp builds in the background while the jobs run; a llama.cpp job
#   waits for it. test_vulkan runs first, in SUITE_TEST_SHARDS processes (default 4).
#   Start's environment: SUITE_MODELS="name ..." makes only those GGUF files (default: all) before
#   the first job, SUITE_MODELS_LATER="name ..." more of them in the background for later jobs,
#   SUITE_ALIAS="l2-q4_0=l2long-q4_0" lets a job's name read another file of the same shape.
# With the device tool each call runs 10 minutes at most and the machine goes back after 30 s
# idle, so call `wait` again at once until the log says ALL DONE:
#   run(command="bash bench/suite.sh start base fam famllama famdepth offload load", carry=[".bench", ".gl"])
#   run(command="bash bench/suite.sh wait", carry=[".bench", ".gl"])
# Then, here: python3 bench/suite_table.py DIR (DIR: the unpacked out-TAG folder).
set -uo pipefail
# The background driver runs from a copy (each device call rewrites the tree), so it is told the root.
root="${SUITE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
pack="$root/.bench"
S=${SUITE_DIR:-/tmp/ember-suite}
M=$S/models
LL=${SUITE_LL:-/tmp/llama/build/bin}
THR=$(nproc 2>/dev/null || echo 16)

pack_cmd() {
    local tree="$root" llama="" build=""
    while [ $# -gt 0 ]; do
        case "$1" in
        --tree) tree="$(cd "$2" && pwd)"; shift 2 ;;
        --build) build="$2"; shift 2 ;;
        --llama) llama="$2"; shift 2 ;;
        *) echo "suite.sh pack: unknown option '$1'" >&2; return 2 ;;
        esac
    done
    set -e
    local dev="$tree/.devbuild-suite"
    build="${build:-$tree/build-device-suite}"
    cmake -S "$tree" -B "$build" -G Ninja -DEMBER_SERVER=ON >/dev/null  # load's steady RSS uses serve
    EMBER_DEVBUILD=.devbuild-suite EMBER_DEVICE_BUILD="$build" bash "$tree/scripts/device/bundle.sh" >/dev/null
    rm -rf "$pack/new" "$pack/shared" && mkdir -p "$pack/new" "$pack/shared/models" "$pack/shared/vocab"
    cp "$dev/bin/ember-cli" "$dev/bin/test_vulkan" "$pack/new/"
    [ -x "$dev/bin/test_cpu" ] && cp "$dev/bin/test_cpu" "$pack/new/"  # EMBER_DEVICE_TESTS="test_vulkan test_cpu"
    git -C "$tree" rev-parse --short HEAD >"$pack/new/commit"
    # The server's libraries are not on the GPU machine either.
    local lib
    lib=$(mktemp -d)
    cp "$dev/lib/"* "$lib/"
    ldd "$dev/bin/ember-cli" | awk '/libcpp-httplib|libssl|libcrypto|libbrotli|libz\./ {print $3}' |
        xargs -r cp -t "$lib/"
    tar -C "$lib" -cJf "$pack/lib.tar.xz" . && rm -rf "$lib"
    cp "$dev/shared/models/"* "$pack/shared/models/"
    cp -r "$tree/../shared/models/arch" "$pack/shared/models/"
    cp "$tree/../shared/vocab/ggml-vocab-llama-spm.gguf" "$pack/shared/vocab/"
    chmod -R u+w "$pack/shared"  # ../shared is read-only; the next pack replaces these
    if [ -f "$llama" ]; then
        local dst
        dst="$pack/llama.cpp-$(basename "$llama" .tar.gz | sed 's/^llama.cpp-//').tar.gz"
        if [ "$(realpath "$llama")" != "$(realpath -m "$dst")" ]; then
            rm -f "$pack"/llama.cpp-*.tar.gz && cp "$llama" "$dst"
        fi
    elif [ -n "$llama" ]; then
        rm -f "$pack"/llama.cpp-*.tar.gz
        git -C "$llama" archive --format=tar --prefix=llama.cpp/ HEAD -- . ':!models' ':!media' \
            ':!docs' ':!gguf-py' ':!.github' ':!tests' ':!examples/server/public' \
            ':!examples/server/webui' ':!ggml/src/ggml-sycl' ':!ggml/src/ggml-cann' \
            ':!ggml/src/ggml-metal' ':!ggml/src/ggml-opencl' ':!ggml/src/ggml-kompute' |
            gzip -9 >"$pack/llama.cpp-$(git -C "$llama" describe --tags --always HEAD).tar.gz"
    fi
    du -sh "$pack"
}

env_setup() {
    if ! ldconfig -p | grep -q libvulkan.so.1; then  # the GPU machine has no Vulkan loader
        for f in "$root"/.gl/*.deb; do dpkg -x "$f" /; done
        ldconfig
    fi
    [ -d "$S/lib-$TAG" ] || { mkdir -p "$S/lib-$TAG" && tar -C "$S/lib-$TAG" -xJf "$pack/lib.tar.xz"; }
    export LD_LIBRARY_PATH="$S/lib-$TAG"
    # The NVIDIA ICD in libGLX_nvidia.so.0 cannot create an instance on a headless machine; the
    # same driver's libEGL_nvidia.so.0 can.
    printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.3.0"}}' \
        >"$S/nv_egl_icd.json"
    export VK_DRIVER_FILES="$S/nv_egl_icd.json" XDG_CACHE_HOME="$S/cache-$TAG"
    export EMBER_SHARED_DIR="$pack/shared"
}

log() { echo "[$(date +%H:%M:%S) +$((SECONDS))s] $*" | tee -a "$O/progress.log"; }

build_llama() {
    [ -x $LL/llama-bench ] && return 0
    local tgz
    tgz=$(ls "$pack"/llama.cpp-*.tar.gz 2>/dev/null | head -1)
    [ -n "$tgz" ] || { log "no llama.cpp source in .bench (pack --llama)"; return 1; }
    rm -rf /tmp/llama && mkdir -p /tmp/llama && tar -C /tmp/llama --strip-components=1 -xzf "$tgz"
    basename "$tgz" .tar.gz >"$S/llama_rev"
    mkdir -p /tmp/llama/pocs && touch -a /tmp/llama/pocs/CMakeLists.txt
    PATH="/usr/local/cuda/bin:$PATH" cmake -S /tmp/llama -B /tmp/llama/build \
        -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DCMAKE_POLICY_VERSION_MINIMUM=3.5 >"$O/llama_cmake.log" 2>&1 &&
        cmake --build /tmp/llama/build --target llama-bench llama-batched-bench llama-cli \
            -j"$(nproc)" >"$O/llama_build.log" 2>&1
}

# Every file a job may read: name, mkmodel preset, type, options (SPM: the Llama 2 vocabulary, which
# llama-cli needs to read prompts). The long files (--ctx 33792) serve every depth up to 32768.
SPECS="l2-q4_0 llama2-7b q4_0 --vocab-from SPM
l2-q8_0 llama2-7b q8_0 --vocab-from SPM
l2-q4_k_m llama2-7b q4_k_m --vocab-from SPM
t-q4_0 tinyllama-1.1b q4_0
t-q8_0 tinyllama-1.1b q8_0
t-q4_k_m tinyllama-1.1b q4_k_m
l2long-q4_0 llama2-7b q4_0 --ctx 33792
l2long-q8_0 llama2-7b q8_0 --ctx 33792
l2long-q4_k_m llama2-7b q4_k_m --ctx 33792
tlong-q4_0 tinyllama-1.1b q4_0 --ctx 33792
tlong-q8_0 tinyllama-1.1b q8_0 --ctx 33792
tlong-q4_k_m tinyllama-1.1b q4_k_m --ctx 33792
l31-q4_k_m llama3.1-8b q4_k_m
l31-q4_0 llama3.1-8b q4_0
qw-q4_k_m qwen2.5-7b q4_k_m
qw-q4_0 qwen2.5-7b q4_0
g3-q4_k_m gemma3-4b q4_k_m
g3-q4_0 gemma3-4b q4_0
phi-q4_k_m phi3.5-mini q4_k_m
phi-q4_0 phi3.5-mini q4_0
lqw-q4_k_m llama3.1-8b q4_k_m QWSHAPE
lqw-q4_0 llama3.1-8b q4_0 QWSHAPE
lg3-q4_k_m llama3.1-8b q4_k_m G3SHAPE
lg3-q4_0 llama3.1-8b q4_0 G3SHAPE
lphi-q4_k_m llama3.1-8b q4_k_m PHISHAPE
lphi-q4_0 llama3.1-8b q4_0 PHISHAPE"
# The twins (lqw, lg3, lphi): Llamas of the families' shapes, as far as a Llama has them (no
# biases, norms or soft-caps; separate Q/K/V and gate/up; an untied embedding table).
QWSHAPE="--embd 3584 --layers 28 --heads 28 --kv-heads 4 --ffn 18944 --vocab 152064"
G3SHAPE="--embd 2560 --layers 34 --heads 8 --kv-heads 4 --head-dim 256 --ffn 10240 --vocab 262144"
PHISHAPE="--embd 3072 --layers 32 --heads 32 --kv-heads 32 --head-dim 96 --ffn 8192 --vocab 32064"

mk() {  # name: writes $M/name.gguf from its line in SPECS
    local n=$1 spec
    [ -s "$M/$n.gguf" ] && return 0
    spec=$(grep "^$n " <<<"$SPECS") || { log "no model named $n"; return 1; }
    set -- $spec
    shift
    local p=$1 t=$2
    shift 2
    case "${1:-}" in *SHAPE) set -- ${!1} ;; esac  # a twin's shape options, by variable name
    "$CLI" mkmodel -o "$M/$n.tmp" --preset "$p" --type "$t" "${@/#SPM/$pack/shared/vocab/ggml-vocab-llama-spm.gguf}" \
        >"$O/mk_$n.log" 2>&1 && mv "$M/$n.tmp" "$M/$n.gguf"
}

make_list() {  # names...: four at a time (each mkmodel uses every core); waits on its own children only
    local n pids=()
    for n in "$@"; do
        mk "$n" &
        pids+=($!)
        if [ ${#pids[@]} -ge 4 ]; then
            wait "${pids[0]}"
            pids=("${pids[@]:1}")
        fi
    done
    [ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"
}

# SUITE_MODELS (default: every file in SPECS) are made before the first job; SUITE_MODELS_LATER
# after it, in the background at the lowest priority, for jobs further down the list (need waits).
# SUITE_ALIAS="a=b ..." makes file a a link to file b (the same shape under a job's usual name).
make_models() {
    mkdir -p "$M"
    make_list ${SUITE_MODELS:-$(cut -d' ' -f1 <<<"$SPECS")}
    local x
    for x in ${SUITE_ALIAS:-}; do ln -sfn "${x#*=}.gguf" "$M/${x%%=*}.gguf"; done
    ls -la "$M" >"$O/models.txt"
    if [ -n "${SUITE_MODELS_LATER:-}" ]; then
        (renice -n 19 $BASHPID >/dev/null; make_list $SUITE_MODELS_LATER; ls -la "$M" >"$O/models.txt"
         log "later models done"; touch "$S/models-later-done") &
    else
        touch "$S/models-later-done"
    fi
}
need() {  # name: waits until the file is made (or every maker has finished); false if there is none
    while [ ! -s "$M/$1.gguf" ] && [ ! -e "$S/models-later-done" ]; do sleep 2; done
    [ -s "$M/$1.gguf" ]
}
need_llama() {  # waits for the llama.cpp build; false if it failed
    while [ ! -e "$S/llama-rc" ]; do sleep 2; done
    [ -s "$S/llama_rev" ] && cp "$S/llama_rev" "$O/llama_rev"
    [ -x $LL/llama-bench ]
}

job_tests() {  # test_vulkan in SUITE_TEST_SHARDS processes at once (gtest sharding; default 4)
    local n=${SUITE_TEST_SHARDS:-4} i
    for ((i = 0; i < n; i++)); do
        GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i EMBER_VULKAN_TEST_DEVICE=NVIDIA EMBER_CLI_PATH="$CLI" \
            XDG_CACHE_HOME="$S/cache-test$i" timeout 560 \
            "$BIN/test_vulkan" ${FILTER:+--gtest_filter=$FILTER} >"$O/test_vulkan.$i.log" 2>&1 &
    done
    wait
    log "test_vulkan ($n shards): $(cat "$O"/test_vulkan.*.log | grep -E '^\[  (PASSED|SKIPPED|FAILED) +\] [0-9]+ test' |
        awk '{k[$2]+=$4} END {for (x in k) printf "%s %d  ", x, k[x]}')"
    grep -hE '^\[  FAILED  \] [A-Z]' "$O"/test_vulkan.*.log | grep -v ' ms)$' | sort -u | tee -a "$O/progress.log"
    grep -hE '^\[       OK \] .* \(([0-9]+) ms\)$' "$O"/test_vulkan.*.log | sed -E 's/.*OK \] (.*) \(([0-9]+) ms\)/\2 \1/' |
        sort -rn | head -15 >"$O/test_vulkan_slowest.txt"
}

FAM="l2-q4_0 qw-q4_k_m qw-q4_0 g3-q4_k_m g3-q4_0 l31-q4_k_m l31-q4_0 phi-q4_k_m phi-q4_0"
FAMT="lqw-q4_k_m lqw-q4_0 lg3-q4_k_m lg3-q4_0 lphi-q4_k_m lphi-q4_0"
# llama.cpp b4748 has no Gemma 3 and does not load mkmodel's Phi-3.5 vocabulary.
FAML="l2-q4_0 qw-q4_k_m qw-q4_0 l31-q4_k_m l31-q4_0"
eb() {  # name label ember-cli bench options...
    local n=$1 l=$2
    shift 2
    need $n || { log "ember bench $n $l: no file"; return 1; }
    timeout 400 "$CLI" bench -m "$M/$n.gguf" --backend vulkan --json "$@" >"$O/e_${n}_$l.json" 2>"$O/e_${n}_$l.err" ||
        log "ember bench $n $l failed: $(tail -2 "$O/e_${n}_$l.err")"
}
toks() { grep -ho '"[pt][pg]_tok_s": *[0-9.]*' "$@" 2>/dev/null | tr '\n' ' '; }

job_fam() {
    local n
    for n in $FAM; do
        [ -s "$O/e_${n}_p512.json" ] || eb $n p512 -p 512 -n 128 -r 3
        if [ $n = l2-q4_0 ]; then
            [ -s "$O/e_l2long-q4_0_d4096.json" ] || eb l2long-q4_0 d4096 -p 0 -n 128 -d 4096 -r 3
            cp "$O/e_l2long-q4_0_d4096.json" "$O/e_${n}_d4096.json"
        else
            [ -s "$O/e_${n}_d4096.json" ] || eb $n d4096 -p 0 -n 128 -d 4096 -r 3
        fi
        log "fam $n: $(toks "$O/e_${n}_p512.json" "$O/e_${n}_d4096.json")"
    done
}
job_famtwin() {  # pp512 and tg128 of the families' twins
    local n
    for n in $FAMT; do
        [ -s "$O/e_${n}_p512.json" ] || eb $n p512 -p 512 -n 128 -r 3
        log "famtwin $n: $(toks "$O/e_${n}_p512.json")"
    done
}
BASE="t-q4_0 t-q8_0 t-q4_k_m l2-q4_0 l2-q8_0 l2-q4_k_m"
job_base() {  # the first table: TinyLlama-1.1B and Llama-2-7B in Q4_0, Q8_0 and Q4_K_M
    local n
    for n in $BASE; do
        [ -s "$O/e_${n}_p512.json" ] || eb $n p512 -p 512 -n 128 -r 3
        log "base $n: $(toks "$O/e_${n}_p512.json")"
    done
}
job_famllama() {  # llama-bench on the family files and the first table's
    local n
    need_llama || { log "famllama: no llama.cpp"; return 1; }
    for n in $(echo $BASE $FAML | tr ' ' '\n' | awk '!seen[$0]++'); do
        need $n || continue  # not made in this sitting
        [ -s "$O/l_${n}_p512.json" ] && continue  # i49-l measured it
        timeout 300 $LL/llama-bench -m "$M/$n.gguf" -p 512 -n 128 -ngl 99 -fa 0,1 -o json \
            >"$O/l_${n}_p512.json" 2>"$O/l_${n}_p512.err" || log "llama-bench $n failed"
    done
    log "famllama done"
}
bb() {  # name label npp ctx fa(0|1): llama.cpp's tg128 after npp tokens (S_TG)
    local fa=""
    need $1 && need_llama || { log "batched-bench $1 $2: no file or no llama.cpp"; return 1; }
    [ "$5" = 1 ] && fa="-fa"
    timeout 400 $LL/llama-batched-bench -m "$M/$1.gguf" -ngl 99 -c "$4" -b 2048 -ub 512 -npp "$3" \
        -ntg 128 -npl 1 $fa >"$O/b_$1_$2_fa$5.log" 2>&1 || log "batched-bench $1 $2 fa$5 failed"
    log "bb $1 $2 fa$5: $(grep -E '^\|\s+[0-9]' "$O/b_$1_$2_fa$5.log" | tr -s ' ' | tr '\n' ' ')"
}
job_famdepth() {
    local n
    for n in $FAML; do bb $n d4096 4096 4352 0; bb $n d4096 4096 4352 1; done
}
job_long-e() {  # tg128 after 16384 and 32768 tokens of context
    local n
    for n in l2long-q4_0 l31-q4_k_m; do
        eb $n d16384 -p 0 -n 128 -d 16384 -r 2
        eb $n d32768 -p 0 -n 128 -d 32768 -r 2
        log "long ember $n: $(toks "$O/e_${n}_d16384.json" "$O/e_${n}_d32768.json")"
    done
}
job_long-l() {
    local n
    for n in l2long-q4_0 l31-q4_k_m; do bb $n long 16384,32768 33024 0; bb $n long 16384,32768 33024 1; done
}
# Issue 49's table in one sitting: TinyLlama-1.1B and Llama-2-7B in Q4_0, Q8_0 and Q4_K_M and
# Llama-3.1-8B Q4_K_M; pp512, tg128, and tg128 after 4096, 16384 and 32768 tokens of context.
I49="${SUITE_I49-tlong-q4_0 tlong-q8_0 tlong-q4_k_m l2long-q4_0 l2long-q8_0 l2long-q4_k_m l31-q4_k_m}"
job_i49-e() {
    local n
    for n in $I49; do
        eb $n p512 -p 512 -n 128 -r 3
        eb $n d4096 -p 0 -n 128 -d 4096 -r 3
        eb $n d16384 -p 0 -n 128 -d 16384 -r 2
        eb $n d32768 -p 0 -n 128 -d 32768 -r 2
        log "i49 ember $n: $(toks "$O"/e_${n}_{p512,d4096,d16384,d32768}.json)"
    done
}
job_i49-l() {
    local n
    need_llama || { log "i49-l: no llama.cpp"; return 1; }
    for n in $I49; do
        need $n || continue
        timeout 300 $LL/llama-bench -m "$M/$n.gguf" -p 512 -n 128 -ngl 99 -fa 0,1 -o json \
            >"$O/l_${n}_p512.json" 2>"$O/l_${n}_p512.err" || log "llama-bench $n failed"
        log "i49 llama-bench $n: $(grep -o '"avg_ts": [0-9.]*' "$O/l_${n}_p512.json" | tr '\n' ' ')"
        bb $n i49 4096,16384,32768 33024 0
        bb $n i49 4096,16384,32768 33024 1
    done
}
job_offload-e() {  # Llama-2-7B Q4_0, 16 of 32 layers on the GPU; all threads of the machine
    local f=$M/l2-q4_0.gguf lim="" s
    lscpu >"$O/lscpu.txt" 2>&1
    "$CLI" info -m "$f" --ctx 1024 --gpu-layers 16 >"$O/info_gl16.txt" 2>&1
    for s in 1.8 1.9 2.0 2.1 2.2 2.3 2.4 2.5 2.6; do  # the limit that leaves 16 layers at ctx 1024
        "$CLI" info -m "$f" --ctx 1024 --gpu-mem-limit ${s}G >"$O/info_lim_$s.txt" 2>&1
        if grep -qE '(^|[^0-9])16 of 32 layers' "$O/info_lim_$s.txt"; then lim=${s}G; break; fi
    done
    log "offload: --gpu-mem-limit giving 16 layers at ctx 1024: ${lim:-none}"
    eb l2-q4_0 gl16 -p 512 -n 128 -r 3 --gpu-layers 16 --threads "$THR" -v
    [ -n "$lim" ] && eb l2-q4_0 lim16 -p 512 -n 128 -r 3 --gpu-mem-limit $lim --ctx 1024 --threads "$THR" -v
    # The split's host memory: peak RSS of a short run (the CPU layers' weights, and any host copy).
    mr --log "$O/lg_offload_rss.log" -- "$CLI" bench -m "$f" --backend vulkan -p 512 -n 16 -r 1 \
        --gpu-layers 16 --threads "$THR" >"$O/offload_rss.json"
    timeout 400 "$CLI" bench -m "$f" --backend cpu --json -p 512 -n 128 -r 2 --threads "$THR" \
        >"$O/e_l2-q4_0_cpu.json" 2>"$O/e_l2-q4_0_cpu.err" || log "ember cpu bench failed: $(tail -2 "$O/e_l2-q4_0_cpu.err")"
    log "offload ember gl16 / lim16 / lim16cpu / cpu: $(toks "$O"/e_l2-q4_0_{gl16,lim16,lim16cpu,cpu}.json); peak RSS $(grep -o '"peak_rss_kb": [0-9]*' "$O/offload_rss.json")"
}
job_offload-l() {
    local f=$M/l2-q4_0.gguf
    timeout 400 $LL/llama-bench -m "$f" -p 512 -n 128 -ngl 16 -fa 0,1 -t "$THR" -o json \
        >"$O/l_l2-q4_0_ngl16.json" 2>"$O/l_l2-q4_0_ngl16.err" || log "llama-bench -ngl 16 failed"
    # -ngl 0 still sends prompt batches' matrix products to CUDA; hiding the GPU gives the CPU alone.
    timeout 400 $LL/llama-bench -m "$f" -p 512 -n 128 -ngl 0 -r 2 -t "$THR" -o json \
        >"$O/l_l2-q4_0_ngl0.json" 2>"$O/l_l2-q4_0_ngl0.err" || log "llama-bench -ngl 0 failed"
    CUDA_VISIBLE_DEVICES='' timeout 400 $LL/llama-bench -m "$f" -p 512 -n 128 -ngl 0 -r 2 -t "$THR" -o json \
        >"$O/l_l2-q4_0_nogpu.json" 2>"$O/l_l2-q4_0_nogpu.err" || log "llama-bench without a GPU failed"
    log "offload llama.cpp done"
}
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null && echo cold || echo warm-only; }
mr() { python3 "$root/bench/memrun.py" "$@"; }
job_load-e() {  # one JSON line a run: wall time, peak RSS, steady RSS (serve), prompt of 512
    local n f o i p
    p="$(cat "$root/bench/prompt512.txt")"
    for n in l2-q4_0 l2-q8_0 l2-q4_k_m; do
        f=$M/$n.gguf o=$O/load_$n.jsonl
        "$CLI" generate -m "$f" -p hi -n 1 --backend vulkan >/dev/null 2>&1  # pipelines into the cache
        echo "{\"run\":\"ember_cold\",\"cache\":\"$(drop)\",\"r\":$(mr --log "$O/lg_${n}_ec.log" -- "$CLI" generate -m "$f" -p hi -n 1 --backend vulkan)}" >>"$o"
        echo "{\"run\":\"ember_warm\",\"r\":$(mr --log "$O/lg_${n}_ew.log" -- "$CLI" generate -m "$f" -p hi -n 1 --backend vulkan)}" >>"$o"
        echo "{\"run\":\"ember_verbose\",\"r\":$(mr --log "$O/lg_${n}_ev.log" -- "$CLI" generate -m "$f" -p hi -n 1 --backend vulkan --verbose)}" >>"$o"
        echo "{\"run\":\"ember_steady\",\"r\":$(mr --until 'serving .* on ' --settle 2 --log "$O/lg_${n}_es.log" -- "$CLI" serve -m "$f" --port 0 --ctx 512 --backend vulkan)}" >>"$o"
        for i in 1 2; do
            echo "{\"run\":\"ember_ttft$i\",\"r\":$(mr --log "$O/lg_${n}_et$i.log" -- "$CLI" generate -m "$f" -p "$p" -n 1 --json --backend vulkan)}" >>"$o"
        done
        log "load ember $n: $(grep -ho 'wall_s": [0-9.]*' "$o" | tr '\n' ' ')"
    done
}
job_load-l() {
    local n f o i
    for n in l2-q4_0 l2-q8_0 l2-q4_k_m; do
        f=$M/$n.gguf o=$O/load_$n.jsonl
        echo "{\"run\":\"llama_cold\",\"cache\":\"$(drop)\",\"r\":$(mr --log "$O/lg_${n}_lc.log" -- $LL/llama-cli -m "$f" -ngl 99 -n 1 -p hi -no-cnv)}" >>"$o"
        echo "{\"run\":\"llama_warm\",\"r\":$(mr --log "$O/lg_${n}_lw.log" -- $LL/llama-cli -m "$f" -ngl 99 -n 1 -p hi -no-cnv)}" >>"$o"
        echo "{\"run\":\"llama_steady\",\"r\":$(mr --until 'Running in interactive mode' --settle 2 --log "$O/lg_${n}_ls.log" -- $LL/llama-cli -m "$f" -ngl 99 -n 1 -p hi -no-cnv -i)}" >>"$o"
        for i in 1 2; do
            echo "{\"run\":\"llama_ttft$i\",\"r\":$(mr --log "$O/lg_${n}_lt$i.log" -- $LL/llama-cli -m "$f" -ngl 99 -n 1 -no-cnv -f "$root/bench/prompt512.txt")}" >>"$o"
        done
        log "load llama.cpp $n: $(grep -ho 'wall_s": [0-9.]*' "$o" | tr '\n' ' ')"
    done
}
PROF="${SUITE_PROF-phi-q4_k_m phi-q4_0 qw-q4_k_m g3-q4_k_m l31-q4_k_m l2-q4_0}"
PROFPP="${SUITE_PROF_PP-qw-q4_k_m g3-q4_k_m}"
job_prof() {  # GPU time per dispatch label (printed on stderr when the session ends)
    local n
    for n in $PROF; do
        EMBER_VULKAN_PROFILE=1 eb $n prof_tg32 -p 0 -n 32 -r 1
    done
    for n in $PROFPP; do
        EMBER_VULKAN_PROFILE=1 eb $n prof_pp512 -p 512 -n 1 -r 1
    done
    log "prof done: $(grep -h 'GPU profile, decode' "$O"/e_*_prof_tg32.err | tr '\n' ' ')"
}
job_profdepth() {  # the same, decoding 32 tokens after 16384 of context (issue 49's long chats)
    local n
    for n in ${SUITE_PROF_DEPTH-l31-q4_k_m l2long-q4_0}; do
        EMBER_VULKAN_PROFILE=1 eb $n prof_d16384 -p 0 -n 32 -d 16384 -r 1
    done
    log "profdepth done: $(grep -h 'GPU profile, decode' "$O"/e_*_prof_d16384.err | tr '\n' ' ')"
}
job_cpu() {  # the CPU backend on this host: test_cpu whole (ISA tests un-skip), then 2-thread bench
    local n isa
    lscpu >"$O/lscpu.txt" 2>&1
    if [ -x "$BIN/test_cpu" ]; then
        timeout 400 "$BIN/test_cpu" >"$O/test_cpu.log" 2>&1
        log "test_cpu rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$O/test_cpu.log" | tr '\n' ' ')"
        grep -E '^\[  (FAILED|SKIPPED) +\] [A-Z]' "$O/test_cpu.log" | sort -u | tee -a "$O/progress.log"
    fi
    for isa in host avx2; do
        for n in t-q4_0 t-q8_0 t-q4_k_m; do
            ( [ $isa = avx2 ] && export EMBER_CPU_ISA=avx2
              timeout 300 "$CLI" bench -m "$M/$n.gguf" --backend cpu --threads 2 -p 64 -n 32 -r 2 --json -v \
                  >"$O/c_${n}_$isa.json" 2>"$O/c_${n}_$isa.err" ) || log "cpu bench $n $isa failed: $(tail -2 "$O/c_${n}_$isa.err")"
            log "cpu $n $isa: $(toks "$O/c_${n}_$isa.json")"
        done
    done
}
job_offload() { job_offload-e; job_offload-l; }
job_long() { job_long-e; job_long-l; }
job_load() { job_load-e; job_load-l; }

driver() {  # setup (once per machine), then the jobs, for $TAG's build
    env_setup
    log "start $TAG: ember $(cat "$BIN/commit"); $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); $(nproc) cores"
    "$CLI" devices >"$O/devices.txt" 2>&1
    cp "$BIN/commit" "$O/ember_commit"
    (exec 9>"$S/gpu.lock"; flock 9; [ -n "$NOTESTS" ] || job_tests) &
    if [ ! -e "$S/setup-started" ]; then
        touch "$S/setup-started"
        (renice -n 10 $BASHPID >/dev/null; build_llama; r=$?; log "llama.cpp build rc=$r"; echo $r >"$S/llama-rc") &
        make_models
        log "models done"
        touch "$S/setup-done"
    else
        while [ ! -e "$S/setup-done" ]; do sleep 2; done
    fi
    [ -s "$S/llama_rev" ] && cp "$S/llama_rev" "$O/llama_rev"
    local j
    for j in "$@"; do
        # One job at a time on the GPU, across tags (the tests hold the lock first).
        exec 9>"$S/gpu.lock"
        flock 9
        log "job $j"
        "job_$j"
        flock -u 9
    done
    wait
    log "ALL DONE"
}

wait_cmd() {  # up to $WAIT seconds, then pack everything into $OUT
    local t=0
    while [ $t -lt "$WAIT" ] && ! grep -q "ALL DONE" "$O/progress.log" 2>/dev/null; do
        sleep 5
        t=$((t + 5))
    done
    [ -n "${OUT:-}" ] && (cd "$S" && tar -czf "$OUT/suite-results.tgz" out-*) 2>/dev/null
    cat "$O/progress.log" 2>/dev/null
}

cmd="${1:-}"
shift || true
TAG=a WAIT=540 NOTESTS="" FILTER=""
while [ $# -gt 0 ]; do
    case "$1" in
    --tag) TAG="$2"; shift 2 ;;
    --for) WAIT="$2"; shift 2 ;;
    --no-tests) NOTESTS=1; shift ;;
    --filter) FILTER="$2"; shift 2 ;;
    *) break ;;
    esac
done
O=$S/out-$TAG
BIN=$S/bin-$TAG
CLI=$BIN/ember-cli
case "$cmd" in
pack) pack_cmd "$@" ;;
start)
    for j in "$@"; do
        declare -F "job_$j" >/dev/null || { echo "suite.sh: unknown job '$j'" >&2; exit 2; }
    done
    mkdir -p "$O" "$M"
    if [ ! -e "$S/started-$TAG" ]; then
        touch "$S/started-$TAG"
        rm -rf "$BIN" && cp -r "$pack/new" "$BIN"
        cp "$0" "$S/driver-$TAG.sh"
        SUITE_ROOT="$root" setsid bash "$S/driver-$TAG.sh" driver --tag "$TAG" ${NOTESTS:+--no-tests} \
            ${FILTER:+--filter "$FILTER"} "$@" >"$O/driver.log" 2>&1 </dev/null &
    fi
    wait_cmd ;;
driver) driver "$@" ;;
wait) wait_cmd ;;
*) sed -n '2,36p' "$0"; exit 2 ;;
esac
