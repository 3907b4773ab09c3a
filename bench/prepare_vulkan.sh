#!/usr/bin/env bash
# For a GPU machine that has the NVIDIA driver (under /usr/local/nvidia) but no Vulkan loader and
# no network. Run once, in the repository root of the Debian 12 machine that builds: fills the
# ignored .gl/ with the loader's Debian packages and .gl/vk-env.sh. Carry .gl to the GPU machine,
# where bench/gpu_env.sh sources vk-env.sh: it unpacks the packages and points the loader at the
# NVIDIA driver's manifest.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gl
(cd .gl && apt-get download libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
# The loader and the validation layer come from Debian testing, so that the GPU tests can run with
# MEGANEURA_VALIDATION=1 there (the tensor-core kernels run nowhere else: an unbound descriptor or
# a missing barrier of theirs shows only on the GPU machine). Debian 12's layer (1.3.239) predates
# the extensions the driver offers (VK_KHR_cooperative_matrix, VK_KHR_shader_bfloat16) and reports
# their structures as errors; Debian 12's loader asks a newer layer for instance functions as
# device ones (a message of its own). The GPU machine (Ubuntu 24.04) has the C library and C++
# runtime they need.
testing_package() {  # name: the .deb of Debian testing's current version, into .gl
  local archive=http://deb.debian.org/debian file
  file=$(curl -fsSL "$archive/dists/testing/main/binary-amd64/Packages.xz" | xz -dc |
    awk -v p="$1" '$1 == "Package:" { found = ($2 == p) } found && $1 == "Filename:" { print $2; found = 0 }')
  [[ -n $file ]] || { echo "$0: $1 is not in Debian testing's index" >&2; return 1; }
  rm -f .gl/"$1"_*.deb
  curl -fsSL -o ".gl/$(basename "$file")" "$archive/$file"
}
testing_package libvulkan1
testing_package vulkan-validationlayers
cat >.gl/vk-env.sh <<'END'
# Sourced on the GPU machine from the repository root (bench/gpu_env.sh does): installs the
# Vulkan loader (and the validation layer) from .gl/*.deb and points it at the NVIDIA driver.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
END
ls .gl
