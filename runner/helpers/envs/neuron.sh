# shellcheck shell=bash
# runner/helpers/envs/neuron.sh: the AWS Neuron layer (Trn1, Trn2, Trn3, Inf2),
# sourced by primus-env.sh after base_env.sh when PRIMUS_ACCELERATOR=neuron.
# Every value is a default: a value the user exported is kept (SPEC section 3).
# This layer only sets values; every Neuron check (LNC, visible cores, core
# partitioning, topology, root comm, EFA, host limits) is a rule of the rules
# engine (python/primus_runner/env/rules/neuron*.py), run by `env check` and by
# `primus-cli direct` alike, so both give the same verdict and message.
#
# Inputs: the instance facts from detection (`devices`): PRIMUS_NEURON_INSTANCE,
# PRIMUS_NEURON_DEVICES, PRIMUS_NEURON_CORES_PER_DEVICE, PRIMUS_NEURON_DEFAULT_LNC,
# PRIMUS_NEURON_LOGICAL_CORES; PRIMUS_NEURON_CORES_PER_PROC=K (primus-cli direct
# --neuron-cores-per-proc K); PRIMUS_NEURON_ROOT_COMM_PORT (optional).
#
# What it sets:
#   NEURON_LOGICAL_NC_CONFIG  the family default (devices' PRIMUS_NEURON_DEFAULT_LNC;
#                             without facts: 1 on trn1*/inf2*, 2 on trn2*/trn3*);
#                             not when the deprecated NEURON_RT_VIRTUAL_CORE_SIZE
#                             is set (the runtime applies that one then)
#   GPUS_PER_NODE             processes per node: the available logical cores / K
#                             (K=1 without --neuron-cores-per-proc); "available" is
#                             the user's NEURON_RT_VISIBLE_CORES, else the deprecated
#                             NEURON_RT_NUM_CORES read as the node's total (as AWS
#                             samples set it: NEURON_RT_NUM_CORES=32 with 32
#                             processes), else all logical cores
#   PRIMUS_NEURON_CORE_SLICES one core list per local rank, space separated, taken in
#                             order from the available cores ("0 1 2 ..." with K=1,
#                             "0-1 2-3 ..." with K=2). run_worker.sh hands local rank
#                             i word i: with K>1 (SPMD) as its NEURON_RT_VISIBLE_CORES;
#                             with K=1 as PRIMUS_NEURON_CORE only, leaving
#                             NEURON_RT_VISIBLE_CORES to PyTorch/XLA, which maps
#                             LOCAL_RANK to the same core and rejects a per-process
#                             single core when LOCAL_WORLD_SIZE > 1
#   MALLOC_ARENA_MAX          64 (AWS Neuron training scripts, "HOST OOM")
#   NCCL_IB_*                 unset unless the user set them: Neuron hosts use EFA
#                             through libfabric, not NCCL's IB transport
#   NNODES > 1 only:
#   NEURON_RT_ROOT_COMM_ID    from python/primus_runner/cluster/ranks.py (the one
#                             derivation): MASTER_ADDR:PORT, PORT =
#                             PRIMUS_NEURON_ROOT_COMM_PORT, else MASTER_PORT+1
#                             (MASTER_PORT-1 when 65535); IPv6 in brackets
#   NEURON_RT_EXEC_TIMEOUT    600 s (runtime default 30 s is too short across a
#                             network; reference "DMA & execution")
#   FI_PROVIDER=efa FI_EFA_USE_DEVICE_RDMA=1 FI_EFA_FORK_SAFE=1   (AWS launch scripts)
#   CCOM_SOCKET_IFNAME        the detected socket interface (IP_INTERFACE)
# Sources: README, section "AWS Neuron".

PRIMUS_NEURON_MULTINODE_EXEC_TIMEOUT=600
PRIMUS_NEURON_MALLOC_ARENA_MAX=64

# __primus_neuron_expand LIST: fill __PRIMUS_NEURON_CORES with the cores of a
# range list ("0-3,8,10-11"); return 1 when LIST is malformed or repeats a core
# (the rules engine reports that; the layer then derives nothing from it).
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

# __primus_neuron_family_lnc: the reference's LNC default by instance name, from
# PRIMUS_NEURON_FAMILY_LNC (runner/lib/facts.sh, generated from the registry's
# neuron.families): trn1n.32xlarge -> family trn1.
__primus_neuron_family_lnc() {
  [[ ${PRIMUS_NEURON_INSTANCE:-} =~ ^((trn|inf)[0-9]+) ]] || return 1
  [[ -n ${PRIMUS_NEURON_FAMILY_LNC[${BASH_REMATCH[1]}]-} ]] || return 1
  echo "${PRIMUS_NEURON_FAMILY_LNC[${BASH_REMATCH[1]}]}"
}

