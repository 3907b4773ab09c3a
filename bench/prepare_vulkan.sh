#!/usr/bin/env bash
# For a GPU machine that has the NVIDIA driver (under /usr/local/nvidia) but no Vulkan loader and
# no network. Run once, in the repository root of the Debian 12 machine that builds: fills the
# ignored .gl/ with the loader's Debian packages and .gl/vk-env.sh. Carry .gl to the GPU machine,
# where bench/gpu_env.sh sources vk-env.sh: it unpacks the packages and points the loader at the
# NVIDIA driver's manifest.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gl
# vulkan-validationlayers too, so that the GPU tests can run with MEGANEURA_VALIDATION=1 there (the
# tensor-core kernels run nowhere else: an unbound descriptor or a missing barrier of theirs shows
# only on the GPU machine).
(cd .gl && apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 vulkan-validationlayers)
cat >.gl/vk-env.sh <<'END'
# Sourced on the GPU machine from the repository root (bench/gpu_env.sh does): installs the
# Vulkan loader (and the validation layer) from .gl/*.deb and points it at the NVIDIA driver.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
END
ls .gl
