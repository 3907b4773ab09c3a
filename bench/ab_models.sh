#!/usr/bin/env bash
# A/B timing of several meganeura-bench-model binaries on one GPU machine, in one device call:
# each round runs every binary once (interleaved, so that clock and thermal drift fall on all of
# them alike), and the table printed last gives each binary's median over rounds of its
# per-round median wall ms. Kernel changes are measured this way against the binary before them.
#   bash bench/ab_models.sh [--rounds 3] [--modes inference,train] [--runs 30] BIN...
# Binaries are paths relative to the repo root (carried with the device call, with .gl). Writes
# $OUT/ab.jsonl (every JSON line, with "binary" added). The vision models (meganeura-bench-vision
# binaries) with --vision and that bench's own arguments instead of a model folder:
#   bash bench/ab_models.sh --vision "--model resnet50 --batch 4 --size 224" BIN...
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh

rounds=3 modes=inference,train runs=30 model=/tmp/smol vision="" bins=()
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --vision) vision=$2; shift 2 ;;
    -*) echo "ab_models: unknown option '$1' (see the comment atop bench/ab_models.sh)" >&2; exit 2 ;;
    *) bins+=("$1"); shift ;;
  esac
done
((${#bins[@]})) || { echo "ab_models: name the binaries to compare" >&2; exit 2; }
# What each binary is given besides --modes and --runs: the SmolLM2 folder, or --vision's words.
if [[ -n $vision ]]; then
  read -r -a target <<<"$vision"
else
  # Only the default folder is made here (SmolLM2-135M's shape): another name that is missing is
  # an error, not a silent 135M model under, say, /tmp/smol17.
  if [[ ! -f $model/config.json ]]; then
    [[ $model == /tmp/smol ]] || { echo "ab_models: $model has no config.json (bench/make_random_smollm2.py makes one)" >&2; exit 2; }
    python3 bench/make_random_smollm2.py --out "$model" >&2 || exit 1
  fi
  target=(--model "$model")
fi

jsonl=$out/ab.jsonl
: >"$jsonl"
for ((r = 0; r < rounds; ++r)); do
  for bin in "${bins[@]}"; do
    "$bin" "${target[@]}" --modes "$modes" --runs "$runs" 2>/dev/null | grep '^{' |
      python3 -c 'import json,sys
for line in sys.stdin:
    j = json.loads(line); j["binary"] = sys.argv[1]; print(json.dumps(j))' "$bin" >>"$jsonl"
  done
done
python3 - "$jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bins = list(dict.fromkeys(r["binary"] for r in rows))
modes = list(dict.fromkeys(r["mode"] for r in rows))
def wall(r):
    return r.get("wall_ms")
print("| binary | " + " | ".join(f"{m} wall ms (rounds)" for m in modes) + " |")
print("|---|" + "---|" * len(modes))
for b in bins:
    cells = []
    for m in modes:
        v = [wall(r) for r in rows if r["binary"] == b and r["mode"] == m and wall(r) is not None]
        cells.append(f"{statistics.median(v):.3f} ({' '.join(f'{x:.2f}' for x in v)})" if v else "-")
    print(f"| {b} | " + " | ".join(cells) + " |")
PY
