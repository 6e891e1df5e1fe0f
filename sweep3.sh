source scripts/device/env.sh >/dev/null 2>&1; export OUT; source tests/vulkan/device_bench.sh >/dev/null
run() { local n=$1 l=$2 a=$3; shift 3; (export "$@"; TO=150 bench_row $n _$l $a); summary "$n $l [$*]" $OUT/${n}_$l.json | sed 's/{.*//'; grep -h "GPU profile\|decode step \|decode host" $OUT/${n}_$l.err; rm -f $OUT/${n}_$l.*; }
TG="-p 0 -n 128 -r 3"
ab() {
  rows_one "$@"
  for rep in 1 2; do
    run $3 r$rep "$TG" X=0
    run $3 h$rep "$TG --host-argmax" X=0
    run $3 q$rep "$TG" EMBER_VULKAN_MATVEC_Q4_SM=4
  done
  run $3 s1 "$TG" EMBER_VULKAN_PROFILE=span
}
each_model ab "llama2-7b q4_0 l4" "tinyllama-1.1b q4_0 t4"
each_model rows_one "tinyllama-1.1b q8_0 t8" "llama2-7b q8_0 l8"
EMBER_VULKAN_TEST_DEVICE=NVIDIA timeout 280 .devbuild/bin/test_vulkan --gtest_brief=1 2>&1 | tail -4
