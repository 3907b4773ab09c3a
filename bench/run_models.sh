#!/usr/bin/env bash
# The model benchmark on the GPU machine: meganeura-bench-model, then bench/model_torch.py (one
# process per PyTorch variant), on one model directory, then bench/model_table.py. Through the
# device tool, in the repo root there, carrying .gl and the GPU build (build-gpu/bench/
# meganeura-bench-model; MEGANEURA_BUILD_DIR names another folder):
#   bash bench/run_models.sh [--model DIR] [--name NAME] [--modes inference,decode,train]
#        [--variants eager,compile,cudagraphs] [--batch 1] [--seq 128] [--runs 30] [--warmup 5]
#        [--skip-meganeura] [--skip-torch]
# --model defaults to /tmp/smol, made with random SmolLM2-135M weights (bench/make_random_smollm2.py,
# seed 0: the same weights on every machine) when it has no config.json.
# Writes $OUT/models.jsonl (one JSON line per implementation and mode), $OUT/models.md,
# $OUT/models.svg and a copy of the model's config.json, and prints the table last.
#
# A device call has 10 minutes and torch.compile takes minutes per mode, so split the variants
# over calls and join their files afterwards:
#   bash bench/run_models.sh --variants eager
#   bash bench/run_models.sh --skip-meganeura --variants cudagraphs
#   bash bench/run_models.sh --skip-meganeura --variants compile
#   python3 bench/model_table.py call1/models.jsonl call2/models.jsonl call3/models.jsonl \
#     --config call1/config.json --md models.md --svg models.svg
# Compile times are cold: every program gets an empty kernel / inductor cache.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh

model=/tmp/smol name=smollm2-135m modes=inference,decode,train variants=eager,compile,cudagraphs
common=() ours=1 theirs=1
while (($#)); do
  case $1 in
    --model) model=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --batch | --seq | --runs | --warmup) common+=("$1" "$2"); shift 2 ;;
    --skip-meganeura) ours=0; shift ;;
    --skip-torch) theirs=0; shift ;;
    *) echo "run_models: unknown option '$1' (see the comment atop bench/run_models.sh)" >&2; exit 2 ;;
  esac
done
jsonl=$out/models.jsonl
: >"$jsonl"

if [[ ! -f $model/config.json ]]; then
  python3 bench/make_random_smollm2.py --out "$model" >&2 || { echo "run_models: could not make $model" >&2; exit 1; }
fi

cp "$model/config.json" "$out/config.json"  # for joining the calls' files elsewhere

status=0
json_lines() { grep --line-buffered '^{' | tee -a "$jsonl"; }
if ((ours)); then
  cache=$(mktemp -d)
  MEGANEURA_CACHE_DIR=$cache __GL_SHADER_DISK_CACHE_PATH=$cache \
    "$build/bench/meganeura-bench-model" --model "$model" --name "$name" --modes "$modes" "${common[@]}" | json_lines
  ((PIPESTATUS[0] == 0)) || status=1
fi
if ((theirs)); then
  # One process per variant: a crash or a hung compile costs that variant only.
  for variant in ${variants//,/ }; do
    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) timeout "${TORCH_TIMEOUT_S:-540}" python3 bench/model_torch.py \
      --model "$model" --name "$name" --modes "$modes" --variants "$variant" "${common[@]}" | json_lines
    rc=${PIPESTATUS[0]}
    ((rc == 0)) && continue
    status=1
    why="model_torch.py exited with status $rc before this mode (see its stderr)"
    ((rc == 124)) && why="model_torch.py timed out after ${TORCH_TIMEOUT_S:-540} s (TORCH_TIMEOUT_S)"
    for mode in ${modes//,/ }; do  # a line for each mode the process never reported (killed, crashed)
      grep "\"impl\": \"torch-$variant\"" "$jsonl" | grep -q "\"mode\": \"$mode\"" ||
        echo "{\"impl\": \"torch-$variant\", \"model\": \"$name\", \"mode\": \"$mode\", \"error\": \"$why\"}" |
        tee -a "$jsonl"
    done
  done
fi

echo
python3 bench/model_table.py "$jsonl" --config "$out/config.json" --md "$out/models.md" --svg "$out/models.svg"
exit $status
