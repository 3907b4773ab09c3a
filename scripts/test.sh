#!/usr/bin/env bash
# All tests: set up a fresh Debian 12 machine (as root), build everything into build/ and run
# the test suite with ctest. Exits with ctest's status. Extra arguments go to ctest
# (for example `scripts/test.sh -R matmul`).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build_type=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
echo "test: configuring build/ ($build_type)"
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
echo "test: building everything"
cmake --build build -j "$(nproc)"
echo "test: ctest --test-dir build --output-on-failure $*"
status=0
ctest --test-dir build --output-on-failure "$@" || status=$?
exit $status
