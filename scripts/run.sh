#!/usr/bin/env bash
# The main job: set up a fresh Debian 12 machine (as root), build meganeura into build/ and run
# examples/hello, which builds a small graph, runs one step on the default Vulkan device and
# prints the results. Without a GPU, Vulkan runs on Mesa's lavapipe (CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh hello
echo "run: build/examples/hello"
exec build/examples/hello "$@"
