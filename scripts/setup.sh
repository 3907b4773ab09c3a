#!/usr/bin/env bash
# Installs what meganeura needs to build and test on Debian 12: compiler, CMake, the Vulkan
# loader and headers, the validation layer, Mesa's lavapipe (a CPU Vulkan driver, so the tests
# run without a GPU), glslang, shaderc (compiles generated kernels at session build), PCRE2 (the
# tokenizer's pre-tokenizer patterns), libcurl and OpenSSL (the Hugging Face Hub client),
# GoogleTest and Google Benchmark; clang and its runtimes for the fuzz targets (scripts/fuzz.sh);
# clang-format and clang-tidy (scripts/format.sh, scripts/tidy.sh).
# Idempotent: packages already installed are skipped, and when nothing is missing it neither
# touches the network nor needs root. Then scripts/fetch_glslang.sh: a newer glslang for the
# kernels that need one, unpacked into .tools/ (once; no root).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake g++ pkg-config
  libvulkan-dev vulkan-validationlayers mesa-vulkan-drivers vulkan-tools
  glslang-tools spirv-tools libshaderc-dev glslang-dev
  libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev nlohmann-json3-dev libpcre2-dev
  libcurl4-openssl-dev libssl-dev
  dataset-fashion-mnist
  clang libclang-rt-dev  # scripts/fuzz.sh: libFuzzer, ASan and UBSan (fuzz/)
  clang-format clang-tidy  # scripts/format.sh, scripts/tidy.sh (.clang-format, .clang-tidy)
)

install_packages() {
  missing=()
  for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
  done

  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "setup: all ${#packages[@]} packages present"
    return
  fi

  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "setup: these packages are missing: ${missing[*]}" >&2
    echo "setup: run this script as root (or install sudo), or install them yourself:" >&2
    echo "  apt-get install ${missing[*]}" >&2
    exit 1
  fi

  echo "setup: installing ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  echo "setup: done"
}

install_packages
scripts/fetch_glslang.sh
