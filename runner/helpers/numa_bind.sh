#!/usr/bin/env bash
# runner/helpers/numa_bind.sh: run a command bound to the NUMA node of a local
# rank's accelerator.
#
# Usage:
#   numa_bind.sh LOCAL_RANK -- CMD [ARGS...]
#   numa_bind.sh -- CMD [ARGS...]          (LOCAL_RANK from the environment, else 0)
#   numa_bind.sh -h | --help
#
# The rank's device is GPU LOCAL_RANK (through HIP_VISIBLE_DEVICES /
# ROCR_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES when set), or the Neuron device
# holding logical core LOCAL_RANK, or, on a CPU host, NUMA node LOCAL_RANK mod
# the number of nodes. One `python3 -m primus_runner devices --numa-for-rank`
# call finds the node (sysfs under $PRIMUS_SYSFS_ROOT, /dev under
# $PRIMUS_DEV_ROOT) and, through psutil, pins this shell to the node's CPUs.
# Then, in order:
#   1. numactl on PATH and able to bind here: exec
#      `numactl --cpunodebind=N --membind=N -- CMD ARGS...`;
#   2. otherwise, when the CPU affinity was set: exec CMD (it inherits the pin);
#   3. otherwise: a warning saying why, and exec CMD unbound.
# CMD replaces this shell (exec), so signals reach it and its exit status is
# this script's (128+N after signal N). Arguments pass byte-for-byte.
#
# Exit codes: 2 bad arguments; otherwise CMD's own status (127 when CMD is not found).
set -euo pipefail

PRIMUS_NB_HELPER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=runner/lib/common.sh
source "$PRIMUS_NB_HELPER_DIR/lib/common.sh"

PRIMUS_NB_USAGE="usage: numa_bind.sh [LOCAL_RANK] -- CMD [ARGS...]"

usage() { primus_usage "${BASH_SOURCE[0]}"; }

# parse_args ARGS...: set PRIMUS_NB_RANK and PRIMUS_NB_CMD.
parse_args() {
  PRIMUS_NB_RANK=${LOCAL_RANK:-0}
  PRIMUS_NB_CMD=()
  case ${1:-} in
    -h | --help) usage; exit 0 ;;
    --) shift ;;
    "") primus_die "$PRIMUS_EXIT_INVALID" "missing command; $PRIMUS_NB_USAGE" ;;
    *)
      PRIMUS_NB_RANK=$1
      shift
      [[ ${1:-} == -- ]] || primus_die "$PRIMUS_EXIT_INVALID" "expected '--' after LOCAL_RANK '$PRIMUS_NB_RANK'; $PRIMUS_NB_USAGE"
      shift ;;
  esac
  (($#)) || primus_die "$PRIMUS_EXIT_INVALID" "missing command after '--'; $PRIMUS_NB_USAGE"
  [[ $PRIMUS_NB_RANK =~ ^[0-9]{1,6}$ ]] ||
    primus_die "$PRIMUS_EXIT_INVALID" "LOCAL_RANK '$PRIMUS_NB_RANK' is not a non-negative integer; $PRIMUS_NB_USAGE"
  PRIMUS_NB_RANK=$((10#$PRIMUS_NB_RANK))
  PRIMUS_NB_CMD=("$@")
}

# find_node: set PRIMUS_NB_NODE, PRIMUS_NB_CPUS and PRIMUS_NB_AFFINITY (set|empty|skipped|failed:*)
# from one python3 start, which also pins this shell ($$) to the node's CPUs.
find_node() {
  local answer
  PRIMUS_NB_NODE=-1 PRIMUS_NB_CPUS=- PRIMUS_NB_AFFINITY=skipped
  if ! answer=$(primus_python devices --numa-for-rank "$PRIMUS_NB_RANK" --set-affinity-pid "$$"); then
    LOG_WARN "numa_bind: device detection failed (see above); running local rank $PRIMUS_NB_RANK unbound"
    return 0
  fi
  read -r PRIMUS_NB_NODE PRIMUS_NB_CPUS PRIMUS_NB_AFFINITY <<<"$answer"
  [[ $PRIMUS_NB_NODE =~ ^-?[0-9]+$ ]] || PRIMUS_NB_NODE=-1
}

# numactl_works: numactl is on PATH and can bind to PRIMUS_NB_NODE in this environment
# (containers without CAP_SYS_NICE and hosts without that node refuse).
numactl_works() {
  command -v numactl >/dev/null 2>&1 || return 1
  numactl --cpunodebind="$PRIMUS_NB_NODE" --membind="$PRIMUS_NB_NODE" -- true >/dev/null 2>&1
}

main() {
  parse_args "$@"
  if ! type -P "${PRIMUS_NB_CMD[0]}" >/dev/null; then
    LOG_ERROR "numa_bind: command '${PRIMUS_NB_CMD[0]}' not found"
    exit 127
  fi
  find_node
  if ((PRIMUS_NB_NODE < 0)); then
    LOG_WARN "numa_bind: no NUMA node known for local rank $PRIMUS_NB_RANK's device; running unbound"
    exec "${PRIMUS_NB_CMD[@]}"
  fi
  if numactl_works; then
    LOG_DEBUG "numa_bind: local rank $PRIMUS_NB_RANK -> numactl --cpunodebind=$PRIMUS_NB_NODE --membind=$PRIMUS_NB_NODE"
    exec numactl --cpunodebind="$PRIMUS_NB_NODE" --membind="$PRIMUS_NB_NODE" -- "${PRIMUS_NB_CMD[@]}"
  fi
  local __primus_why="numactl not on PATH"
  command -v numactl >/dev/null 2>&1 && __primus_why="numactl cannot bind to node $PRIMUS_NB_NODE here"
  if [[ $PRIMUS_NB_AFFINITY == set ]]; then
    LOG_DEBUG "numa_bind: $__primus_why; local rank $PRIMUS_NB_RANK pinned to node $PRIMUS_NB_NODE CPUs $PRIMUS_NB_CPUS (psutil)"
    exec "${PRIMUS_NB_CMD[@]}"
  fi
  LOG_WARN "numa_bind: $__primus_why, and CPU affinity for node $PRIMUS_NB_NODE (CPUs $PRIMUS_NB_CPUS) was not set" \
    "($PRIMUS_NB_AFFINITY); running local rank $PRIMUS_NB_RANK unbound"
  exec "${PRIMUS_NB_CMD[@]}"
}

main "$@"
