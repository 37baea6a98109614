# shellcheck shell=bash
# runner/lib/validation.sh: checks of the distributed parameters before a launch.
#
# Each validate_* function checks one variable, normalises a number to plain
# decimal (NODE_RANK=08 is 8, not an octal error), and on failure logs an error
# naming the variable, the value seen, what is accepted and a fix, then returns
# 2. validate_distributed_params runs them all (reference section 1).
# Sourced; needs runner/lib/common.sh.

# __primus_as_decimal VAR: VAR holds digits only -> rewrite it in plain decimal.
__primus_as_decimal() {
  local value=${!1-}
  [[ $value =~ ^[0-9]+$ ]] || return 1
  # Strip leading zeros by hand: 10#<huge> would overflow silently.
  value=${value#"${value%%[!0]*}"}
  [[ -n $value ]] || value=0
  ((${#value} <= 9)) || return 1
  printf -v "$1" '%d' "$((10#$value))"
}

# __primus_check_int NAME MIN MAX FIX: NAME must be an integer in [MIN, MAX].
__primus_check_int() {
  local name=$1 min=$2 max=$3 fix=$4
  local value=${!name-}
  if [[ -z $value ]]; then
    LOG_ERROR "$name is empty; accepted: an integer from $min to $max. $fix"
    return 2
  fi
  if ! __primus_as_decimal "$name"; then
    LOG_ERROR "$name='$value' is not a whole number; accepted: an integer from $min to $max. $fix"
    return 2
  fi
  value=${!name}
  if ((value < min || value > max)); then
    LOG_ERROR "$name=$value is out of range; accepted: $min to $max. $fix"
    return 2
  fi
  export "${name?}"
}

validate_nnodes() {
  __primus_check_int NNODES 1 1000000 "Set NNODES to the number of nodes in the job (e.g. export NNODES=2)."
}

validate_gpus_per_node() {
  __primus_check_int GPUS_PER_NODE 1 1024 \
    "Set GPUS_PER_NODE to the number of processes to start on each node (e.g. 8)."
}

validate_master_port() {
  __primus_check_int MASTER_PORT 1024 65535 \
    "Pick an unprivileged free TCP port, e.g. export MASTER_PORT=29500."
}

validate_node_rank() {
  local nnodes=${NNODES:-1}
  __primus_check_int NODE_RANK 0 1000000 \
    "Set NODE_RANK to this node's zero-based index (0 to NNODES-1)." || return
  if [[ $nnodes =~ ^[0-9]+$ ]] && ((NODE_RANK >= 10#$nnodes)); then
    LOG_ERROR "NODE_RANK=$NODE_RANK is out of range for NNODES=$nnodes; accepted: 0 to $((10#$nnodes - 1)). Fix NODE_RANK or NNODES so that NODE_RANK < NNODES."
    return 2
  fi
}

validate_master_addr() {
  local value=${MASTER_ADDR-}
  if [[ -z $value ]]; then
    LOG_ERROR "MASTER_ADDR is empty; accepted: the host name or IP address of node 0. Export MASTER_ADDR=<node 0 host>."
    return 2
  fi
  if [[ ! $value =~ ^[A-Za-z0-9]([A-Za-z0-9.:_-]*[A-Za-z0-9])?$|^\[[0-9A-Fa-f:.]+\]$ ]]; then
    LOG_ERROR "MASTER_ADDR='$value' is not a valid host name or IP address; accepted: letters, digits, '.', '-', ':' (IPv6). Export MASTER_ADDR=<node 0 host>."
    return 2
  fi
}

# validate_distributed_params: all of the above; returns 2 on the first failure.
validate_distributed_params() {
  validate_nnodes || return
  validate_node_rank || return
  validate_gpus_per_node || return
  validate_master_port || return
  validate_master_addr || return
}
