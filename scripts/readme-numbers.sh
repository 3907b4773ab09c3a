#!/usr/bin/env bash
# Runs the quickstart (3 epochs) on lavapipe and writes what it measured — test accuracy after
# each epoch, the program's wall time — into README.md between <!-- quickstart-numbers ... -->
# and <!-- /quickstart-numbers -->. With --check it writes nothing and exits 1 if the accuracies
# differ from the README's (on lavapipe they are the same on every run; the time is not checked).
# 2-4 minutes on 2 cores (run it on an idle machine: the time is written too): not part of ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
[[ "${1:-}" == --check ]] && check=1
scripts/build.sh fashion_mnist
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "readme-numbers: MEGANEURA_DEVICE=llvmpipe build/examples/fashion_mnist"
MEGANEURA_DEVICE=llvmpipe build/examples/fashion_mnist | tee "$log"

device=$(head -1 "$log" | sed 's/^[0-9]*: //; s/ |.*//')  # the banner: "0: llvmpipe (...) | Vulkan ..."
seconds=$(sed -n 's/.*, \([0-9.]*\) s in all.*/\1/p' "$log")
mapfile -t acc < <(awk -F, 'NR > 1 { printf "%.2f%%\n", 100 * $4 }' out/fashion.csv)
steps=$(($(wc -l <out/fashion-steps.csv) - 1))
accuracies="${acc[0]}, ${acc[1]} and **${acc[2]}**"
block="On lavapipe ($device, $(nproc) cores): test accuracy
$accuracies after epochs 1–3, in **$seconds s** for the whole program
(data loading, $steps training steps, three evaluations)."

if ((check)); then
  if grep -qF "$accuracies after" README.md; then
    echo "readme-numbers: the README's accuracies are today's ($accuracies)"
  else
    echo "readme-numbers: the README's accuracies differ from today's ($accuracies): run scripts/readme-numbers.sh" >&2
    exit 1
  fi
  exit 0
fi

BLOCK="$block" awk '
  /^<!-- quickstart-numbers/ { print; print ENVIRON["BLOCK"]; skip = 1; next }
  /^<!-- \/quickstart-numbers -->/ { skip = 0 }
  !skip' README.md >README.md.new
mv README.md.new README.md
echo "readme-numbers: README.md updated:"
echo "$block"
