#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds Ember with its tests and runs them all.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh" engine app test
"$root/scripts/build.sh" -DEMBER_BUILD_TESTS=ON
build="${EMBER_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure --timeout 1200 -j "${EMBER_TEST_JOBS:-2}"
# Hardening (docs/reliability.md): fuzzing, then the unit tests under ASan + UBSan (last, so
# that ctest's summary closes the output). Each can be skipped.
# A fixed seed, so that a red fuzzing run replays exactly (scripts/fuzz.sh explains).
[ "${EMBER_SKIP_FUZZ:-0}" = 1 ] || EMBER_FUZZ_SEED="${EMBER_FUZZ_SEED:-20261121}" "$root/scripts/fuzz.sh" 60
[ "${EMBER_SKIP_SANITIZE:-0}" = 1 ] || "$root/scripts/sanitize.sh"
