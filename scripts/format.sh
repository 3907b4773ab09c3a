#!/usr/bin/env bash
# Formats every tracked C++ file with .clang-format (Debian's clang-format 14), or with --check
# only reports the files that differ and exits 1 if any does (CI runs that).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
if [[ "${1:-}" == --check ]]; then
  bad=()
  for f in "${files[@]}"; do clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f"); done
  ((${#bad[@]} == 0)) && { echo "format: ${#files[@]} files as .clang-format says"; exit 0; }
  printf 'format: not formatted: %s\n' "${bad[@]}" >&2
  echo "format: run scripts/format.sh" >&2
  exit 1
fi
clang-format -i "${files[@]}"
