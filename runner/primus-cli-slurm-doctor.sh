#!/usr/bin/env bash
# Usage: primus-cli slurm doctor [SLURM FLAGS] [--probe] [--json FILE]
#                                [--ratio R] [--floor-gbps G] [--dry-run] [-h]
#
# Run `primus-cli doctor` on every node of an allocation (one Slurm task per
# node) and compare the nodes (`doctor`):
#   inside salloc/sbatch   srun on every node of the allocation (or the
#                          nodes the Slurm flags select)
#   outside                srun makes its own allocation from the Slurm flags
#                          (e.g. -N 4, -w node[1-4], -p debug)
# Each node checks itself (tier 1, < 60 s) and sends its report; then this
# prints a table ranked worst first (node, status, pair bandwidth, latency,
# ratio to the fleet median, failed checks) and, when some node failed, a
# last line `--exclude=<hostlist>` to paste into sbatch/srun.
#
# A node fails when one of its checks fails, when it is the odd one out of
# anything that should be uniform (versions, device counts, CPU vendor,
# accelerator, cluster-uniform variables: named against the majority), or
# with --probe when its pairs say it is slow: a pair is slow below R x the
# median of the nodes' best pairs; a node slow in every pair it was measured
# in, or slow with a node known to be good (a confirmation round pairs each
# node of a slow pair with one), is excluded. A slow pair nothing explains
# (two nodes: either end may be the slow one) names both as suspects and
# excludes neither.
#
# Options (anywhere among the Slurm flags):
#   --probe          also measure with the job's backend (gloo on CPU,
#                    NCCL/RCCL on GPUs): node pairs in two rounds (i with
#                    i+1, then i with i+N/2), a recheck of the slow
#                    pairs, a confirmation round, one all_reduce, GEMM
#                    on GPUs
#   --json FILE      write the fleet report (every node, every check, figures)
#   --ratio R        a pair is slow below R x the median of the nodes'
#                    best pairs (default 0.8)
#   --floor-gbps G   a pair is also slow below G GB/s (default: none)
#   --dry-run        print the srun call; run nothing
#   -h, --help       this text
#
# Exit codes: 0 every node healthy; 1 srun or a runner file missing; 2 invalid
# arguments; 3 a node failed (the --exclude= line names it) or sent no report.
set -euo pipefail

DOCTOR_RUNNER_DIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
# shellcheck source=runner/lib/common.sh
source "$DOCTOR_RUNNER_DIR/lib/common.sh"

SLURM_FLAGS=()
NODE_ARGS=(--report-line)
FLEET_ARGS=()
DRY_RUN=0
EXPECT=""

doctor_bad_usage() {
  LOG_ERROR "$*"
  echo "Run 'primus-cli slurm doctor --help' for usage." >&2
  exit "$PRIMUS_EXIT_INVALID"
}

# doctor_value OPTION VALUE: VALUE must be there and not an option.
doctor_value() {
  [[ -n ${2:-} && $2 != -* ]] || doctor_bad_usage "option $1 needs a value, e.g. $1 ${3:-0.8}."
}

doctor_parse() {
  while (($#)); do
    case $1 in
      -h | --help) primus_usage "${BASH_SOURCE[0]}"; exit 0 ;;
      doctor | --debug) ;;
      --dry-run) DRY_RUN=1 ;;
      --probe) NODE_ARGS+=(--probe) ;;
      --json) doctor_value "$1" "${2:-}" report.json; FLEET_ARGS+=(--json "$2"); shift ;;
      --json=*) FLEET_ARGS+=(--json "${1#*=}") ;;
      # Both ends use the limits: the nodes plan the confirmation round with them.
      --ratio | --floor-gbps) doctor_value "$1" "${2:-}"; FLEET_ARGS+=("$1" "$2"); NODE_ARGS+=("$1" "$2"); shift ;;
      --ratio=* | --floor-gbps=*) FLEET_ARGS+=("${1%%=*}" "${1#*=}"); NODE_ARGS+=("${1%%=*}" "${1#*=}") ;;
      -N | --nodes) doctor_value "$1" "${2:-}" 4; SLURM_FLAGS+=("$1" "$2"); EXPECT=$2; shift ;;
      --nodes=*) SLURM_FLAGS+=("$1"); EXPECT=${1#*=} ;;
      -N?*) SLURM_FLAGS+=("$1"); EXPECT=${1#-N} ;;
      --) doctor_bad_usage "slurm doctor takes no workload after '--'; give Slurm flags and doctor options only." ;;
      *) SLURM_FLAGS+=("$1") ;;
    esac
    shift
  done
}

main() {
  doctor_parse "$@"
  [[ $EXPECT =~ ^[0-9]+$ ]] || EXPECT=""
  local has_nodes=0 flag
  for flag in "${SLURM_FLAGS[@]}"; do
    case $flag in -N* | --nodes* | -w* | --nodelist*) has_nodes=1 ;; esac
  done
  # Inside an allocation without node flags: every node of it.
  if ((!has_nodes)) && [[ -n ${SLURM_JOB_NUM_NODES:-} ]]; then
    SLURM_FLAGS+=(-N "$SLURM_JOB_NUM_NODES")
    EXPECT=$SLURM_JOB_NUM_NODES
  fi
  local srun=(srun --ntasks-per-node=1 --kill-on-bad-exit=0 "${SLURM_FLAGS[@]}"
    "$BASH" "$DOCTOR_RUNNER_DIR/primus-cli" doctor "${NODE_ARGS[@]}")
  if ((DRY_RUN)); then
    printf '%q ' "${srun[@]}"
    printf '\n'
    return 0
  fi
  command -v srun >/dev/null || primus_die "$PRIMUS_EXIT_MISSING" "srun not found on PATH; run slurm doctor on a Slurm login node (or add Slurm's bin directory to PATH)."
  primus_require_python
  local out rc=0
  out=$(mktemp "${TMPDIR:-/tmp}/primus-doctor.XXXXXX")
  # shellcheck disable=SC2064 # the file name is fixed now
  trap "rm -f -- '$out'" EXIT
  # The nodes print no phase of their own: node 0 says when the probe starts.
  local phases=2
  [[ " ${NODE_ARGS[*]} " != *" --probe "* ]] || phases=3
  echo "[doctor] $(date +%H:%M:%S) phase 1/$phases: node checks on every node (srun)" >&2
  "${srun[@]}" >"$out" || rc=$?
  if ! grep -q '^PRIMUS-DOCTOR-REPORT ' "$out" && ((rc != 0 && rc != 3)); then
    LOG_ERROR "srun failed (exit $rc) before any node reported; see its message above."
    exit "$rc"
  fi
  grep -v '^PRIMUS-DOCTOR-REPORT ' "$out" >&2 || true
  local fleet=("$PRIMUS_PYTHON" -m primus_runner doctor fleet "$out" "${FLEET_ARGS[@]}")
  [[ -z $EXPECT ]] || fleet+=(--expect "$EXPECT")
  fleet+=(--phases "$phases")
  PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" "${fleet[@]}"
}

main "$@"
