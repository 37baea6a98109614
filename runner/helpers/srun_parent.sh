#!/usr/bin/env bash
# runner/helpers/srun_parent.sh: the parent of srun for `primus-cli slurm srun`.
#
# Usage (exec'd by runner/primus-cli-slurm.sh once the srun call is built):
#   srun_parent.sh srun [SRUN FLAGS...] ENTRY [ENTRY ARGS...]
#
# It stays for the whole job, so its command line is srun's own words, never
# what the user typed: a secret given as --env NAME=VALUE travels in the
# environment (docs/security.md "Security"). It runs srun as a child in a session of its
# own, turns SIGTERM/SIGHUP into that signal for every task of srun's step and
# passes SIGINT/SIGUSR1/SIGUSR2 to srun (runner/lib/slurm_srun.sh), then exits
# with the status of the task that ended first (runner/helpers/step_exit.sh),
# srun's own after a stop or when no task reported one (after a stop it says which).
#
# Exit codes: the step's status as above; 2 no srun command given.
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
if (($# == 0)); then
  echo "srun_parent.sh: usage: srun_parent.sh srun [SRUN ARGS...]" >&2
  exit 2
fi
PRIMUS_PARENT_RUNNER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=runner/lib/common.sh
source "$PRIMUS_PARENT_RUNNER_DIR/lib/common.sh"
# shellcheck source=runner/lib/processes.sh
source "$PRIMUS_PARENT_RUNNER_DIR/lib/processes.sh"
# shellcheck source=runner/lib/slurm_stop.sh
source "$PRIMUS_PARENT_RUNNER_DIR/lib/slurm_stop.sh"
# shellcheck source=runner/lib/slurm_srun.sh
source "$PRIMUS_PARENT_RUNNER_DIR/lib/slurm_srun.sh"

__primus_rc=0
primus_srun_run "$@" || __primus_rc=$?
exit "$__primus_rc"