# __primus_neuron_logical_total VAR: logical cores of this instance for the
# effective LNC, from the detected facts; return 1 when unknown.
__primus_neuron_logical_total() {
  local __devices=${PRIMUS_NEURON_DEVICES-} __per=${PRIMUS_NEURON_CORES_PER_DEVICE-}
  local __lnc=${NEURON_LOGICAL_NC_CONFIG:-${NEURON_RT_VIRTUAL_CORE_SIZE-}}
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

# __primus_neuron_available VAR_COUNT: the cores the processes of this node may
# use, in __PRIMUS_NEURON_CORES: the user's NEURON_RT_VISIBLE_CORES, else the
# first NEURON_RT_NUM_CORES (node total), else 0..total-1. Return 1 when unknown.
__primus_neuron_available() {
  local __total __i
  if [[ -n ${NEURON_RT_VISIBLE_CORES:-} ]] && primus_env_user_owns NEURON_RT_VISIBLE_CORES; then
    __primus_neuron_expand "$NEURON_RT_VISIBLE_CORES" || return 1
  else
    if [[ -n ${NEURON_RT_NUM_CORES:-} ]] && __primus_is_uint "$NEURON_RT_NUM_CORES" &&
      ((10#$NEURON_RT_NUM_CORES > 0)); then
      __total=$((10#$NEURON_RT_NUM_CORES))
    elif ! __primus_neuron_logical_total __total; then
      return 1
    fi
    __PRIMUS_NEURON_CORES=()
    for ((__i = 0; __i < __total; __i++)); do __PRIMUS_NEURON_CORES+=("$__i"); done
  fi
  printf -v "$1" '%d' "${#__PRIMUS_NEURON_CORES[@]}"
}

# __primus_neuron_per_proc VAR: K from PRIMUS_NEURON_CORES_PER_PROC, else 1;
# empty when K is not a number >= 1 (the rules engine reports it).
__primus_neuron_per_proc() {
  local __k=${PRIMUS_NEURON_CORES_PER_PROC:-1}
  if __primus_is_uint "$__k" && ((10#$__k >= 1)); then
    printf -v "$1" '%d' $((10#$__k))
  else
    printf -v "$1" '%s' ""
  fi
}

# __primus_neuron_processes: the GPUS_PER_NODE default (available cores / K).
__primus_neuron_processes() {
  local count k
  if ! __primus_neuron_available count; then
    if [[ -n ${NEURON_RT_VISIBLE_CORES:-} ]] && primus_env_user_owns NEURON_RT_VISIBLE_CORES; then
      LOG_WARN_RANK0 "neuron: NEURON_RT_VISIBLE_CORES='$NEURON_RT_VISIBLE_CORES' is not a core list this layer can use (malformed, a backwards range, or a core named twice; the validation names which); GPUS_PER_NODE stays ${GPUS_PER_NODE-unset}. Fix: list each core once, e.g. 0-3 or 0,2,4."
      return 0
    fi
    LOG_WARN_RANK0 "neuron: the NeuronCores of instance '${PRIMUS_NEURON_INSTANCE:-unknown}' are unknown (detection unavailable) and NEURON_RT_VISIBLE_CORES is not set; GPUS_PER_NODE stays ${GPUS_PER_NODE-unset}. Fix: export GPUS_PER_NODE, or run 'make setup' so detection works."
    return 0
  fi
  __primus_neuron_per_proc k
  if [[ -n $k ]] && ((count >= k)); then
    primus_env_default GPUS_PER_NODE $((count / k)) neuron
  fi
}

# primus_neuron_slices: PRIMUS_NEURON_CORE_SLICES from the current values (when
# the cores are known and the slices fit; the rules engine reports the rest).
# The launcher calls it again after the last --env.
primus_neuron_slices() {
  local count k n i slice list=""
  unset PRIMUS_NEURON_CORE_SLICES
  __primus_neuron_available count || return 0
  __primus_neuron_per_proc k
  [[ -n $k ]] && __primus_is_uint "${GPUS_PER_NODE-}" || return 0
  n=$((10#$GPUS_PER_NODE))
  ((n >= 1 && n * k <= count)) || return 0
  for ((i = 0; i < n; i++)); do
    __primus_neuron_compact slice "${__PRIMUS_NEURON_CORES[@]:i*k:k}"
    list+="${list:+ }$slice"
  done
  export PRIMUS_NEURON_CORE_SLICES=$list
  __PRIMUS_ORIGIN[PRIMUS_NEURON_CORE_SLICES]=neuron
}

# __primus_neuron_root_comm: NEURON_RT_ROOT_COMM_ID from ranks.py (one python3
# start, multi-node only, and only when the user did not set it).
__primus_neuron_root_comm() {
  primus_env_user_owns NEURON_RT_ROOT_COMM_ID && return 0
  [[ -n ${MASTER_ADDR:-} ]] || return 0
  local id
  if id=$(primus_python ranks --format neuron-root-comm) && [[ -n $id ]]; then
    primus_env_default NEURON_RT_ROOT_COMM_ID "$id" neuron
  else
    LOG_WARN_RANK0 "neuron: could not derive NEURON_RT_ROOT_COMM_ID from MASTER_ADDR/MASTER_PORT (see the error above). Fix: export NEURON_RT_ROOT_COMM_ID=<rank-0 host>:<free port>."
  fi
}

# __primus_neuron_multinode: bootstrap, timeout, EFA and socket interface (NNODES > 1).
__primus_neuron_multinode() {
  __primus_is_uint "${NNODES-}" && ((10#$NNODES > 1)) || return 0
  __primus_neuron_root_comm
  primus_env_default NEURON_RT_EXEC_TIMEOUT "$PRIMUS_NEURON_MULTINODE_EXEC_TIMEOUT" neuron
  primus_env_default FI_PROVIDER efa neuron
  primus_env_default FI_EFA_USE_DEVICE_RDMA 1 neuron
  primus_env_default FI_EFA_FORK_SAFE 1 neuron
  if [[ -n ${IP_INTERFACE:-} ]]; then
    primus_env_default CCOM_SOCKET_IFNAME "$IP_INTERFACE" neuron
  fi
}

# __primus_neuron_no_ib: drop the NCCL_IB_* values detection or base_env.sh set
# (EFA devices are infiniband-class devices, but Neuron does not use NCCL's IB).
__primus_neuron_no_ib() {
  local name
  for name in $(compgen -v NCCL_IB_); do
    primus_env_user_owns "$name" && continue
    unset "$name"
    unset '__PRIMUS_ORIGIN[$name]'
  done
}

# __primus_neuron_layer: the whole layer, in order.
__primus_neuron_layer() {
  local lnc=${PRIMUS_NEURON_DEFAULT_LNC:-}
  [[ -n $lnc ]] || lnc=$(__primus_neuron_family_lnc) || lnc=""
  if [[ -n ${NEURON_RT_VIRTUAL_CORE_SIZE:-} ]] && ! primus_env_user_owns NEURON_LOGICAL_NC_CONFIG; then
    : # the runtime applies the deprecated name itself (env check warns about it)
  elif [[ -n $lnc ]]; then
    primus_env_default NEURON_LOGICAL_NC_CONFIG "$lnc" neuron
  else
    LOG_WARN_RANK0 "neuron: instance type '${PRIMUS_NEURON_INSTANCE:-unknown}' is not known; NEURON_LOGICAL_NC_CONFIG is left to the runtime. Fix: export PRIMUS_NEURON_INSTANCE (e.g. trn1.32xlarge) or NEURON_LOGICAL_NC_CONFIG."
  fi
  __primus_neuron_processes
  primus_neuron_slices
  primus_env_default MALLOC_ARENA_MAX "$PRIMUS_NEURON_MALLOC_ARENA_MAX" neuron
  __primus_neuron_no_ib
  __primus_neuron_multinode
  LOG_INFO_RANK0 "neuron: instance=${PRIMUS_NEURON_INSTANCE:-unknown} NEURON_LOGICAL_NC_CONFIG=${NEURON_LOGICAL_NC_CONFIG-} GPUS_PER_NODE=${GPUS_PER_NODE-}${PRIMUS_NEURON_CORES_PER_PROC:+ slices=${PRIMUS_NEURON_CORE_SLICES-}}${NEURON_RT_ROOT_COMM_ID:+ NEURON_RT_ROOT_COMM_ID=$NEURON_RT_ROOT_COMM_ID}${FI_PROVIDER:+ FI_PROVIDER=$FI_PROVIDER}"
}

__primus_neuron_layer
