#!/usr/bin/env bash
# Shared by run.sh and test.sh: set up a fresh Debian 12 machine (as root, idempotent), then
# configure and build build/. Arguments are cmake --build targets (none: everything). With
# CI=true, compiler warnings are errors (MEGANEURA_WERROR).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build_type=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
werror=OFF
[[ "${CI:-}" == true ]] && werror=ON  # CI: compiler warnings are errors
echo "build: configuring build/ ($build_type, warnings as errors: $werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" -DMEGANEURA_WERROR="$werror" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
echo "build: building ${*:-everything}"
cmake --build build "${targets[@]}" -j "$(nproc)"
