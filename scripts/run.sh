#!/usr/bin/env bash
# The main job: set up a fresh Debian 12 machine (as root), build meganeura into build/ and run
# the quickstart: a two-layer MLP trained on Fashion-MNIST (Debian's dataset-fashion-mnist),
# printing test accuracy each epoch and writing out/fashion.{svg,csv} and a checkpoint. Without
# a GPU, Vulkan runs on Mesa's lavapipe (CPU). Arguments go to the example (the epoch count).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh fashion_mnist
echo "run: build/examples/fashion_mnist $*"
exec build/examples/fashion_mnist "$@"
