#!/usr/bin/env bash
# prod_test.sh [fast|stress|chaos|all] [parallel]
#
# bwkv's crash and fault-injection suite (TESTING.md). Every step runs
# under timeout with -count=1; failures are collected and listed at the end
# and the exit code is non-zero on any. A flaky recovery is a bug: nothing
# is retried. Round counts come from environment variables (defaults here
# are the CI ones for fast).
#
#   fast    one hit of every failpoint, a few kill -9 rounds, small
#           power-loss and I/O-error sweeps
#   stress  long randomized model runs and many kill -9 rounds
#   chaos   the failpoint x hit-count matrix, full power-loss and I/O sweeps
#   all     the three
#
# "parallel" runs the steps of a mode concurrently (needs more cores).
set -uo pipefail
cd "$(dirname "$0")"

mode=${1:-fast}
parallel=${2:-}
step_timeout=${BWKV_STEP_TIMEOUT:-1200}
failures=()
pids=()
names=()

step() {
  local name=$1; shift
  if [ -n "$parallel" ]; then
    ( echo "== $name"; timeout "$step_timeout" "$@" ) >"/tmp/prod_test.$name.log" 2>&1 &
    pids+=($!); names+=("$name")
    return
  fi
  echo "== $name: $*"
  if ! timeout "$step_timeout" "$@"; then
    failures+=("$name")
  fi
}

wait_parallel() {
  local i
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then failures+=("${names[$i]}"); fi
    cat "/tmp/prod_test.${names[$i]}.log"
  done
  pids=(); names=()
}

fast() {
  step failpoints env BWKV_FP_HITS="${BWKV_FP_HITS:-1}" \
    go test -tags failpoints -count=1 -run '^TestFailpointMatrix$' .
  step kill9 env BWKV_CRASH_ROUNDS="${BWKV_CRASH_ROUNDS:-8}" \
    go test -count=1 -run '^(TestCrashKill9|TestRecoveryUndo|TestCrashDuringRecovery|TestStealUndo)$' .
  step powerloss go test -count=1 -short -run '^(TestPowerLoss|TestIOErrors|TestBadLog|TestINVC2|TestFilePowerLoss|TestFileWriteFaults)$' . ./wal ./manifest ./pool
}

stress() {
  step model env BWKV_MODEL_SEEDS="${BWKV_MODEL_SEEDS:-2000}" BWKV_MODEL_OPS="${BWKV_MODEL_OPS:-5000}" \
    go test -count=1 -run '^TestModel$' .
  step kill9-long env BWKV_CRASH_ROUNDS="${BWKV_CRASH_ROUNDS:-400}" \
    go test -count=1 -timeout 60m -run '^TestCrashKill9$' .
  step concurrency env BWKV_BANK_MS="${BWKV_BANK_MS:-30000}" BWKV_SMO_MS="${BWKV_SMO_MS:-30000}" \
    go test -race -count=1 -run '^(TestBank|TestConcurrentSMOs)$' .
  step invc2 env BWKV_INVC2_SEEDS="${BWKV_INVC2_SEEDS:-100}" go test -count=1 -run '^TestINVC2$' .
  step cluster env BWKV_CLUSTER_SECONDS="${BWKV_CLUSTER_SECONDS:-300}" BWKV_CLUSTER_CRASH_ROUNDS="${BWKV_CLUSTER_CRASH_ROUNDS:-30}" \
    go -C cluster test -race -count=1 -timeout 60m -run '^(TestNemesis|TestCrashKill9)$' .
}

chaos() {
  step failpoints-matrix env BWKV_FP_HITS="${BWKV_FP_HITS:-1,2,3,5,10,50}" \
    go test -tags failpoints -count=1 -timeout 60m -run '^TestFailpointMatrix$' .
  step powerloss-full go test -count=1 -run '^(TestPowerLoss|TestIOErrors|TestFilePowerLoss|TestFileWriteFaults)$' . ./wal ./manifest ./pool
}

case "$mode" in
  fast) fast ;;
  stress) stress ;;
  chaos) chaos ;;
  all) fast; stress; chaos ;;
  *) echo "usage: $0 [fast|stress|chaos|all] [parallel]" >&2; exit 2 ;;
esac
[ -n "$parallel" ] && wait_parallel

if [ ${#failures[@]} -gt 0 ]; then
  echo "prod_test.sh $mode: FAILED: ${failures[*]}"
  exit 1
fi
echo "prod_test.sh $mode: all steps passed"
