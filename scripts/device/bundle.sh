#!/usr/bin/env bash
# Builds ember-cli and the Vulkan tests for the GPU device machine (no Qt there) and gathers
# them in .devbuild/, which the device tool carries. The device has no ../shared, so the tiny
# reference model is copied into .devbuild (git-ignored, never committed). EMBER_DEVBUILD names
# another output folder under the root (.devbuild-<name>) and EMBER_DEVICE_BUILD another build
# folder, so that several people can prepare bundles at once.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${EMBER_DEVICE_BUILD:-$root/build-device}"
out="$root/${EMBER_DEVBUILD:-.devbuild}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_APP=OFF \
    -DEMBER_VULKAN=ON -DEMBER_BUILD_TESTS=ON -DEMBER_STATIC_CLI=ON >/dev/null
cmake --build "$build" --parallel "${EMBER_JOBS:-2}" --target ember-cli ${EMBER_DEVICE_TESTS:-test_vulkan}
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/shared/models"
cp "$build/tools/ember-cli" "$out/bin/"
for t in ${EMBER_DEVICE_TESTS:-test_vulkan}; do
    find "$build/tests" -name "$t" -type f -executable -exec cp {} "$out/bin/" \;
done
cp "$(ldconfig -p | awk '/libpcre2-8.so.0 .*x86-64/ {print $NF; exit}')" "$out/lib/"
# ICU (the NFC of Qwen's tokenizer): the device has another ICU version than Debian 12's.
ldd "$build/tools/ember-cli" | awk '/libicu/ {print $3}' | xargs -r cp -t "$out/lib/"
cp "$root/../shared/models/stories260K.gguf" "$root/../shared/models/stories260K.reference.json" \
    "$out/shared/models/"
strip "$out/bin/"* 2>/dev/null || true
du -sh "$out"
