#!/usr/bin/env bash
# Runs the per-op benchmark on the GPU machine. Through the device tool, in the repo root there,
# with `.gl` and the GPU build (default build-gpu/, built on the Debian machine) carried:
#   bash bench/run_gpu.sh [extra benchmark flags, e.g. --benchmark_filter=matmul]
# Writes $OUT/ops.json (Google Benchmark JSON) and prints a markdown table last.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh

cli=$build/tools/meganeura
[[ -x $cli ]] || cli=$build/meganeura
"$cli" info || { echo "run_gpu: '$cli info' failed: no Vulkan device?" >&2; exit 1; }

"$build/bench/meganeura-bench-ops" --benchmark_format=console \
  --benchmark_out="$out/ops.json" --benchmark_out_format=json "$@"
status=$?

# PyTorch on the same GPU in the same run, where it is installed.
torch_json=
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  quick=; [[ " $* " == *" --quick "* ]] && quick=--quick
  python3 bench/ops_torch.py "$out/torch.json" $quick && torch_json="$out/torch.json"
fi

echo
python3 bench/summarize.py "$out/ops.json" $torch_json
exit $status
