# shellcheck shell=bash
# runner/helpers/envs/neuron.sh: the AWS Neuron layer (Trn1, Trn2, Trn3, Inf2),
# sourced by primus-env.sh after base_env.sh when PRIMUS_ACCELERATOR=neuron.
# Every value is a default: a value the user exported is kept (SPEC section 3).
#
# Inputs: the instance facts from detection (`devices`): PRIMUS_NEURON_INSTANCE,
# PRIMUS_NEURON_DEVICES, PRIMUS_NEURON_CORES_PER_DEVICE, PRIMUS_NEURON_DEFAULT_LNC,
# PRIMUS_NEURON_LOGICAL_CORES; PRIMUS_NEURON_CORES_PER_PROC=K (primus-cli direct
# --neuron-cores-per-proc K); PRIMUS_NEURON_ROOT_COMM_PORT (optional).
#
# What it sets:
#   NEURON_LOGICAL_NC_CONFIG  the family default (devices' PRIMUS_NEURON_DEFAULT_LNC;
#                             without facts: 1 on trn1*/inf2*, 2 on trn2*/trn3*)
#   GPUS_PER_NODE             logical NeuronCores available / K (K=1 without
#                             --neuron-cores-per-proc); "available" is the user's
#                             NEURON_RT_VISIBLE_CORES when set, else all logical cores
#   PRIMUS_NEURON_CORE_SLICES with K: one core list per local rank, space separated
#                             ("0-1 2-3 ..."), disjoint, each K cores, taken in order
#                             from the available cores; run_worker.sh gives local
#                             rank i word i as its NEURON_RT_VISIBLE_CORES
#   NEURON_RT_ROOT_COMM_ID    NNODES > 1: MASTER_ADDR:PORT, PORT =
#                             PRIMUS_NEURON_ROOT_COMM_PORT, else MASTER_PORT+1
#                             (MASTER_PORT-1 when MASTER_PORT is 65535): distinct
#                             from the torch rendezvous port, same on every node
#   NEURON_RT_EXEC_TIMEOUT    NNODES > 1: 600 s (runtime default 30 s is too short
#                             across a network; reference "DMA & execution")
# Deprecated names (reference "Deprecated"), each with a warning naming the
# replacement: NEURON_RT_VIRTUAL_CORE_SIZE (still applied when the new name is
# unset: its value becomes NEURON_LOGICAL_NC_CONFIG, so the user's choice
# survives); NEURON_RT_NUM_CORES (still applied: kept, used as the per-process
# core count for GPUS_PER_NODE; an error together with --neuron-cores-per-proc).
#
# primus_neuron_validate_cores: the pre-launch check (errors exit-code 2):
# K >= 1, K x GPUS_PER_NODE <= available cores, a derived GPUS_PER_NODE divides
# them exactly, NEURON_RT_VISIBLE_CORES well formed and inside the instance,
# LNC a power of two dividing the cores per device, NEURON_RT_ROOT_COMM_ID
# host:port with a port in 1024-65535 that is not MASTER_PORT.

PRIMUS_NEURON_MULTINODE_EXEC_TIMEOUT=600

