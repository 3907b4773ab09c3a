#!/usr/bin/env bash
# Shared by run.sh and test.sh: set up a fresh Debian 12 machine (as root, idempotent), then
# configure and build build/. Arguments are cmake --build targets (none: everything).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build_type=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
echo "build: configuring build/ ($build_type)"
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
echo "build: building ${*:-everything}"
cmake --build build "${targets[@]}" -j "$(nproc)"
