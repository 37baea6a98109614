#!/usr/bin/env bash
# tests/slurm/run.sh: the live Slurm suite, as `make test` runs it.
#
# Usage: tests/slurm/run.sh [BATS_ARGS...]   (e.g. -f 'sbatch' to pick tests)
#
# Brings up a real 4-node Slurm cluster on this machine (tests/slurm/cluster.sh)
# in a fresh state directory, runs `bats tests/slurm`, and always brings the
# cluster down again (EXIT/INT/TERM trap). If the cluster cannot start, this
# fails loudly with the daemons' logs: the suite never skips.
#
# Needs the Debian packages: slurmctld slurmd slurm-client munge (root).
# Environment: PRIMUS_SLURM_KEEP_DIR=1 keeps the state directory (logs) after
# the run; PRIMUS_SLURM_DIR picks it (default: a new /tmp/primus-slurm-XXXXXX).
set -euo pipefail

case ${1:-} in
  -h | --help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
esac

SLURM_TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SLURM_TESTS_DIR/../.." && pwd)
CREATED_DIR=""
if [[ -z ${PRIMUS_SLURM_DIR:-} ]]; then
  PRIMUS_SLURM_DIR=$(mktemp -d /tmp/primus-slurm-XXXXXX)
  CREATED_DIR=$PRIMUS_SLURM_DIR
fi
export PRIMUS_SLURM_DIR

find_bats() {
  local candidate
  for candidate in "$REPO_ROOT/node_modules/.bin/bats" "$REPO_ROOT/node_modules/bats/bin/bats"; do
    if [[ -x $candidate ]]; then
      printf '%s\n' "$candidate"
      return 0
    fi
  done
  command -v bats || {
    echo "tests/slurm/run.sh: error: bats not found in node_modules; run: make setup (npm ci)" >&2
    return 1
  }
}

teardown_cluster() {
  "$SLURM_TESTS_DIR/cluster.sh" down || true
  if [[ -n $CREATED_DIR && ${PRIMUS_SLURM_KEEP_DIR:-0} != 1 ]]; then
    rm -rf "$CREATED_DIR"
  fi
}

main() {
  local bats
  bats=$(find_bats)
  trap teardown_cluster EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if ! "$SLURM_TESTS_DIR/cluster.sh" up >/dev/null; then
    echo "tests/slurm/run.sh: error: the test Slurm cluster did not start (see the logs" \
      "above); the live Slurm suite FAILS, it is never skipped." >&2
    exit 3
  fi
  export SLURM_CONF=$PRIMUS_SLURM_DIR/etc/slurm.conf
  cd "$REPO_ROOT"
  "$bats" "$@" "$SLURM_TESTS_DIR"
}

main "$@"