# __primus_neuron_expand LIST: fill __PRIMUS_NEURON_CORES with the cores of a
# range list ("0-3,8,10-11"); return 1 when LIST is malformed or repeats a core.
__primus_neuron_expand() {
  __PRIMUS_NEURON_CORES=()
  local item lo hi i
  local -A seen=()
  local -a items
  IFS=, read -r -a items <<<"$1"
  ((${#items[@]} > 0)) || return 1
  for item in "${items[@]}"; do
    item=${item// /}
    if [[ $item =~ ^([0-9]{1,4})-([0-9]{1,4})$ ]]; then
      lo=$((10#${BASH_REMATCH[1]})) hi=$((10#${BASH_REMATCH[2]}))
    elif [[ $item =~ ^[0-9]{1,4}$ ]]; then
      lo=$((10#$item)) hi=$lo
    else
      return 1
    fi
    ((lo <= hi)) || return 1
    for ((i = lo; i <= hi; i++)); do
      [[ -z ${seen[$i]-} ]] || return 1
      seen[$i]=1
      __PRIMUS_NEURON_CORES+=("$i")
    done
  done
}

# __primus_neuron_compact VAR CORE...: store in VAR the cores as a range list.
__primus_neuron_compact() {
  local __out=$1 __text="" __start="" __prev="" __core
  shift
  for __core in "$@" ""; do
    if [[ -n $__start && $__core == $((__prev + 1)) ]]; then
      __prev=$__core
      continue
    fi
    if [[ -n $__start ]]; then
      if ((__start == __prev)); then __text+="${__text:+,}$__start"; else __text+="${__text:+,}$__start-$__prev"; fi
    fi
    __start=$__core __prev=$__core
  done
  printf -v "$__out" '%s' "$__text"
}

# __primus_neuron_family_lnc: the reference's LNC default by instance name.
__primus_neuron_family_lnc() {
  case ${PRIMUS_NEURON_INSTANCE:-} in
    trn1* | inf2* | inf1*) echo 1 ;;
    trn2* | trn3*) echo 2 ;;
    *) return 1 ;;
  esac
}

# __primus_neuron_logical_total VAR: logical cores of this instance for the
# effective LNC, from the detected facts; return 1 when unknown.
__primus_neuron_logical_total() {
  local __devices=${PRIMUS_NEURON_DEVICES-} __per=${PRIMUS_NEURON_CORES_PER_DEVICE-}
  local __lnc=${NEURON_LOGICAL_NC_CONFIG-}
  if __primus_is_uint "$__devices" && __primus_is_uint "$__per" && __primus_is_uint "$__lnc" &&
    ((10#$__lnc > 0 && 10#$__per % 10#$__lnc == 0)); then
    printf -v "$1" '%d' $((10#$__devices * 10#$__per / 10#$__lnc))
    return 0
  fi
  if __primus_is_uint "${PRIMUS_NEURON_LOGICAL_CORES-}" &&
    [[ $__lnc == "${PRIMUS_NEURON_DEFAULT_LNC-}" ]]; then
    printf -v "$1" '%d' $((10#$PRIMUS_NEURON_LOGICAL_CORES))
    return 0
  fi
  return 1
}

# __primus_neuron_deprecated: the two deprecated core-selection names.
__primus_neuron_deprecated() {
  if [[ -v NEURON_RT_VIRTUAL_CORE_SIZE ]]; then
    if primus_env_user_owns NEURON_LOGICAL_NC_CONFIG; then
      LOG_WARN_RANK0 "neuron: NEURON_RT_VIRTUAL_CORE_SIZE='$NEURON_RT_VIRTUAL_CORE_SIZE' is deprecated and ignored by the runtime because NEURON_LOGICAL_NC_CONFIG='$NEURON_LOGICAL_NC_CONFIG' is set. Fix: unset NEURON_RT_VIRTUAL_CORE_SIZE; use NEURON_LOGICAL_NC_CONFIG."
    else
      LOG_WARN_RANK0 "neuron: NEURON_RT_VIRTUAL_CORE_SIZE is deprecated (still applied); use NEURON_LOGICAL_NC_CONFIG instead. Exporting NEURON_LOGICAL_NC_CONFIG='$NEURON_RT_VIRTUAL_CORE_SIZE' from it."
      primus_env_default NEURON_LOGICAL_NC_CONFIG "$NEURON_RT_VIRTUAL_CORE_SIZE" neuron
      __PRIMUS_ORIGIN[NEURON_LOGICAL_NC_CONFIG]=user
    fi
  fi
  if [[ -v NEURON_RT_NUM_CORES ]]; then
    LOG_WARN_RANK0 "neuron: NEURON_RT_NUM_CORES='$NEURON_RT_NUM_CORES' is deprecated (still applied, not topology-aware); use NEURON_RT_VISIBLE_CORES to pin an explicit set of cores, or NEURON_LOGICAL_NC_CONFIG to choose the logical core size."
  fi
}

# __primus_neuron_available VAR_COUNT: the cores the processes of this node may
# use, in __PRIMUS_NEURON_CORES (the user's NEURON_RT_VISIBLE_CORES, else
# 0..total-1). Return 1 when neither is known or the user's list is malformed.
__primus_neuron_available() {
  local __total __i
  if [[ -n ${NEURON_RT_VISIBLE_CORES:-} ]] && primus_env_user_owns NEURON_RT_VISIBLE_CORES; then
    __primus_neuron_expand "$NEURON_RT_VISIBLE_CORES" || return 1
  elif __primus_neuron_logical_total __total; then
    __PRIMUS_NEURON_CORES=()
    for ((__i = 0; __i < __total; __i++)); do __PRIMUS_NEURON_CORES+=("$__i"); done
  else
    return 1
  fi
  printf -v "$1" '%d' "${#__PRIMUS_NEURON_CORES[@]}"
}

# __primus_neuron_per_proc VAR: K from PRIMUS_NEURON_CORES_PER_PROC, else the
# deprecated NEURON_RT_NUM_CORES, else 1; empty when K is not a number >= 1.
__primus_neuron_per_proc() {
  local __k=${PRIMUS_NEURON_CORES_PER_PROC:-${NEURON_RT_NUM_CORES:-1}}
  if __primus_is_uint "$__k" && ((10#$__k >= 1)); then
    printf -v "$1" '%d' $((10#$__k))
  else
    printf -v "$1" '%s' ""
  fi
}

# __primus_neuron_slices: GPUS_PER_NODE default and PRIMUS_NEURON_CORE_SLICES.
__primus_neuron_slices() {
  local count k
  if ! __primus_neuron_available count; then
    LOG_WARN_RANK0 "neuron: the NeuronCores of instance '${PRIMUS_NEURON_INSTANCE:-unknown}' are unknown (detection unavailable) and NEURON_RT_VISIBLE_CORES is not set; GPUS_PER_NODE stays ${GPUS_PER_NODE-unset}. Fix: export GPUS_PER_NODE, or run 'make setup' so detection works."
    return 0
  fi
  __primus_neuron_per_proc k
  [[ -n $k ]] || return 0
  if ((count >= k)); then
    primus_env_default GPUS_PER_NODE $((count / k)) neuron
  fi
  __primus_neuron_slices_refresh
}

# __primus_neuron_root_comm_port VAR: the collectives bootstrap port.
__primus_neuron_root_comm_port() {
  local __port=${PRIMUS_NEURON_ROOT_COMM_PORT:-}
  if [[ -z $__port ]] && __primus_is_uint "${MASTER_PORT-}"; then
    __port=$((10#$MASTER_PORT + 1))
    ((__port <= 65535)) || __port=$((10#$MASTER_PORT - 1))
  fi
  printf -v "$1" '%s' "$__port"
}

# __primus_neuron_multinode: bootstrap address and timeout when NNODES > 1.
__primus_neuron_multinode() {
  __primus_is_uint "${NNODES-}" && ((10#$NNODES > 1)) || return 0
  local port
  __primus_neuron_root_comm_port port
  if [[ -n $port && -n ${MASTER_ADDR:-} ]]; then
    primus_env_default NEURON_RT_ROOT_COMM_ID "$MASTER_ADDR:$port" neuron
  fi
  primus_env_default NEURON_RT_EXEC_TIMEOUT "$PRIMUS_NEURON_MULTINODE_EXEC_TIMEOUT" neuron
}

# __primus_neuron_layer: the whole layer, in order.
__primus_neuron_layer() {
  __primus_neuron_deprecated
  local lnc=${PRIMUS_NEURON_DEFAULT_LNC:-}
  [[ -n $lnc ]] || lnc=$(__primus_neuron_family_lnc) || lnc=""
  if [[ -n $lnc ]]; then
    primus_env_default NEURON_LOGICAL_NC_CONFIG "$lnc" neuron
  else
    LOG_WARN_RANK0 "neuron: instance type '${PRIMUS_NEURON_INSTANCE:-unknown}' is not known; NEURON_LOGICAL_NC_CONFIG is left to the runtime. Fix: export PRIMUS_NEURON_INSTANCE (e.g. trn1.32xlarge) or NEURON_LOGICAL_NC_CONFIG."
  fi
  __primus_neuron_slices
  __primus_neuron_multinode
  LOG_INFO_RANK0 "neuron: instance=${PRIMUS_NEURON_INSTANCE:-unknown} NEURON_LOGICAL_NC_CONFIG=${NEURON_LOGICAL_NC_CONFIG-} GPUS_PER_NODE=${GPUS_PER_NODE-}${PRIMUS_NEURON_CORE_SLICES:+ slices=$PRIMUS_NEURON_CORE_SLICES}${NEURON_RT_ROOT_COMM_ID:+ NEURON_RT_ROOT_COMM_ID=$NEURON_RT_ROOT_COMM_ID}"
}

# __primus_neuron_error MESSAGE: log one validation error (every node).
__primus_neuron_error() {
  LOG_ERROR "$1"
  __PRIMUS_NEURON_FAILED=1
}

# __primus_neuron_check_lnc: LNC a power of two dividing the cores per device.
__primus_neuron_check_lnc() {
  [[ -v NEURON_LOGICAL_NC_CONFIG ]] || return 0
  local lnc=$NEURON_LOGICAL_NC_CONFIG per=${PRIMUS_NEURON_CORES_PER_DEVICE-}
  if ! __primus_is_uint "$lnc" || ((10#$lnc < 1 || (10#$lnc & (10#$lnc - 1)) != 0)); then
    __primus_neuron_error "NEURON_LOGICAL_NC_CONFIG='$lnc' is not a power of two; accepted: 1, 2, 4, ... dividing the NeuronCores per device${per:+ ($per)}. Fix: export NEURON_LOGICAL_NC_CONFIG=${PRIMUS_NEURON_DEFAULT_LNC:-2} (only 2 is publicly supported on Trn2+)."
  elif __primus_is_uint "$per" && ((10#$per % 10#$lnc != 0)); then
    __primus_neuron_error "NEURON_LOGICAL_NC_CONFIG=$lnc does not divide the $per NeuronCores per device of ${PRIMUS_NEURON_INSTANCE:-this instance}; accepted: a power of two dividing $per. Fix: export NEURON_LOGICAL_NC_CONFIG=${PRIMUS_NEURON_DEFAULT_LNC:-1}."
  fi
}

# __primus_neuron_check_slices: K, GPUS_PER_NODE and the visible cores.
__primus_neuron_check_slices() {
  local total count k n
  if [[ -n ${NEURON_RT_VISIBLE_CORES:-} ]] && primus_env_user_owns NEURON_RT_VISIBLE_CORES; then
    if ! __primus_neuron_expand "$NEURON_RT_VISIBLE_CORES"; then
      __primus_neuron_error "NEURON_RT_VISIBLE_CORES='$NEURON_RT_VISIBLE_CORES' is not a range list of distinct cores; accepted: e.g. 0-3 or 0,2,4 or 0-3,8-11. Fix the value or unset it to use every core."
      return
    fi
    local max=0 core
    for core in "${__PRIMUS_NEURON_CORES[@]}"; do
      if ((core > max)); then max=$core; fi
    done
    if __primus_neuron_logical_total total && ((max >= total)); then
      __primus_neuron_error "NEURON_RT_VISIBLE_CORES='$NEURON_RT_VISIBLE_CORES' names core $max but ${PRIMUS_NEURON_INSTANCE:-this instance} has $total logical NeuronCores (0-$((total - 1)) at NEURON_LOGICAL_NC_CONFIG=${NEURON_LOGICAL_NC_CONFIG-}). Fix: use cores 0-$((total - 1))."
      return
    fi
  fi
  [[ -n ${PRIMUS_NEURON_CORES_PER_PROC:-} ]] || return 0
  __primus_neuron_per_proc k
  if [[ -z $k ]]; then
    __primus_neuron_error "--neuron-cores-per-proc / PRIMUS_NEURON_CORES_PER_PROC='$PRIMUS_NEURON_CORES_PER_PROC' is not a whole number >= 1; accepted: 1 up to the logical NeuronCores of the node. Fix: e.g. --neuron-cores-per-proc 2."
    return
  fi
  if [[ -v NEURON_RT_NUM_CORES ]]; then
    __primus_neuron_error "PRIMUS_NEURON_CORES_PER_PROC=$k (--neuron-cores-per-proc) and the deprecated NEURON_RT_NUM_CORES='$NEURON_RT_NUM_CORES' both choose cores per process; accepted: one of them. Fix: unset NEURON_RT_NUM_CORES (per-process slices use NEURON_RT_VISIBLE_CORES)."
    return
  fi
  if ! __primus_neuron_available count; then
    __primus_neuron_error "--neuron-cores-per-proc $k needs the NeuronCore count, but instance '${PRIMUS_NEURON_INSTANCE:-unknown}' is not known and NEURON_RT_VISIBLE_CORES is not set. Fix: export PRIMUS_NEURON_INSTANCE (e.g. trn1.32xlarge) or NEURON_RT_VISIBLE_CORES."
    return
  fi
  if ! __primus_is_uint "${GPUS_PER_NODE-}" || ((10#$GPUS_PER_NODE < 1)); then
    __primus_neuron_error "GPUS_PER_NODE='${GPUS_PER_NODE-}' is not a whole number >= 1; accepted: 1 to $((count / k)) with --neuron-cores-per-proc $k. Fix: unset GPUS_PER_NODE to get $((count / k))."
    return
  fi
  n=$((10#$GPUS_PER_NODE))
  if ((n * k > count)); then
    __primus_neuron_error "GPUS_PER_NODE=$n processes x --neuron-cores-per-proc $k = $((n * k)) NeuronCores, but only $count are available (${NEURON_RT_VISIBLE_CORES:+NEURON_RT_VISIBLE_CORES=$NEURON_RT_VISIBLE_CORES}${NEURON_RT_VISIBLE_CORES:-all logical cores of ${PRIMUS_NEURON_INSTANCE:-this instance}}); accepted: GPUS_PER_NODE x K <= $count. Fix: export GPUS_PER_NODE=$((count / k)) or lower K."
  elif [[ ${__PRIMUS_ORIGIN[GPUS_PER_NODE]-} != user ]] && ((n * k != count)); then
    __primus_neuron_error "--neuron-cores-per-proc $k does not divide the $count available NeuronCores, so the slices cannot cover them; accepted: a K dividing $count. Fix: choose K from the divisors of $count, or export GPUS_PER_NODE to use only part of the cores."
  fi
}

# __primus_neuron_check_root_comm: NEURON_RT_ROOT_COMM_ID when NNODES > 1.
__primus_neuron_check_root_comm() {
  __primus_is_uint "${NNODES-}" && ((10#$NNODES > 1)) || return 0
  local id=${NEURON_RT_ROOT_COMM_ID-}
  if [[ -z $id ]]; then
    __primus_neuron_error "NEURON_RT_ROOT_COMM_ID is not set for a $NNODES-node job; accepted: <rank-0 host>:<port>. Fix: export MASTER_ADDR and MASTER_PORT (the layer derives it) or NEURON_RT_ROOT_COMM_ID=<host>:<port>."
    return
  fi
  if [[ ! $id =~ ^(.+):([0-9]{1,5})$ ]]; then
    __primus_neuron_error "NEURON_RT_ROOT_COMM_ID='$id' is not host:port; accepted: e.g. node0:$(( ${MASTER_PORT:-1234} + 1 )). Fix the value or unset it so the layer derives it from MASTER_ADDR."
    return
  fi
  local port=$((10#${BASH_REMATCH[2]}))
  if ((port < 1024 || port > 65535)); then
    __primus_neuron_error "NEURON_RT_ROOT_COMM_ID='$id' has port $port; accepted: 1024-65535. Fix: set PRIMUS_NEURON_ROOT_COMM_PORT or NEURON_RT_ROOT_COMM_ID with a free port."
  elif [[ $port == "${MASTER_PORT-}" ]]; then
    __primus_neuron_error "NEURON_RT_ROOT_COMM_ID='$id' uses MASTER_PORT=$MASTER_PORT, which the torch rendezvous store already binds on node 0; accepted: a different port. Fix: unset NEURON_RT_ROOT_COMM_ID (default MASTER_PORT+1) or pick another port."
  fi
}

# primus_neuron_validate_cores: validate the Neuron core layout before launch
# and refresh PRIMUS_NEURON_CORE_SLICES. Returns 0, or 2 after logging each error.
primus_neuron_validate_cores() {
  __PRIMUS_NEURON_FAILED=0
  __primus_neuron_check_lnc
  __primus_neuron_check_slices
  __primus_neuron_check_root_comm
  if ((__PRIMUS_NEURON_FAILED)); then
    return 2
  fi
  __primus_neuron_slices_refresh
  return 0
}

# __primus_neuron_slices_refresh: PRIMUS_NEURON_CORE_SLICES from the current
# values (only with --neuron-cores-per-proc and when the slices fit).
__primus_neuron_slices_refresh() {
  [[ -n ${PRIMUS_NEURON_CORES_PER_PROC:-} ]] || return 0
  local count k n i slice list=""
  __primus_neuron_available count || return 0
  __primus_neuron_per_proc k
  [[ -n $k ]] && __primus_is_uint "${GPUS_PER_NODE-}" || return 0
  n=$((10#$GPUS_PER_NODE))
  ((n * k <= count)) || return 0
  for ((i = 0; i < n; i++)); do
    __primus_neuron_compact slice "${__PRIMUS_NEURON_CORES[@]:i*k:k}"
    list+="${list:+ }$slice"
  done
  export PRIMUS_NEURON_CORE_SLICES=$list
  __PRIMUS_ORIGIN[PRIMUS_NEURON_CORE_SLICES]=neuron
}

__primus_neuron_layer
