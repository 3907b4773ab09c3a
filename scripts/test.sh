#!/usr/bin/env bash
# All tests: set up a fresh Debian 12 machine (as root), build everything into build/ and run
# the test suite with ctest. Exits with ctest's status. Extra arguments go to ctest
# (for example `scripts/test.sh -R matmul`).
# With CI=true (.ci/run): build/ is a Release build with warnings as errors (GCC's -O3 passes
# warn where the default -O2 does not), every C++ file must be as .clang-format says and src/ pass .clang-tidy, each fuzz target runs for a few seconds from its seeds,
# and the whole suite runs again under ASan + UBSan (scripts/sanitize.sh); every part runs
# whatever the others' outcome, and the status says whether all passed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${CI:-}" != true ]]; then
  scripts/build.sh
  echo "test: ctest --test-dir build --output-on-failure -j $(nproc) $*"
  exec ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
fi

started=$SECONDS
CMAKE_BUILD_TYPE=Release scripts/build.sh  # CI=true: warnings are errors
status=0
scripts/format.sh --check || status=1
scripts/tidy.sh || status=1  # .clang-tidy over src/, with the Release build's compile commands
# One test a core: lavapipe's own threads leave the cores idle part of the time.
echo "test: ctest --test-dir build --output-on-failure -j $(nproc) $*"
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@" || status=1
echo "test: CI: $((SECONDS - started)) s so far"
# Every reader's fuzz target for a few seconds from its committed seeds (the inputs that once
# crashed included), about a minute of fuzzing; then the suite under ASan + UBSan. Both build in
# build-asan/ (scripts/configure_asan.sh: one clang build, instrumented for both).
echo "test: CI: the fuzz targets, 7 s each (scripts/fuzz.sh)"
scripts/fuzz.sh 7 || status=1
echo "test: CI: $((SECONDS - started)) s so far"
echo "test: CI: the whole suite under ASan + UBSan (scripts/sanitize.sh address)"
scripts/sanitize.sh address "$@" || status=1
echo "test: CI: $((SECONDS - started)) s in all, status $status"
exit "$status"
