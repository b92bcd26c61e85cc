#!/bin/bash
# like ../s37-whatif/ab.sh, with KVBENCH_BWKV_STATS=1 and the events line kept per run
OUT=$1; WL=$2; TH=$3; DUR=$4; N=$5; A=$6; B=$7; S0=${SEED0:-1}; BIN=${BIN:-.}
for i in $(seq 0 $((N-1))); do
  s=$((S0+i))
  if [ $((i%2)) = 0 ]; then ord="$A $B"; else ord="$B $A"; fi
  for v in $ord; do
    d=$(mktemp -d)
    KVBENCH_BWKV_STATS=1 "$BIN/kv$v" run --engine bwkv --workload "$WL" --threads "$TH" --key-size 32 --value-size "${VS:-1024}" \
      --prefill-keys "${PF:-200000}" --warmup-secs 2 --measure-secs 10 --durability "$DUR" \
      --path "$d/db" --seed "$s" --progress=false --result-file "${OUT}-$v.csv" 2>&1 >/dev/null | grep "bwkv events" | sed "s/^/$v seed=$s /" >> "${OUT}-events.txt"
    rm -rf "$d"
  done
done
