#!/usr/bin/env bash
# All tests: set up a fresh Debian 12 machine (as root), build everything into build/ and run
# the test suite with ctest. Exits with ctest's status. Extra arguments go to ctest
# (for example `scripts/test.sh -R matmul`).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh
echo "test: ctest --test-dir build --output-on-failure $*"
exec ctest --test-dir build --output-on-failure "$@"
