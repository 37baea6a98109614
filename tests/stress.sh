#!/usr/bin/env bash
# tests/stress.sh: the signal suites on a busy machine. Not
# part of `make test`: it loads every core on purpose.
#
# Usage: tests/stress.sh [--hogs N] [--runs N] [BATS_FILE...]
#   --hogs N   CPU hogs (`yes > /dev/null`) to start first (default: one per core)
#   --runs N   copies of the suite run at the same time (default 2)
#   BATS_FILE  the files to run (default: the suites whose tests race with
#              signals: tests/bats/stopping.bats, hardening.bats, hang.bats,
#              container_podman.bats)
# Each run's output goes to $STRESS_DIR/run-N.log (default directory: a new
# /tmp/primus-stress-XXXXXX). Prints one line per run (tests passed and failed,
# seconds) and the load average; the hogs are stopped on every exit.
#
# Exit codes: 0 every run passed; 1 a run failed; 2 bad usage.
set -euo pipefail

STRESS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HOGS=""
RUNS=2
FILES=()
HOG_PIDS=()

usage() {
  # shellcheck source=runner/lib/usage.sh
  source "$STRESS_ROOT/runner/lib/usage.sh"
  primus_usage "${BASH_SOURCE[0]}"
}

bad_usage() {
  echo "tests/stress.sh: $*; see tests/stress.sh --help" >&2
  exit 2
}

parse_args() {
  while (($#)); do
    case $1 in
      -h | --help) usage; exit 0 ;;
      --hogs | --runs)
        [[ ${2:-} =~ ^[0-9]{1,3}$ ]] || bad_usage "$1 needs a count, e.g. $1 2"
        if [[ $1 == --hogs ]]; then HOGS=$2; else RUNS=$2; fi
        shift
        ;;
      -*) bad_usage "unknown option '$1'" ;;
      *) FILES+=("$1") ;;
    esac
    shift
  done
  ((RUNS >= 1)) || bad_usage "--runs must be at least 1"
  [[ -n $HOGS ]] || HOGS=$(nproc)
  if ((${#FILES[@]} == 0)); then
    FILES=(tests/bats/stopping.bats tests/bats/hardening.bats tests/bats/hang.bats
      tests/bats/container_podman.bats)
  fi
}

stop_hogs() {
  ((${#HOG_PIDS[@]} == 0)) || kill "${HOG_PIDS[@]}" 2>/dev/null || true
  HOG_PIDS=()
}

main() {
  parse_args "$@"
  cd "$STRESS_ROOT"
  local bats=$STRESS_ROOT/node_modules/bats/bin/bats
  [[ -x $bats ]] || { echo "tests/stress.sh: bats not found at $bats; run: make setup" >&2; exit 1; }
  STRESS_DIR=${STRESS_DIR:-$(mktemp -d /tmp/primus-stress-XXXXXX)}
  mkdir -p "$STRESS_DIR"
  trap stop_hogs EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local i
  for ((i = 0; i < HOGS; i++)); do
    yes >/dev/null &
    HOG_PIDS+=("$!")
  done
  echo "stress: $HOGS hog(s), $RUNS run(s) of ${FILES[*]}; logs in $STRESS_DIR"
  local -a pids=()
  local start=$SECONDS
  for ((i = 1; i <= RUNS; i++)); do
    "$bats" --print-output-on-failure "${FILES[@]}" >"$STRESS_DIR/run-$i.log" 2>&1 &
    pids+=("$!")
  done
  local failed=0 rc passed bad
  for ((i = 1; i <= RUNS; i++)); do
    rc=0
    wait "${pids[i - 1]}" || rc=$?
    passed=$(grep -c '^ok ' "$STRESS_DIR/run-$i.log" || true)
    bad=$(grep -c '^not ok ' "$STRESS_DIR/run-$i.log" || true)
    echo "stress: run $i: $passed passed, $bad failed, exit $rc ($((SECONDS - start)) s)"
    grep '^not ok ' "$STRESS_DIR/run-$i.log" || true
    ((rc == 0)) || failed=1
  done
  echo "stress: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  stop_hogs
  exit "$failed"
}

main "$@"
