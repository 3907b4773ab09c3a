#!/usr/bin/env bash
# The test suite under sanitizers (docs/reliability.md#sanitizers). Sets up the machine like
# scripts/build.sh, then
#   scripts/sanitize.sh address [ctest args]  builds build-asan/ (scripts/configure_asan.sh: clang,
#                                              AddressSanitizer (+ leaks) and UndefinedBehaviorSanitizer,
#                                              the fuzz targets too), runs the whole suite
#   scripts/sanitize.sh thread [ctest args]    builds build-tsan/ with ThreadSanitizer, runs
#                                              concurrency_test (other binaries: name them with -R)
# on lavapipe with the validation layer, as ctest always does. Exits with ctest's status: any
# sanitizer report fails its test. CI (scripts/test.sh with CI=true) runs `address`.
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${1:-address}
shift || true
case "$kind" in
  address) dir=build-asan targets=() ;;
  thread) dir=build-tsan targets=(--target concurrency_test) ;;
  *) echo "sanitize: unknown kind '$kind' (address or thread)" >&2; exit 2 ;;
esac
[[ "$kind" == thread && $# -eq 0 ]] && set -- -R '^concurrency_test$'

scripts/setup.sh
if [[ "$kind" == address ]]; then
  scripts/configure_asan.sh  # clang, shared with scripts/fuzz.sh
else
  # Debug at -O1: assertions on, and the CPU references fast enough for the whole suite; -g1
  # (line tables: file and line in reports) compiles about 30% faster than -g. No benchmarks
  # (not tests); warnings stay warnings (sanitizer builds add GCC false positives).
  echo "sanitize: configuring $dir/ (MEGANEURA_SANITIZE=thread)"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DMEGANEURA_SANITIZE=thread \
    -DMEGANEURA_BUILD_BENCH=OFF -DMEGANEURA_WERROR=OFF >/dev/null
fi
cmake --build "$dir" "${targets[@]}" -j "$(nproc)"
echo "sanitize: ctest --test-dir $dir --output-on-failure -j $(nproc) $*"
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" "$@"
