#!/usr/bin/env bash
# The tests that only the GPU machine can run (the tensor-core kernels: lavapipe has none), with
# the validation layer on as in CI. Through the device tool, in the repo root there, with `.gl`
# (bench/prepare_vulkan.sh: the loader and the layer) and the GPU build carried:
#   bash bench/gpu_tests.sh [extra gtest flags]
# Runs the tensor-core set at the default settings, then with K steps of 64 everywhere and with
# every product's operands staged before it; prints each run's summary and failures, and exits
# non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/gpu_env.sh  # sets build and out
source bench/gpu_env.sh

filter='Tiers/MatMulTiers.*:MatMulSplitK.*:MatMulProductSums.*:MatMulGlu.*:MatMulTierSwitches.*:MatMulGemv.*:MatMulCoop2.*'
filter+=':TensorCoreRange.*:AttentionPicks.*:AttentionKeySplits.*:Splits/AttentionKeySplits.*:Table/OpForward.*atmul*:Table/OpForward.*inear*:Table/OpForward.*ttention*'
status=0
run() {  # label, then environment assignments
  local label=$1 log="$out/gpu_tests_$1.log"
  shift
  env MEGANEURA_VALIDATION=1 "$@" "$build/tests/op_forward_test" --gtest_filter="$filter" "${extra[@]}" >"$log" 2>&1
  local rc=$?
  ((rc == 0)) || status=1
  echo "== $label (rc $rc)"
  grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]|^\[  SKIPPED \] [0-9]+ test' "$log"
  grep -B2 -A8 'Failure' "$log" | head -30
}
extra=("$@")
run default
run k64 MEGANEURA_COOP_K_STEP=64
run staged MEGANEURA_COOP_STAGED=1
exit $status
