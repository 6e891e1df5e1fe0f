#!/usr/bin/env bash
# Vulkan speed on the device machine: four llama-bench rows (docs/benchmarks.md's table: bench/h200.sh), plus
# optional A/B runs and a per-stage decode breakdown. Run from the repo root after `source scripts/device/env.sh`; writes logs
# to $OUT (or ./bench-out). Usage: device_bench.sh [tests] [rows] [ab] [diag] [profile] [membw]
# profile: GPU time per dispatch (EMBER_VULKAN_PROFILE=1) for pp512 + tg128 and tg16.
# env: each row's pp512/tg128 again with the variables in $AB_ENV set (e.g. a switch to the
# previous kernel), right after the row's own bench on the same file; variants separated by '|'
# run one after another (AB_ENV="A=0|B=4 C=1").
# tgenv: tg128 only (-p 0), once as is and once per '|'-separated variant of $AB_ENV, on the rows
# named in $ROWS (default "t4 l4"), after each context length in $DEPTHS (bench -d; default
# "0"); variants whose text contains PROFILE also print the GPU time per dispatch.
set -uo pipefail
out="${OUT:-bench-out}"
CLI="${CLI:-$PWD/.devbuild/bin/ember-cli}"
mkdir -p "$out"
# The NVIDIA ICD in libGLX_nvidia.so.0 cannot create an instance on a headless machine; the
# same driver's libEGL_nvidia.so.0 can.
if ! "$CLI" devices 2>/dev/null | grep -q NVIDIA; then
    printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.3.0"}}' >/tmp/nv_egl_icd.json
    export VK_DRIVER_FILES=/tmp/nv_egl_icd.json
