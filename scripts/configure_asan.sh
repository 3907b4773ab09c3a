#!/usr/bin/env bash
# Configures build-asan/, the one instrumented build that both scripts/sanitize.sh address (the
# whole suite) and scripts/fuzz.sh (the libFuzzer targets) build in: clang, Debug at -O1
# (assertions on, the CPU references fast enough for the suite; -g1: file and line in reports),
# AddressSanitizer (+ leaks) and UndefinedBehaviorSanitizer on every object, with libFuzzer's
# coverage (MEGANEURA_BUILD_FUZZ), no benchmarks, warnings kept as warnings. One build instead of
# two saves CI a second compile of the library.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
echo "asan: configuring build-asan/ (clang, ASan + UBSan, libFuzzer coverage)"
cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DMEGANEURA_SANITIZE=address,undefined -DMEGANEURA_BUILD_FUZZ=ON \
  -DMEGANEURA_BUILD_BENCH=OFF -DMEGANEURA_WERROR=OFF >/dev/null
