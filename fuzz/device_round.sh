#!/usr/bin/env bash
# One round of fuzzing on the GPU machine's 16 CPUs (docs/reliability.md#fuzzing): every target
# at once, SECONDS each, from the committed seeds and the corpus of earlier rounds
# (.gpu/fzc/corpus.tgz); writes the new corpus, libFuzzer's final stats and any crash to $OUT.
# Carry .gl and .gpu; .gpu/fz.tar.xz holds fz/fuzz_* (build-asan's fuzz targets, debug info
# stripped) and fz/lib/ (the Debian libraries they link that the machine lacks: ldd, less
# glibc's own). Run from the repository root: bash fuzz/device_round.sh 530
set -uo pipefail
secs=${1:-540}
source .gl/vk-env.sh 2>/dev/null
export MEGANEURA_VALIDATION=0
tar xJf .gpu/fz.tar.xz -C /tmp
export LD_LIBRARY_PATH=/tmp/fz/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp"
rm -rf /tmp/crashes /tmp/corpus; mkdir -p /tmp/corpus /tmp/crashes
[[ -f .gpu/fzc/corpus.tgz ]] && tar xzf .gpu/fzc/corpus.tgz -C /tmp
nproc
for t in safetensors safetensors_index llama_config tokenizer tokenizer_text idx hub_metadata session_load; do
  mkdir -p /tmp/corpus/$t /tmp/crashes/$t
  dict=(); [[ -f fuzz/dict/$t.dict ]] && dict=(-dict=fuzz/dict/$t.dict)
  /tmp/fz/fuzz_$t /tmp/corpus/$t fuzz/corpus/$t "${dict[@]}" -max_total_time=$secs -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix=/tmp/crashes/$t/ > /tmp/log_$t 2>&1 &
done
wait
for t in safetensors safetensors_index llama_config tokenizer tokenizer_text idx hub_metadata session_load; do
  execs=$(grep -a "stat::number_of_executed_units" /tmp/log_$t | awk '{print $2}')
  crashes=$(ls /tmp/crashes/$t | wc -l)
  echo "$t execs=${execs:-?} corpus=$(ls /tmp/corpus/$t | wc -l) crashes=$crashes"
  [[ -z "$execs" || $crashes -gt 0 ]] && tail -n 30 /tmp/log_$t
done | tee $OUT/stats.txt
tar czf $OUT/corpus.tgz -C /tmp corpus
tar czf $OUT/crashes.tgz -C /tmp crashes
