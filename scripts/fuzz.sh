#!/usr/bin/env bash
# Fuzzes the file readers with libFuzzer (fuzz/; docs/reliability.md#fuzzing): builds the targets
# in build-asan/ (scripts/configure_asan.sh: clang, ASan + UBSan, coverage), then runs each
# target — or the ones named — for SECONDS (default 60) each, starting from its committed seeds (fuzz/corpus/<target>/) and its dictionary
# (fuzz/dict/<target>.dict). New inputs go to out/fuzz/<target>/corpus/, crashes to
# out/fuzz/<target>/crashes/, libFuzzer's output to out/fuzz/<target>/log (out/ is not tracked).
# Prints executions and corpus size per target; exits 1 if any target found a crash.
#   scripts/fuzz.sh 600                 # every target, 10 minutes each
#   scripts/fuzz.sh 30 idx tokenizer    # two targets, 30 s each
# Reproduce a crash: build-asan/fuzz/fuzz_<target> out/fuzz/<target>/crashes/crash-<sha1>
set -euo pipefail
cd "$(dirname "$0")/.."

all=(safetensors safetensors_index llama_config tokenizer tokenizer_text idx hub_metadata session_load)
seconds=${1:-60}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS per target] [TARGET...] (targets: ${all[*]})" >&2; exit 2; }
[[ $# -gt 0 ]] && shift
targets=("${all[@]}")
[[ $# -gt 0 ]] && targets=("$@")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz: no target \"$t\" (targets: ${all[*]})" >&2; exit 2; }
done

scripts/setup.sh
scripts/configure_asan.sh  # the build scripts/sanitize.sh address runs the suite in
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "fuzz_$t"); done
echo "fuzz: building ${targets[*]}"
cmake --build build-asan "${build_targets[@]}" -j "$(nproc)" >build-asan/fuzz-build.log 2>&1 ||
  { tail -n 40 build-asan/fuzz-build.log >&2; echo "fuzz: the build failed (build-asan/fuzz-build.log)" >&2; exit 1; }

# Leaks are findings, except Mesa's (lavapipe, under fuzz_session_load): fuzz/lsan.supp says why.
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# One line per target at the end: executions, corpus size, crashes.
summary=()
failed=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  dir=out/fuzz/$t
  mkdir -p "$dir/corpus" "$dir/crashes"
  dict=()
  [[ -f fuzz/dict/$t.dict ]] && dict=(-dict="fuzz/dict/$t.dict")
  echo "fuzz: [$((i + 1))/${#targets[@]}] $t for ${seconds} s (log: $dir/log)"
  # The first folder receives new inputs; the committed seeds are only read. A 10 s input is a hang.
  status=0
  build-asan/fuzz/fuzz_"$t" "$dir/corpus" "fuzz/corpus/$t" "${dict[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/crashes/" >"$dir/log" 2>&1 &
  pid=$!
  # Progress: libFuzzer's latest status line every 10 s.
  for ((tick = 1; ; ++tick)); do
    sleep 1
    kill -0 "$pid" 2>/dev/null || break
    ((tick % 10 == 0)) || continue
    line=$(grep -a -E '^#[0-9]+' "$dir/log" | tail -n 1 || true)
    [[ -n "$line" ]] && echo "fuzz:   $t: $line"
  done
  wait "$pid" || status=$?
  execs=$(grep -a -o -E 'stat::number_of_executed_units: [0-9]+' "$dir/log" | grep -o -E '[0-9]+$' || echo "?")
  # libFuzzer's corpus in use at the end (inputs/bytes); the folder also keeps inputs it dropped.
  corpus=$(grep -a -o -E 'corp: [0-9]+/[0-9]+[a-zA-Z]*' "$dir/log" | tail -n 1 | cut -d' ' -f2)
  files=$(find "$dir/corpus" -type f | wc -l)
  if [[ $status -ne 0 ]]; then
    failed=1
    echo "fuzz: $t FAILED (exit $status); the end of $dir/log:" >&2
    tail -n 25 "$dir/log" >&2
  fi
  summary+=("$(printf '%-18s %10s executions  corpus %-12s (%5d files saved)  %s' "$t" "$execs" "${corpus:-?}" "$files" \
    "$([[ $status -eq 0 ]] && echo ok || echo "FAILED: see $dir/crashes/")")")
done
echo "fuzz: ${seconds} s per target:"
printf '  %s\n' "${summary[@]}"
exit "$failed"
