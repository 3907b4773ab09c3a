#!/usr/bin/env bash
# The vision benchmark on the GPU machine: meganeura-bench-vision, then bench/vision_torch.py (one
# process per PyTorch variant), then a table. Through the device tool, in the repo root there,
# carrying .gl and a GPU build (MEGANEURA_BUILD_DIR, default build-gpu):
#   bash bench/run_vision.sh [--model resnet50] [--batch 4] [--size 224] [--runs 30] [--warmup 5]
#        [--modes inference,train] [--variants eager,compile,cudagraphs] [--skip-meganeura] [--skip-torch]
# The diffusion UNet of the suite: --model sd_unet --batch 2 --size 32.
# Writes $OUT/vision-MODEL.jsonl and prints the table last: each row's median wall ms, GPU ms and
# compile seconds, and its ratio to the fastest PyTorch variant of the mode.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh

variants=eager,compile,cudagraphs common=() ours=1 theirs=1 model=resnet50
while (($#)); do
  case $1 in
    --variants) variants=$2; shift 2 ;;
    --model) model=$2; common+=("$1" "$2"); shift 2 ;;
    --batch | --size | --runs | --warmup | --modes) common+=("$1" "$2"); shift 2 ;;
    --skip-meganeura) ours=0; shift ;;
    --skip-torch) theirs=0; shift ;;
    *) echo "run_vision: unknown option '$1' (see the comment atop bench/run_vision.sh)" >&2; exit 2 ;;
  esac
done
jsonl=$out/vision-$model.jsonl
: >"$jsonl"
status=0
if ((ours)); then
  "$build/bench/meganeura-bench-vision" "${common[@]}" --breakdown 8 | grep --line-buffered '^{' | tee -a "$jsonl"
  ((PIPESTATUS[0] == 0)) || status=1
fi
if ((theirs)); then
  for variant in ${variants//,/ }; do
    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) timeout "${TORCH_TIMEOUT_S:-400}" python3 bench/vision_torch.py \
      "${common[@]}" --variants "$variant" | grep --line-buffered '^{' | tee -a "$jsonl"
    ((PIPESTATUS[0] == 0)) || status=1
  done
fi
echo
python3 - "$jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
best = {}
for r in rows:
    if r["impl"].startswith("torch") and "wall_ms" in r:
        best[r["mode"]] = min(best.get(r["mode"], 1e30), r["wall_ms"])
print("| model | mode | impl | wall ms | GPU ms | compile s | vs fastest PyTorch |")
print("|---|---|---|---:|---:|---:|---:|")
for r in rows:
    if "error" in r:
        print(f"| {r['model']} | {r['mode']} | {r['impl']} | error: {r['error'][:60]} | | | |")
        continue
    ratio = best.get(r["mode"], float("nan")) / r["wall_ms"]
    print(f"| {r['model']} b{r['batch']} {r['size']}² | {r['mode']} | {r['impl']} | {r['wall_ms']:.3f} | "
          f"{r['gpu_ms']:.3f} | {r['compile_s']:.2f} | {ratio:.2f}× |")
PY
exit $status
