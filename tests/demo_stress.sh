#!/usr/bin/env bash
# tests/demo_stress.sh: the built-in workload's shutdown, run after run. Not
# part of `make test` (30 runs take minutes).
#
# Usage: tests/demo_stress.sh [--runs N] [--hogs N]
#   --runs N   demo launches in a row (default 30): examples/demo.sh, i.e.
#              primus-cli direct --module primus_runner -- train pretrain on
#              2 processes (DDP on gloo), then its own loss/checkpoint check
#   --hogs N   CPU hogs (`yes > /dev/null`) running meanwhile (default 0): a
#              busy machine shifts the ranks' exit timing
# Each run's output goes to $STRESS_DIR/run-N.log (default directory: a new
# /tmp/primus-demo-stress-XXXXXX; its workspace is $STRESS_DIR/workspace).
# A run fails when the demo exits non-zero; an abort is a rank that printed
# "terminate called" or ended with SIGABRT (exit 134). Prints one line per
# failed run and a summary; the hogs are stopped on every exit.
#
# Exit codes: 0 every run passed; 1 a run failed; 2 bad usage.
set -euo pipefail

STRESS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=30
HOGS=0
HOG_PIDS=()

usage() {
  # shellcheck source=runner/lib/usage.sh
  source "$STRESS_ROOT/runner/lib/usage.sh"
  primus_usage "${BASH_SOURCE[0]}"
}

bad_usage() {
  echo "tests/demo_stress.sh: $*; see tests/demo_stress.sh --help" >&2
  exit 2
}

parse_args() {
  while (($#)); do
    case $1 in
      -h | --help) usage; exit 0 ;;
      --runs | --hogs)
        [[ ${2:-} =~ ^[0-9]{1,4}$ ]] || bad_usage "$1 needs a count, e.g. $1 30"
        if [[ $1 == --runs ]]; then RUNS=$2; else HOGS=$2; fi
        shift
        ;;
      *) bad_usage "unknown argument '$1'" ;;
    esac
    shift
  done
  ((RUNS > 0)) || bad_usage "--runs must be at least 1"
}

stop_hogs() {
  local pid
  for pid in "${HOG_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
}

main() {
  parse_args "$@"
  STRESS_DIR=${STRESS_DIR:-$(mktemp -d /tmp/primus-demo-stress-XXXXXX)}
  mkdir -p "$STRESS_DIR"
  trap stop_hogs EXIT
  local i
  for ((i = 0; i < HOGS; i++)); do
    yes >/dev/null &
    HOG_PIDS+=($!)
  done
  local failed=0 aborted=0 rc log start=$SECONDS
  for ((i = 1; i <= RUNS; i++)); do
    log=$STRESS_DIR/run-$i.log
    rc=0
    PRIMUS_WORKSPACE=$STRESS_DIR/workspace "$STRESS_ROOT/examples/demo.sh" >"$log" 2>&1 || rc=$?
    if grep -q "terminate called" "$log" || ((rc == 134)); then
      aborted=$((aborted + 1))
      echo "run $i: a rank aborted (exit $rc): $log"
    elif ((rc != 0)); then
      echo "run $i: exit $rc: $log"
    fi
    ((rc == 0)) || failed=$((failed + 1))
  done
  echo "demo stress: $RUNS run(s) in $((SECONDS - start)) s with $HOGS hog(s): $failed failed, $aborted aborted; logs in $STRESS_DIR"
  ((failed == 0))
}

main "$@"