fi
"$CLI" devices 2>&1 | tee "$out/devices.txt"
summary() {  # name json
    python3 -c "import json,sys;j=json.load(open(sys.argv[2]));print('%-12s pp %8.0f +- %5.0f   tg %7.1f +- %5.1f  %s' % (sys.argv[1], j['pp_tok_s'], j['pp_sd'], j['tg_tok_s'], j['tg_sd'], j.get('features')))" "$1" "$2" 2>/dev/null || echo "$1 failed"
}
ALL_ROWS=("tinyllama-1.1b q4_0 t4" "tinyllama-1.1b q8_0 t8" "llama2-7b q4_0 l4" "llama2-7b q8_0 l8")
Q4_ROWS=("tinyllama-1.1b q4_0 t4" "llama2-7b q4_0 l4")
# each_model FN ROW...: writes each row's model ("preset type name") to /tmp/NAME.gguf, calls
# FN PRESET TYPE NAME, and removes the file.
each_model() {
    local fn=$1 p
    shift
    for p in "$@"; do
        set -- $p
        "$CLI" mkmodel -o /tmp/$3.gguf --preset $1 --type $2 >/dev/null 2>&1 || { echo "mkmodel $3 failed"; continue; }
        "$fn" "$@"
        rm -f /tmp/$3.gguf
    done
}
# bench_row NAME SUFFIX [ARGS...]: bench -p 512 -n 128 -r 3 (or ARGS) into $out/NAME$SUFFIX.json,
# within $TO seconds (150 unless set).
bench_row() {
    local name=$1 sfx=$2
    shift 2
    timeout "${TO:-150}" "$CLI" bench -m /tmp/$name.gguf ${@:--p 512 -n 128 -r 3} --backend vulkan --json >"$out/$name$sfx.json" 2>"$out/$name$sfx.err"
}
rows_one() {
    bench_row "$3" ""
    summary "$3" "$out/$3.json"
}
env_one() {
    rows_one "$@"
    IFS='|' read -ra variants <<<"${AB_ENV:-}"
    for i in "${!variants[@]}"; do
        (export ${variants[$i]}; bench_row "$3" _env$i)
        summary "$3 ${variants[$i]}" "$out/$3_env$i.json"
    done
}
ab_one() {
    EMBER_VULKAN_FUSED=0 TO=100 bench_row "$3" _nofuse -p 0 -n 128 -r 3
    summary "$3 unfused" "$out/$3_nofuse.json"
    EMBER_VULKAN_COOPMAT=0 TO=100 bench_row "$3" _nocm -p 512 -n 0 -r 1
    summary "$3 no-coopmat" "$out/$3_nocm.json"
}
profile_one() {
    EMBER_VULKAN_PIPELINE_STATS=1 timeout 60 "$CLI" bench -m /tmp/$3.gguf -p 64 -n 2 -r 1 \
        --backend vulkan --json 2>&1 >/dev/null | grep "pipeline stats" | sort -u >"$out/$3_pipelines.txt"
    cut -c1-400 "$out/$3_pipelines.txt"
    for n in 128 16; do
        EMBER_VULKAN_PROFILE=1 TO=100 bench_row "$3" _prof$n -p 512 -n $n -r 1
        summary "$3 profiled tg$n" "$out/$3_prof$n.json"
        cat "$out/$3_prof$n.err"
    done
}
membw_one() {  # the GPU's read bandwidth per dispatch size (bench --membw) next to tg128
    TO=120 bench_row "$3" _membw -p 0 -n 128 -r 3 --membw
    python3 -c "import json,sys;j=json.load(open(sys.argv[1]));print(sys.argv[2], 'tg %.1f' % j['tg_tok_s'], 'tg GB/s %.0f' % j['tg_gb_s'], 'roofline %.0f tok/s' % j['tg_roofline_tok_s']);[print('  %9d bytes %8.2f us %7.0f GB/s' % (r['bytes'], r['us_per_dispatch'], r['gb_s'])) for r in j['gpu_read']]" "$out/$3_membw.json" "$3" || cat "$out/$3_membw.json" "$out/$3_membw.err"
}
tgenv_one() {
    local v d i
    IFS='|' read -ra variants <<<"|${AB_ENV:-}"
    for d in ${DEPTHS:-0}; do
        i=0
        for v in "${variants[@]}"; do
            ([ -n "$v" ] && export $v; TO=100 bench_row "$3" _tg${i}_d$d -p 0 -n 128 -r 3 \
                $([ "$d" != 0 ] && echo "-d $d"))
            summary "$3 d$d [${v:-as is}]" "$out/$3_tg${i}_d$d.json"
            case "$v" in *PROFILE*) tail -22 "$out/$3_tg${i}_d$d.err" ;; esac
            i=$((i + 1))
        done
    done
}
diag_one() {  # decode time by stage: tg with stages left out (EMBER_VULKAN_SKIP, wrong results)
    for sk in none a q o f d qaofd; do
        EMBER_VULKAN_SKIP=$sk TO=60 bench_row "$3" _skip_$sk -p 0 -n 64 -r 2
        summary "$3 skip $sk" "$out/$3_skip_$sk.json"
    done
}
for what in "$@"; do
    case "$what" in
    tests)
        EMBER_VULKAN_TEST_DEVICE=NVIDIA timeout 300 .devbuild/bin/test_vulkan --gtest_brief=1 \
            >"$out/test_vulkan.log" 2>&1
        echo "test_vulkan rc=$?"; grep -E "PASSED|FAILED|tests ran" "$out/test_vulkan.log"
        "$CLI" generate -m .devbuild/shared/models/stories260K.gguf -p "Once upon a time" -n 32 \
            --temp 0 --backend vulkan --json >"$out/stories.json" 2>&1
        head -c 1500 "$out/stories.json"; echo ;;
    rows) each_model rows_one "${ALL_ROWS[@]}" ;;
    env) each_model env_one "${ALL_ROWS[@]}" ;;
    ab) each_model ab_one "${Q4_ROWS[@]}" ;;
    profile) each_model profile_one "${Q4_ROWS[@]}" ;;
    membw) each_model membw_one "${Q4_ROWS[@]}" ;;
    diag) each_model diag_one "${Q4_ROWS[@]}" ;;
    tgenv)
        sel=()
        for r in "${ALL_ROWS[@]}"; do
            set -- $r
            [[ " ${ROWS:-t4 l4} " == *" $3 "* ]] && sel+=("$r")
        done
        each_model tgenv_one "${sel[@]}" ;;
    esac
done
