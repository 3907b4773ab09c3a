#!/usr/bin/env bash
# All tests: set up a fresh Debian 12 machine (as root), build everything into build/ and run
# the test suite with ctest. Exits with ctest's status. Extra arguments go to ctest
# (for example `scripts/test.sh -R matmul`). With CI=true, also compiles a Release build with
# warnings as errors, and runs each fuzz target for a few seconds.
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
if [[ "${CI:-}" == true ]]; then
  # Every reader's fuzz target for a few seconds from its committed seeds (the inputs that once
  # crashed included): a clang build of its own (build-fuzz/), about a minute of fuzzing.
  echo "test: CI: the fuzz targets, 7 s each (scripts/fuzz.sh)"
  scripts/fuzz.sh 7
fi
echo "test: ctest --test-dir build --output-on-failure $*"
exec ctest --test-dir build --output-on-failure "$@"
