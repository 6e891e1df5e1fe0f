#!/usr/bin/env bash
# Builds the engine's unit tests (and ember-cli, which they run) with AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/, asserts on, and runs them with ctest; then the GPU
# fault tests (tests/faults: timeouts, lost devices, out of memory mid-upload, cancels, loading)
# on lavapipe in a second such build with the Vulkan backend, build-asan-vk/.
# Any sanitizer report fails the test that triggered it (UBSan does not recover).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${EMBER_ASAN_BUILD_DIR:-$root/build-asan}"
tests=(test_gguf test_quant test_cpu test_tokenizer test_templates test_engine test_badmodels
       test_server)

# -O1 keeps the build quick and the stacks readable; no NDEBUG, so asserts run too.
configure() {  # build folder, EMBER_VULKAN
    cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
        -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
        -DEMBER_SANITIZE=ON -DEMBER_BUILD_APP=OFF -DEMBER_VULKAN="$2" -DEMBER_BUILD_TESTS=ON >/dev/null
}
configure "$build" OFF
cmake --build "$build" --parallel "${EMBER_JOBS:-$(nproc)}" --target ember-cli "${tests[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
# Only the tests built above (the others show up as *_NOT_BUILT) and none of packaging's.
(cd "$build" && ctest --output-on-failure --timeout 1800 -j "${EMBER_TEST_JOBS:-2}" \
    -E '_NOT_BUILT|^packaging')

# The GPU fault tests: only they run with Vulkan under the sanitizers (lavapipe is slow under
# them, and CI has 2 cores). EMBER_SKIP_SANITIZE_VULKAN=1 skips them.
[ "${EMBER_SKIP_SANITIZE_VULKAN:-0}" = 1 ] && exit 0
vk_build="${EMBER_ASAN_VK_BUILD_DIR:-$root/build-asan-vk}"
configure "$vk_build" ON
cmake --build "$vk_build" --parallel "${EMBER_JOBS:-$(nproc)}" --target test_faults test_load
(cd "$vk_build" && ctest --output-on-failure --timeout 1800 -j "${EMBER_TEST_JOBS:-2}" \
    -R '^fault_vk_')
