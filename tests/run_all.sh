#!/usr/bin/env bash
# tests/run_all.sh: every suite of `make test`, after its set-up: the live Slurm
# suite beside lint, pytest and the bats files that mostly wait, then the other
# bats files alone.
#
# Usage: tests/run_all.sh [-h|--help]
#
# The live Slurm suite (tests/slurm/run.sh, about 14 minutes here) mostly
# waits on Slurm's own timers, so it runs beside `make lint docs pytest` (about 3
# minutes of CPU) and the bats files whose time is real seconds of waiting for
# a verdict or a stop (BESIDE_SLURM: the run monitor's hang and straggler
# verdicts, the stop and container signal paths; the stress script,
# tests/stress.sh, runs most of them on a loaded machine). Its output goes to a
# file and is printed whole when it ends, so the two never interleave. The other
# bats files start once all of that is done, with the machine to themselves
# (live-output lag, launch overhead ratios). Every suite runs even when an
# earlier one failed; the summary names each suite's status and time.
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

# The bats files run beside the Slurm suite; every other file of tests/bats
# runs after it.
BESIDE_SLURM=(monitor.bats hang.bats stopping.bats hardening.bats container_podman.bats)
BATS=$ROOT/node_modules/bats/bin/bats

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

# bats_files VAR WHICH: VAR = the bats files run beside the Slurm suite
# (WHICH=beside) or after it (WHICH=after), in tests/bats order.
bats_files() {
  local -n __files=$1
  local __file __name __which
  __files=()
  for __file in tests/bats/*.bats; do
    __name=${__file##*/} __which=after
    [[ " ${BESIDE_SLURM[*]} " != *" $__name "* ]] || __which=beside
    [[ $__which != "$2" ]] || __files+=("$__file")
  done
}

# run_bats NAME WHICH: the bats files of WHICH (bats_files), as `make bats` runs them.
run_bats() {
  local -a files=()
  bats_files files "$2"
  run_suite "$1" "$BATS" --timing --print-output-on-failure "${files[@]}"
}

main() {
  local start=$SECONDS rc=0 name
  cd "$ROOT"
  local -a beside=()
  bats_files beside beside
  if ((${#beside[@]} != ${#BESIDE_SLURM[@]})); then
    echo "tests/run_all.sh: BESIDE_SLURM names a file that is not in tests/bats: ${BESIDE_SLURM[*]}" >&2
    return 1
  fi
  # A session of its own, so that one signal stops its whole tree.
  setsid make --no-print-directory slurm-test >"$SLURM_LOG" 2>&1 &
  SLURM_PID=$!
  run_suite lint make --no-print-directory lint
  run_suite docs make --no-print-directory docs
  run_suite pytest make --no-print-directory pytest
  run_bats bats-beside beside
  wait "$SLURM_PID" || rc=$?
  SLURM_PID=""
  STATUS[slurm-test]=$rc SECONDS_TAKEN[slurm-test]=$((SECONDS - start))
  echo "--- the live Slurm suite (ran beside lint, docs, pytest and bats-beside) ---"
  cat -- "$SLURM_LOG"
  run_bats bats-after after
  rc=0
  echo "--- make test: suites ---"
  for name in lint docs pytest bats-beside slurm-test bats-after; do
    printf '%-11s %-7s %4d s\n' "$name" "$( ((STATUS[$name] == 0)) && echo passed || echo FAILED)" \
      "${SECONDS_TAKEN[$name]}"
    ((STATUS[$name] == 0)) || rc=1
  done
  printf 'all suites: %d s\n' $((SECONDS - start))
  return "$rc"
}

main "$@"
