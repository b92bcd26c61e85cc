#!/bin/bash
# ab.sh OUT WL THREADS DUR PAIRS A B: alternated pairs of two kvbench
# binaries, $BIN/kvA and $BIN/kvB (BIN defaults to the current directory),
# order flipped every pair, seeds SEED0.. (default 1), prefill PF (default
# 200000), value size VS (default 1024), one fresh temporary directory per
# run; each run appends a row to OUT-A.csv or OUT-B.csv.
OUT=$1; WL=$2; TH=$3; DUR=$4; N=$5; A=$6; B=$7; S0=${SEED0:-1}; BIN=${BIN:-.}
for i in $(seq 0 $((N-1))); do
  s=$((S0+i))
  if [ $((i%2)) = 0 ]; then ord="$A $B"; else ord="$B $A"; fi
  for v in $ord; do
    d=$(mktemp -d)
    "$BIN/kv$v" run --engine bwkv --workload "$WL" --threads "$TH" --key-size 32 --value-size "${VS:-1024}" \
      --prefill-keys "${PF:-200000}" --warmup-secs 2 --measure-secs 10 --durability "$DUR" \
      --path "$d/db" --seed "$s" --progress=false --result-file "${OUT}-$v.csv" >/dev/null 2>&1
    rm -rf "$d"
  done
done
