#!/usr/bin/env bash
# Vulkan speed on the device machine: the four llama-bench rows of docs/performance.md, plus
# optional A/B runs and a per-stage decode breakdown. Run from the repo root after `source scripts/device/env.sh`; writes logs
# to $OUT (or ./bench-out). Usage: device_bench.sh [tests] [rows] [ab] [diag] [profile] [membw]
# profile: GPU time per dispatch (EMBER_VULKAN_PROFILE=1) for pp512 + tg128 and tg16.
# env: each row's pp512/tg128 again with the variables in $AB_ENV set (e.g. a switch to the
# previous kernel), right after the row's own bench on the same file; variants separated by '|'
# run one after another (AB_ENV="A=0|B=4 C=1").
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
for what in "$@"; do
    case "$what" in
    tests)
        EMBER_VULKAN_TEST_DEVICE=NVIDIA timeout 300 .devbuild/bin/test_vulkan --gtest_brief=1 \
            >"$out/test_vulkan.log" 2>&1
        echo "test_vulkan rc=$?"; grep -E "PASSED|FAILED|tests ran" "$out/test_vulkan.log"
        "$CLI" generate -m .devbuild/shared/models/stories260K.gguf -p "Once upon a time" -n 32 \
            --temp 0 --backend vulkan --json >"$out/stories.json" 2>&1
        head -c 1500 "$out/stories.json"; echo ;;
    rows|ab|env)
        for p in "tinyllama-1.1b q4_0 t4" "tinyllama-1.1b q8_0 t8" "llama2-7b q4_0 l4" "llama2-7b q8_0 l8"; do
            set -- $p
            "$CLI" mkmodel -o /tmp/$3.gguf --preset $1 --type $2 >/dev/null 2>&1 || { echo "mkmodel $3 failed"; continue; }
            if [ "$what" = env ]; then
                timeout 150 "$CLI" bench -m /tmp/$3.gguf -p 512 -n 128 -r 3 --backend vulkan --json >"$out/$3.json" 2>"$out/$3.err"
                summary "$3" "$out/$3.json"
                IFS='|' read -ra variants <<<"${AB_ENV:-}"
                for i in "${!variants[@]}"; do
                    env ${variants[$i]} timeout 150 "$CLI" bench -m /tmp/$3.gguf -p 512 -n 128 -r 3 --backend vulkan --json >"$out/$3_env$i.json" 2>"$out/$3_env$i.err"
                    summary "$3 ${variants[$i]}" "$out/$3_env$i.json"
                done
            elif [ "$what" = rows ]; then
                timeout 150 "$CLI" bench -m /tmp/$3.gguf -p 512 -n 128 -r 3 --backend vulkan --json >"$out/$3.json" 2>"$out/$3.err"
                summary "$3" "$out/$3.json"
            elif [ "$3" = t4 ] || [ "$3" = l4 ]; then
                EMBER_VULKAN_FUSED=0 timeout 100 "$CLI" bench -m /tmp/$3.gguf -p 0 -n 128 -r 3 --backend vulkan --json >"$out/$3_nofuse.json" 2>&1
                summary "$3 unfused" "$out/$3_nofuse.json"
                EMBER_VULKAN_COOPMAT=0 timeout 100 "$CLI" bench -m /tmp/$3.gguf -p 512 -n 0 -r 1 --backend vulkan --json >"$out/$3_nocm.json" 2>&1
                summary "$3 no-coopmat" "$out/$3_nocm.json"
            fi
            rm -f /tmp/$3.gguf
        done ;;
    profile)
        for p in "tinyllama-1.1b q4_0 t4" "llama2-7b q4_0 l4"; do
            set -- $p
            "$CLI" mkmodel -o /tmp/$3.gguf --preset $1 --type $2 >/dev/null 2>&1 || continue
            EMBER_VULKAN_PIPELINE_STATS=1 timeout 60 "$CLI" bench -m /tmp/$3.gguf -p 64 -n 2 -r 1 \
                --backend vulkan --json 2>&1 >/dev/null | grep "pipeline stats" | sort -u >"$out/$3_pipelines.txt"
            cut -c1-400 "$out/$3_pipelines.txt"
            for n in 128 16; do
                EMBER_VULKAN_PROFILE=1 timeout 100 "$CLI" bench -m /tmp/$3.gguf -p 512 -n $n -r 1 \
                    --backend vulkan --json >"$out/$3_prof$n.json" 2>"$out/$3_prof$n.txt"
                summary "$3 profiled tg$n" "$out/$3_prof$n.json"
                cat "$out/$3_prof$n.txt"
            done
            rm -f /tmp/$3.gguf
        done ;;
    membw)
        # The GPU's read bandwidth per dispatch size (bench --membw) next to tg128.
        for p in "tinyllama-1.1b q4_0 t4" "llama2-7b q4_0 l4"; do
            set -- $p
            "$CLI" mkmodel -o /tmp/$3.gguf --preset $1 --type $2 >/dev/null 2>&1 || continue
            timeout 120 "$CLI" bench -m /tmp/$3.gguf -p 0 -n 128 -r 3 --backend vulkan --membw --json >"$out/$3_membw.json" 2>&1
            python3 -c "import json,sys;j=json.load(open(sys.argv[1]));print(sys.argv[2], 'tg %.1f' % j['tg_tok_s'], 'tg GB/s %.0f' % j['tg_gb_s'], 'roofline %.0f tok/s' % j['tg_roofline_tok_s']);[print('  %9d bytes %8.2f us %7.0f GB/s' % (r['bytes'], r['us_per_dispatch'], r['gb_s'])) for r in j['gpu_read']]" "$out/$3_membw.json" "$3" || cat "$out/$3_membw.json"
            rm -f /tmp/$3.gguf
        done ;;
    diag)
        # Decode time by stage: tg with stages left out (EMBER_VULKAN_SKIP, results are wrong).
        for p in "tinyllama-1.1b q4_0 t4" "llama2-7b q4_0 l4"; do
            set -- $p
            "$CLI" mkmodel -o /tmp/$3.gguf --preset $1 --type $2 >/dev/null 2>&1 || continue
            for sk in none a q o f d qaofd; do
                EMBER_VULKAN_SKIP=$sk timeout 60 "$CLI" bench -m /tmp/$3.gguf -p 0 -n 64 -r 2 --backend vulkan --json >"$out/$3_skip_$sk.json" 2>&1
                summary "$3 skip $sk" "$out/$3_skip_$sk.json"
            done
            rm -f /tmp/$3.gguf
        done ;;
    esac
done
