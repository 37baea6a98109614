#!/usr/bin/env bash
# runner/helpers/step_exit.sh: the exit status of a Slurm step the launcher
# started, the task that ended first deciding (python/primus_runner/launch/step_exit.py).
#
# Usage (by runner/lib/slurm_srun.sh and the batch script of 'primus-cli slurm sbatch'):
#   step_exit.sh start               prints a new records directory (empty: none)
#   step_exit.sh end DIR SRUN_STATUS prints the step's exit status, removes DIR
#
# Exit codes: 0 (the answer is on stdout); 2 bad usage; with no Python, `end`
# prints SRUN_STATUS and `start` nothing.
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
PRIMUS_STEP_EXIT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=runner/lib/common.sh
source "$PRIMUS_STEP_EXIT_DIR/lib/common.sh"
primus_pick_python
if ! PYTHONPATH=$PRIMUS_ROOT/python "$PRIMUS_PYTHON" -m primus_runner.launch.step_exit "$@"; then
  # Never lose srun's own status to a helper that could not run.
  [[ ${1:-} != end || ! ${3:-} =~ ^[0-9]+$ ]] || echo "$3"
fi
