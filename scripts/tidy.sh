#!/usr/bin/env bash
# clang-tidy over src/ with the checks of .clang-tidy (docs/development.md, Conventions), using
# build/'s compile commands (scripts/build.sh makes them). Exits non-zero on any finding.
#   scripts/tidy.sh [FILE...]     (default: every src/**/*.cpp)
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f build/compile_commands.json ]] || scripts/build.sh
files=("$@")
((${#files[@]})) || mapfile -t files < <(find src -name '*.cpp' | sort)
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p build --quiet 2>&1 |
  grep -v '^[0-9]* warnings\? generated' | tee /tmp/meganeura-tidy.log
! grep -q 'error:\|warning:' /tmp/meganeura-tidy.log
