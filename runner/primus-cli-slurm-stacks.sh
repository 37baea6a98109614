#!/usr/bin/env bash
# Usage: primus-cli slurm stacks [--log PATH] JOBID
#
# Dump and summarise the ranks of a running primus-cli job on every node of
# Slurm job JOBID: `srun --overlap --jobid JOBID` runs `primus-cli stacks --json`
# once on each node of the job (the job keeps running), and one summary across
# nodes names each group's node, host and ranks; each node's bundle stays next
# to its log (<log>.stacks-<n>/).
#   --log PATH   passed to each node's `primus-cli stacks` (default: the one
#                launch running on the node)
#   -h, --help   this text
#
# Owns the fan-out over the job's nodes and the merge call; the stacks are read
# by python/primus_runner/diagnose on each node.
# Exit codes: 0 ok; 1 srun/squeue missing or no node answered; 2 bad arguments.
set -euo pipefail

PRIMUS_STACKS_RUNNER_DIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
# shellcheck source=runner/lib/common.sh
source "$PRIMUS_STACKS_RUNNER_DIR/lib/common.sh"

main() {
  local job=""
  local -a node_args=()
  while (($#)); do
    case $1 in
      -h | --help) primus_usage "${BASH_SOURCE[0]}"; exit 0 ;;
      --log)
        (($# >= 2)) || primus_bad_usage "primus-cli slurm stacks" "option --log needs a PATH."
        node_args+=(--log "$2"); shift ;;
      *)
        [[ -z $job && $1 =~ ^[0-9]+(_[0-9]+)?$ ]] ||
          primus_bad_usage "primus-cli slurm stacks" "expected one JOBID (digits, e.g. 1234), got '$1'."
        job=$1 ;;
    esac
    shift
  done
  [[ -n $job ]] || primus_bad_usage "primus-cli slurm stacks" "missing JOBID; usage: primus-cli slurm stacks JOBID."
  local tool
  for tool in srun squeue; do
    command -v "$tool" >/dev/null 2>&1 ||
      primus_die "$PRIMUS_EXIT_MISSING" "'$tool' not found on PATH; primus-cli slurm stacks runs on a Slurm login or compute node."
  done
  local nodes
  nodes=$(squeue -h -j "$job" -t RUNNING -o %D 2>/dev/null | head -n 1) || nodes=""
  [[ $nodes =~ ^[0-9]+$ ]] ||
    primus_die "$PRIMUS_EXIT_MISSING" "job $job is not running (squeue -j $job -t RUNNING shows nothing); pass the id of a running job."
  primus_require_python
  LOG_INFO "reading the stacks on the $nodes node(s) of job $job (srun --overlap --jobid $job)."
  local out
  out=$(srun --overlap --jobid "$job" -N "$nodes" --ntasks-per-node=1 \
    "$PRIMUS_STACKS_RUNNER_DIR/primus-cli" stacks --json "${node_args[@]}") || true
  printf '%s\n' "$out" |
    PYTHONPATH=$PRIMUS_ROOT/python "$PRIMUS_PYTHON" -m primus_runner.diagnose merge --stdin \
      --heading "stacks of job $job across $nodes node(s)"
}

main "$@"
