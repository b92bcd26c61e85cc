#!/bin/bash
# long.sh OUT PAIRS A B: W4 (2 threads, relaxed, 2M keys x 1 KiB, the
# default 256 MiB cache, 40 s measured) with alternated pairs of
# $BIN/kvA and $BIN/kvB, seeds SEED0.. (default 71), each run's stderr
# (with KVBENCH_BWKV_STATS=1 and KVBENCH_BWKV_EVENTS=1: every checkpoint
# and stall with its time) kept in OUT-V-SEED.txt, its row in OUT-V.csv.
OUT=$1; N=$2; A=$3; B=$4; S0=${SEED0:-71}; BIN=${BIN:-.}
for i in $(seq 0 $((N-1))); do
  s=$((S0+i))
  if [ $((i%2)) = 0 ]; then ord="$A $B"; else ord="$B $A"; fi
  for v in $ord; do
    d=$(mktemp -d)
    KVBENCH_BWKV_STATS=1 KVBENCH_BWKV_EVENTS=1 "$BIN/kv$v" run --engine bwkv --workload W4 --threads 2 \
      --key-size 32 --value-size 1024 --prefill-keys 2000000 --warmup-secs 2 --measure-secs 40 \
      --durability relaxed --path "$d/db" --seed "$s" --progress=false \
      --result-file "${OUT}-$v.csv" > "${OUT}-$v-$s.txt" 2>&1
    rm -rf "$d"
  done
done
