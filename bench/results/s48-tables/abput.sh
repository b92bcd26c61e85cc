#!/bin/bash
# abput.sh OUT PAIRS A B: W4 with engine bwkv-put (blind DB.Put updates),
# 2 threads, relaxed, PF keys (default 2M), 10 s, alternated pairs of
# $BIN/kvA and $BIN/kvB, seeds SEED0..
OUT=$1; N=$2; A=$3; B=$4; S0=${SEED0:-1}; BIN=${BIN:-.}
for i in $(seq 0 $((N-1))); do
  s=$((S0+i))
  if [ $((i%2)) = 0 ]; then ord="$A $B"; else ord="$B $A"; fi
  for v in $ord; do
    d=$(mktemp -d)
    "$BIN/kv$v" run --engine bwkv-put --workload W4 --threads 2 --key-size 32 --value-size 1024 \
      --prefill-keys "${PF:-2000000}" --warmup-secs 2 --measure-secs "${DUR:-10}" --durability relaxed \
      --path "$d/db" --seed "$s" --progress=false --result-file "${OUT}-$v.csv" >/dev/null 2>&1
    rm -rf "$d"
  done
done
