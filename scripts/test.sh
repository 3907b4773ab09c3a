#!/usr/bin/env bash
# All tests: set up a fresh Debian 12 machine (as root), build everything into build/ and run
# the test suite with ctest. Exits with ctest's status. Extra arguments go to ctest
# (for example `scripts/test.sh -R matmul`). With CI=true, also compiles a Release build with
# warnings as errors, and runs the whole suite again under ASan + UBSan (scripts/sanitize.sh);
# then it exits 1 if either run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh
if [[ "${CI:-}" == true ]]; then
  # GCC's -O3 passes warn where the default build's -O2 does not: CI compiles Release as well,
  # warnings as errors (not run: the tests above the same code).
  echo "test: CI: a Release build, warnings as errors (build-ci-release/)"
  cmake -S . -B build-ci-release -DCMAKE_BUILD_TYPE=Release -DMEGANEURA_WERROR=ON >/dev/null
  cmake --build build-ci-release -j "$(nproc)"
fi
echo "test: ctest --test-dir build --output-on-failure $*"
if [[ "${CI:-}" != true ]]; then
  exec ctest --test-dir build --output-on-failure "$@"
fi
# CI: the same tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/), whatever
# the first run's outcome; the status says whether both passed.
status=0
ctest --test-dir build --output-on-failure "$@" || status=1
echo "test: CI: the whole suite under ASan + UBSan (scripts/sanitize.sh address)"
scripts/sanitize.sh address "$@" || status=1
exit "$status"
