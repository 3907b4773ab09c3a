#!/usr/bin/env bash
# The main job: set up a fresh Debian 12 machine (as root), build meganeura into build/ and run
# examples/hello, which builds a small graph, runs one step on the default Vulkan device and
# prints the results. Without a GPU, Vulkan runs on Mesa's lavapipe (CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build_type=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
echo "run: configuring build/ ($build_type)"
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
echo "run: building examples/hello"
cmake --build build --target hello -j "$(nproc)"
echo "run: build/examples/hello"
exec build/examples/hello "$@"
