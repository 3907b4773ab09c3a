# Sourced by the GPU-machine drivers (run_gpu.sh, run_models.sh) from the repository root: sets
# `build` (MEGANEURA_BUILD_DIR, default build-gpu) and `out` ($OUT, default out), and points
# Vulkan at the NVIDIA driver where there is one.
build=${MEGANEURA_BUILD_DIR:-build-gpu}
out=${OUT:-out}
mkdir -p "$out"

# vk-env.sh unpacks the Vulkan loader into / and points it at the NVIDIA driver: only there.
if [[ -d /usr/local/nvidia ]]; then
  source .gl/vk-env.sh || { echo "$0: carry .gl (bench/prepare_vulkan.sh fills it)" >&2; exit 1; }
else
  echo "$0: no NVIDIA driver here; using the system's Vulkan drivers" >&2
fi
# Shared libraries the GPU machine lacks (libbenchmark.so.1debian, ...) go in $build/lib.
export LD_LIBRARY_PATH="$PWD/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
