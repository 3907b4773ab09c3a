#!/usr/bin/env bash
# clang-tidy over src/ with the checks of .clang-tidy (docs/development.md, Conventions), using
# build/'s compile commands (scripts/build.sh makes them). Exits non-zero on any finding.
#   scripts/tidy.sh [FILE...]     (default: every src/**/*.cpp)
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f build/compile_commands.json ]] || scripts/build.sh
files=("$@")
((${#files[@]})) || mapfile -t files < <(find src -name '*.cpp' | sort)
log=$(mktemp)
# clang-tidy exits non-zero on a finding; the findings themselves decide the status below.
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p build --quiet >"$log" 2>&1 || true
grep -v '^[0-9]* warnings\? generated' "$log" || true
if grep -q 'error:\|warning:' "$log"; then
  echo "tidy: findings above (.clang-tidy)" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean"
