#!/usr/bin/env bash
# Fetches a newer glslang and SPIRV-Tools than Debian 12's (glslang 12.0, which cannot compile
# GL_NV_cooperative_matrix2's workgroup-scope matrices and tensor loads) into .tools/glslang:
# Debian 13's glslang-tools and spirv-tools packages, with the C and C++ runtimes they were built
# against, downloaded by apt (signatures checked against debian-archive-keyring) and unpacked
# there, not installed: the wrappers run them through their own dynamic loader, so the system's
# libraries are untouched. The kernels that need it are optional (cmake/EmbedKernels.cmake):
# without the network they are skipped and the rest builds as before. Idempotent; run by
# scripts/setup.sh; no root needed.
set -euo pipefail
cd "$(dirname "$0")/.."

dest=.tools/glslang
if [[ -x $dest/glslangValidator ]] && "$dest/glslangValidator" --version >/dev/null 2>&1; then
  echo "fetch_glslang: $dest present"
  exit 0
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if [[ ! -r $keyring ]]; then
  echo "fetch_glslang: no $keyring (package debian-archive-keyring); the cooperative-matrix-2 kernels are skipped" >&2
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work" "$dest.partial"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb [signed-by=$keyring] http://deb.debian.org/debian trixie main" >"$work/sources.list"
apt_options=(-qq -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=-
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Dir::State::Status=/dev/null
  -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")
packages=(glslang-tools spirv-tools libc6 libstdc++6 libgcc-s1)
echo "fetch_glslang: downloading Debian 13's ${packages[*]} into $dest"
if ! apt-get "${apt_options[@]}" update ||
  ! (cd "$work/debs" && apt-get "${apt_options[@]}" download "${packages[@]}"); then
  echo "fetch_glslang: could not download them; the cooperative-matrix-2 kernels are skipped" >&2
  exit 0
fi

rm -rf "$dest.partial"
mkdir -p "$dest.partial/root"
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$dest.partial/root"; done
for tool in glslangValidator spirv-val spirv-dis; do
  cat >"$dest.partial/$tool" <<WRAP
#!/bin/sh
# $tool from Debian 13, through its own loader and libraries (scripts/fetch_glslang.sh).
root="\$(dirname "\$(readlink -f "\$0")")/root"
exec "\$root/usr/lib64/ld-linux-x86-64.so.2" --library-path "\$root/usr/lib/x86_64-linux-gnu" "\$root/usr/bin/$tool" "\$@"
WRAP
  chmod +x "$dest.partial/$tool"
done
version=$("$dest.partial/glslangValidator" --version | head -1)
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "fetch_glslang: $version in $dest"
