#!/usr/bin/env bash
# tests/run_all.sh: every suite of `make test`, after its set-up: the live Slurm
# suite beside lint and pytest, then the bats suite alone.
#
# Usage: tests/run_all.sh [-h|--help]
#
# The live Slurm suite (tests/slurm/run.sh, about 14 minutes here) mostly
# waits on Slurm's own timers, so it runs beside `make lint pytest` (about 3
# minutes of CPU); its output goes to a file and is printed whole when it ends,
# so the two never interleave. The bats suite starts only once both are done: its run
# monitor and live-output tests measure real seconds and get the machine to
# themselves. Every suite runs even when an earlier one failed; the summary
# names each suite's status and time.
#
# Exit codes: 0 every suite passed; 1 a suite failed; 2 bad usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
  # shellcheck source=runner/lib/usage.sh
  source "$ROOT/runner/lib/usage.sh"
  primus_usage "${BASH_SOURCE[0]}"
}

case ${1:-} in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "tests/run_all.sh: unknown argument '$1'; see tests/run_all.sh --help" >&2; exit 2 ;;
esac

declare -A STATUS=() SECONDS_TAKEN=()
SLURM_LOG=$(mktemp "${TMPDIR:-/tmp}/primus-slurm-suite.XXXXXX")
SLURM_PID=""

# stop_slurm_suite: on any exit, a Slurm suite still running is stopped (its
# own trap brings the cluster down) and its log removed.
stop_slurm_suite() {
  [[ -z $SLURM_PID ]] || kill -TERM -- "-$SLURM_PID" 2>/dev/null || true
  rm -f -- "$SLURM_LOG"
}
trap stop_slurm_suite EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

# run_suite NAME CMD...: run CMD in the foreground and note its status and time.
run_suite() {
  local name=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  STATUS[$name]=$rc SECONDS_TAKEN[$name]=$((SECONDS - start))
}

main() {
  local start=$SECONDS rc=0 name
  cd "$ROOT"
  # A session of its own, so that one signal stops its whole tree.
  setsid make --no-print-directory slurm-test >"$SLURM_LOG" 2>&1 &
  SLURM_PID=$!
  run_suite lint make --no-print-directory lint
  run_suite pytest make --no-print-directory pytest
  wait "$SLURM_PID" || rc=$?
  SLURM_PID=""
  STATUS[slurm-test]=$rc SECONDS_TAKEN[slurm-test]=$((SECONDS - start))
  echo "--- the live Slurm suite (ran beside lint and pytest) ---"
  cat -- "$SLURM_LOG"
  run_suite bats make --no-print-directory bats
  rc=0
  echo "--- make test: suites ---"
  for name in lint pytest slurm-test bats; do
    printf '%-11s %-7s %4d s\n' "$name" "$( ((STATUS[$name] == 0)) && echo passed || echo FAILED)" \
      "${SECONDS_TAKEN[$name]}"
    ((STATUS[$name] == 0)) || rc=1
  done
  printf 'all suites: %d s\n' $((SECONDS - start))
  return "$rc"
}

main "$@"
