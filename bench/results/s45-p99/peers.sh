#!/bin/bash
# peers.sh OUT WL THREADS DUR PAIRS [extra kvbench run flags...]: alternated
# pairs of bwkv and Pebble from one kvbench binary ($KV, default ./kvbench),
# order flipped every pair, seeds SEED0.. (default 1), prefill PF (default
# 200000), one fresh temporary directory per run; each run appends a row to
# OUT-bwkv.csv or OUT-pebble.csv.
OUT=$1; WL=$2; TH=$3; DUR=$4; N=$5; shift 5
S0=${SEED0:-1}; KV=${KV:-./kvbench}
for i in $(seq 0 $((N-1))); do
  s=$((S0+i))
  if [ $((i%2)) = 0 ]; then ord="bwkv pebble"; else ord="pebble bwkv"; fi
  for e in $ord; do
    d=$(mktemp -d)
    "$KV" run --engine "$e" --workload "$WL" --threads "$TH" --key-size 32 --value-size 1024 \
      --prefill-keys "${PF:-200000}" --warmup-secs 2 --measure-secs 10 --durability "$DUR" \
      --path "$d/db" --seed "$s" --progress=false --result-file "${OUT}-$e.csv" "$@" >/dev/null 2>&1
    rm -rf "$d"
  done
done
