# shellcheck shell=bash
# runner/helpers/envs/base_env.sh: the launcher-owned defaults of the Primus
# reference (sections 1, 4-8) for every job, safe to source by hand:
#
#   source runner/helpers/envs/base_env.sh
#
# What it sets (each only when the user has not set it; see "Precedence"):
#   - what `python3 -m primus_runner detect` gives (the launcher's own detection
#     code, one python3 start, skipped when PRIMUS_DETECTION_DONE=1): MASTER_ADDR,
#     MASTER_PORT, NNODES, NODE_RANK from the scheduler or config, GPUS_PER_NODE =
#     the detected GPU count, NCCL_IB_HCA, NCCL_IB_GID_INDEX (3 when nothing is
#     detected), IP_INTERFACE, NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME,
#     PRIMUS_ACCELERATOR, PRIMUS_GPU_MODEL, PRIMUS_NEURON_*. When it cannot run (no
#     python3, no psutil) it warns once and the reference defaults below stay.
#   - distributed fallbacks: MASTER_ADDR=localhost MASTER_PORT=1234 NNODES=1
#     NODE_RANK=0 GPUS_PER_NODE=8
#   - NCCL_DEBUG exported empty (reference: "base_env.sh empty default")
#   - RCCL/NCCL, ROCm/HSA, PyTorch, Transformer Engine defaults (reference 4-7)
#   - HIP_VISIBLE_DEVICES=0,...,GPUS_PER_NODE-1 (not on neuron/cpu/cuda hosts,
#     and never on top of a ROCR_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES mask)
#   - OMP_NUM_THREADS=1 in every launch mode (torchrun's own default; --single
#     and srun-native workers would otherwise start one thread per CPU)
#   - defaults of the reference launcher's base_env.sh (AMD-AGI/Primus runner/helpers/envs/base_env.sh):
#     NCCL_CHECKS_DISABLE=1 RCCL_MSCCLPP_ENABLE=0 RCCL_MSCCLPP_FORCE_ENABLE=0
#     MSCCLPP_DISABLE_CHANNEL_CACHE=FALSE GPU_MAX_HW_QUEUES=2 ENABLE_NUMA_BINDING=0
#     NVTE_USE_CAST_TRANSPOSE_TRITON=1 NVTE_USE_OPTIMIZED_HIPIFIED_CAST_TRANSPOSE=0
#     PRIMUS_TURBO_ATTN_V3_ATOMIC_FP32=0 NVTE_DEBUG=0 NVTE_DEBUG_LEVEL=0
#     NVTE_FUSED_ATTN_LOG_CONFIG=0 PRIMUS_TURBO_DEEPEP_TIMEOUT=600
#   - LD_LIBRARY_PATH: the ROCm lib directory ($ROCM_HOME/lib, /opt/rocm/lib or
#     the first /opt/rocm-*/lib) moved to the front, duplicates dropped
#   - TORCH_COMPILE_CACHE_KEY_TAG is never set (Primus's Python patch owns it)
#   - PRIMUS_PATH=$PWD when the working directory is a Primus checkout (it holds
#     primus/cli/main.py; upstream: the repository holding its runner)
#   - DATA_PATH=$PRIMUS_PATH/data (else <repo>/data),
#     HF_HOME=${DATA_PATH}/huggingface, PYTHONPATH gets
#     <repo>/python and <repo> prepended (once)
#   - PRIMUS_DETERMINISTIC=1: NCCL_ALGO=Ring NVTE_ALLOW_NONDETERMINISTIC_ALGO=0
#     ROCBLAS_DEFAULT_ATOMICS_MODE=0 TORCH_COMPILE_DISABLE=1
#     PRIMUS_TURBO_AUTO_TUNE=0 (and CUBLAS_WORKSPACE_CONFIG=:4096:8 on CUDA); a
#     user value that contradicts one of them is kept and warned about.
#
# Precedence (docs/configuration.md "Configuration"): a variable that is set when this file is sourced
# belongs to the user and is kept, even when it is set to the empty string
# (`export NCCL_SOCKET_IFNAME=` means "let the library choose"). One exception,
# from the reference: an empty NCCL_IB_HCA means "detect", and it is never
# exported empty: when detection finds no usable port it is unset (NCCL reads
# an empty list as every device, as it does an unset one). Names listed in
# PRIMUS_DETECTED_VARS (space separated; exported by the launcher for values it
# detected or defaulted itself) are not the user's: layers may refine them.
#
# Sourcing contract: guarded against double sourcing (per shell), never exits
# the caller's shell, always returns 0, leaves set -e/-u/-x/pipefail and traps
# as they were, works from any directory and through a symlink, and prints only
# on NODE_RANK 0, at INFO (summary, hidden by PRIMUS_LOG_LEVEL=WARN) or WARN.
#
# A layer, not a library: the functions other layers and the launcher use come
# from runner/lib/ (env_origin.sh: primus_env_default, primus_env_fallback,
# primus_env_user_owns, primus_env_note_origin; shellopts.sh: primus_opts_save
# and primus_opts_restore; common.sh: logging). Every function and variable a
# sourced file defines is prefixed (primus_, __primus_, PRIMUS_, __PRIMUS_),
# so a caller's own die, require_file or log functions survive; the LOG_*
# functions are the launcher's logging interface (runner/lib/common.sh).

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  # Executed, not sourced: nothing it sets could reach the caller.
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "$0")/../../lib/usage.sh"
  primus_usage "$0"
  case ${1:-} in -h | --help) exit 0 ;; esac
  echo "base_env.sh must be sourced: source $0" >&2
  exit 2
fi

if [[ -n ${__PRIMUS_BASE_ENV_SOURCED:-} ]]; then
  return 0
fi

# __primus_is_uint VALUE: VALUE is a plain non-negative decimal integer.
__primus_is_uint() { [[ $1 =~ ^[0-9]{1,9}$ ]]; }

# ---------------------------------------------------------------------------
# Detection: `python3 -m primus_runner detect`, the launcher's own code
# (python/primus_runner/launch/detect.py), in one python3 start.
# ---------------------------------------------------------------------------

# __primus_detection_needed: true unless the launcher did it or every value
# detection would give is already set.
__primus_detection_needed() {
  [[ ${PRIMUS_DETECTION_DONE:-0} == 1 ]] && return 1
  [[ -v MASTER_ADDR && -v MASTER_PORT && -v NNODES && -v NODE_RANK && -v GPUS_PER_NODE ]] || return 0
  [[ -n ${NCCL_IB_HCA:-} && -v NCCL_IB_GID_INDEX && -v NCCL_SOCKET_IFNAME && -v GLOO_SOCKET_IFNAME ]] || return 0
  case ${PRIMUS_ACCELERATOR:-auto} in
    rocm) [[ -n ${PRIMUS_GPU_MODEL:-} ]] || return 0 ;;
    neuron) [[ -n ${PRIMUS_NEURON_LOGICAL_CORES:-} && -n ${PRIMUS_NEURON_DEFAULT_LNC:-} ]] || return 0 ;;
    cpu | cuda) ;;
    *) return 0 ;;
  esac
  return 1
}

# __primus_apply_detected NAME VALUE ORIGIN: a detected value, below the
# user's. An empty NCCL_IB_HCA or PRIMUS_ACCELERATOR=auto asks for detection.
__primus_apply_detected() {
  local name=$1 value=$2
  if [[ -z ${__PRIMUS_ORIGIN[$name]-} ]]; then
    case $name in
      NCCL_IB_HCA) [[ -n ${NCCL_IB_HCA-} ]] || unset NCCL_IB_HCA ;;
      PRIMUS_ACCELERATOR) [[ ${PRIMUS_ACCELERATOR-} != auto ]] || unset PRIMUS_ACCELERATOR ;;
    esac
  fi
  primus_env_default "$name" "$value" "$3"
}

# __primus_run_detection: run `detect --format nul` once, apply its records
# (kind NAME VALUE: env, origin, fail, end), warn once about what failed.
__primus_run_detection() {
  local kind name value failures="" mapping="" ended=0 i reason
  local -a names=() values=()
  local -A detected_origin=()
  primus_pick_python
  while primus_read -d '' kind && primus_read -d '' name && primus_read -d '' value; do
    case $kind in
      env) names+=("$name") values+=("$value") ;;
      origin) detected_origin[$name]=$value ;;
      fail)
        case $name in
          ranks | config) mapping+="${mapping:+; }$value" ;;
          *) failures+="${failures:+; }$name: $value" ;;
        esac
        ;;
      end) ended=1 ;;
    esac
  done < <(PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
    "$PRIMUS_PYTHON" -m primus_runner detect --format nul 2>/dev/null)
  for i in "${!names[@]}"; do
    name=${names[i]}
    case $name in
      PRIMUS_DETECTION_DONE | PRIMUS_DETECTED_VARS) ;; # the launcher's bookkeeping
      *) [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && __primus_apply_detected "$name" "${values[i]}" "${detected_origin[$name]:-detected}" ;;
    esac
  done
  if ((!ended)); then
    # Failure path only: a second start to say why (last line of its stderr).
    if command -v "$PRIMUS_PYTHON" >/dev/null 2>&1; then
      reason=$({ PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
        "$PRIMUS_PYTHON" -m primus_runner detect --format nul 2>&1 >/dev/null || true; } | tail -n 1)
    else
      reason="no such program"
    fi
    failures="'$PRIMUS_PYTHON' could not run the primus_runner helpers${reason:+: $reason}"
  fi
  if [[ -n $mapping ]]; then
    LOG_WARN_RANK0 "base_env: $mapping"
  fi
  if [[ -n $failures ]]; then
    LOG_WARN_RANK0 "base_env: detection helper unavailable ($failures); keeping the reference defaults for what it would detect. Fix: run 'make setup' (or set PRIMUS_PYTHON to a python3 with psutil and PyYAML), or export the values yourself."
  fi
}

# ---------------------------------------------------------------------------
# The defaults.
# ---------------------------------------------------------------------------

# __primus_base_distributed: Primus docs, environment variables, section 1.
# The values: PRIMUS_DISTRIBUTED_DEFAULTS (runner/lib/facts.sh, registry shared_facts).
__primus_base_distributed() {
  local name
  for name in MASTER_ADDR MASTER_PORT NNODES NODE_RANK GPUS_PER_NODE; do
    primus_env_fallback "$name" "${PRIMUS_DISTRIBUTED_DEFAULTS[$name]}" default
  done
}

# __primus_base_network: Primus docs, environment variables, section 4, NIC part (after detection).
__primus_base_network() {
  primus_env_fallback NCCL_DEBUG "" default
  primus_env_fallback NCCL_IB_GID_INDEX 3 default
  # Never exported empty (python/primus_runner/network/detect.py says why).
  [[ -n ${NCCL_IB_HCA-} ]] || unset NCCL_IB_HCA
  if [[ -n ${IP_INTERFACE:-} ]]; then
    primus_env_fallback NCCL_SOCKET_IFNAME "$IP_INTERFACE" default
  fi
  # Gloo takes a plain interface name: from IP_INTERFACE, never a copy of
  # NCCL's ^/=/prefix-list syntax (python/primus_runner/network/interfaces.py).
  if [[ -n ${IP_INTERFACE:-} ]]; then
    primus_env_fallback GLOO_SOCKET_IFNAME "$IP_INTERFACE" default
  fi
}

# __primus_base_libraries: Primus docs, environment variables, sections 4-7 fixed defaults.
__primus_base_libraries() {
  primus_env_fallback NCCL_PXN_DISABLE 1 default
  primus_env_fallback NCCL_P2P_NET_CHUNKSIZE 524288 default
  primus_env_fallback NCCL_CROSS_NIC 0 default
  primus_env_fallback RCCL_MSCCL_ENABLE 0 default
  primus_env_fallback RCCL_MSCCLPP_THRESHOLD 1073741824 default
  primus_env_fallback TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK 0 default
  primus_env_fallback TORCH_NCCL_HIGH_PRIORITY 1 default
  primus_env_fallback HSA_ENABLE_SDMA 1 default
  primus_env_fallback HSA_NO_SCRATCH_RECLAIM 1 default
  primus_env_fallback CUDA_DEVICE_MAX_CONNECTIONS 1 default
  primus_env_fallback OMP_NUM_THREADS 1 default
  primus_env_fallback NVTE_ROCM_ENABLE_MXFP8 1 default
  primus_env_fallback NVTE_CK_USES_BWD_V3 1 default
  primus_env_fallback PATCH_TE_FLASH_ATTN 0 default
  # Defaults the reference launcher's base_env.sh sets that the reference
  # variable list leaves unassigned (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/envs/base_env.sh).
  primus_env_fallback NCCL_CHECKS_DISABLE 1 default
  primus_env_fallback RCCL_MSCCLPP_ENABLE 0 default
  primus_env_fallback RCCL_MSCCLPP_FORCE_ENABLE 0 default
  primus_env_fallback MSCCLPP_DISABLE_CHANNEL_CACHE FALSE default
  primus_env_fallback GPU_MAX_HW_QUEUES 2 default
  primus_env_fallback ENABLE_NUMA_BINDING 0 default
  primus_env_fallback NVTE_USE_CAST_TRANSPOSE_TRITON 1 default
  primus_env_fallback NVTE_USE_OPTIMIZED_HIPIFIED_CAST_TRANSPOSE 0 default
  primus_env_fallback PRIMUS_TURBO_ATTN_V3_ATOMIC_FP32 0 default
  primus_env_fallback NVTE_DEBUG 0 default
  primus_env_fallback NVTE_DEBUG_LEVEL 0 default
  primus_env_fallback NVTE_FUSED_ATTN_LOG_CONFIG 0 default
  primus_env_fallback PRIMUS_TURBO_DEEPEP_TIMEOUT 600 default
}

# __primus_base_rocm_libs: the ROCm lib directory ($ROCM_HOME/lib, default
# /opt/rocm/lib, else the first /opt/rocm-*/lib) first in LD_LIBRARY_PATH, the
# other entries kept in order without duplicates (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/envs/base_env.sh).
# Nothing changes when no such directory exists.
__primus_base_rocm_libs() {
  local lib=${ROCM_HOME:-/opt/rocm}/lib entry list
  if [[ ! -d $lib ]]; then
    local -a found=()
    [[ -n ${ROCM_HOME:-} ]] || found=(/opt/rocm-*/lib)
    [[ -n ${found[0]-} && -d ${found[0]} ]] || return 0
    lib=${found[0]}
  fi
  local origin=default
  if primus_env_user_owns LD_LIBRARY_PATH; then origin=user+default; fi
  list=$lib
  local -a old=()
  primus_split old : "${LD_LIBRARY_PATH-}"
  for entry in "${old[@]}"; do
    [[ -n $entry ]] || continue
    case ":$list:" in *":$entry:"*) ;; *) list+=:$entry ;; esac
  done
  [[ $list != "${LD_LIBRARY_PATH-}" ]] || return 0
  LD_LIBRARY_PATH=$list
  __PRIMUS_ORIGIN[LD_LIBRARY_PATH]=$origin
  export LD_LIBRARY_PATH
}

# __primus_base_visible_devices: HIP_VISIBLE_DEVICES=0..GPUS_PER_NODE-1 unless
# the accelerator is known not to be ROCm. A GPUS_PER_NODE that is not a
# number is left for validation to report.
__primus_base_visible_devices() {
  case ${PRIMUS_ACCELERATOR:-auto} in neuron | cpu | cuda) return 0 ;; esac
  # A ROCR/CUDA mask already chose the GPUs; HIP indices on top would index
  # into the masked list (double mask). GPUS_PER_NODE counts after the mask.
  [[ -z ${ROCR_VISIBLE_DEVICES:-} && -z ${CUDA_VISIBLE_DEVICES:-} ]] || return 0
  __primus_is_uint "${GPUS_PER_NODE-}" || return 0
  local n=$((10#$GPUS_PER_NODE)) i list=""
  ((n >= 1 && n <= 1024)) || return 0
  for ((i = 0; i < n; i++)); do list+="${list:+,}$i"; done
  primus_env_fallback HIP_VISIBLE_DEVICES "$list" default
}

# __primus_base_paths: Primus docs, environment variables, section 8 and the Python path. PRIMUS_PATH
# (upstream: the repository that holds its runner) is the working directory
# when that is a Primus checkout; this runner is never one, so it is not used.
__primus_base_paths() {
  if [[ ! -v PRIMUS_PATH && -f $PWD/primus/cli/main.py ]]; then
    primus_env_fallback PRIMUS_PATH "$PWD" default
  fi
  primus_env_fallback DATA_PATH "${PRIMUS_PATH:-$PRIMUS_ROOT}/data" default
  primus_env_fallback HF_HOME "$DATA_PATH/huggingface" default
  local entry origin=default
  if primus_env_user_owns PYTHONPATH; then origin=user+default; fi
  for entry in "$PRIMUS_ROOT" "$PRIMUS_ROOT/python"; do
    case ":${PYTHONPATH-}:" in
      *":$entry:"*) ;;
      *)
        PYTHONPATH="$entry${PYTHONPATH:+:$PYTHONPATH}"
        __PRIMUS_ORIGIN[PYTHONPATH]=$origin
        ;;
    esac
  done
  export PYTHONPATH
}

# __primus_base_deterministic: PRIMUS_DETERMINISTIC=1 (Primus's deterministic
# mode: the values Megatron's ROCm deterministic_mode asserts, plus NCCL Ring).
__primus_base_deterministic() {
  [[ ${PRIMUS_DETERMINISTIC:-0} == 1 ]] || return 0
  local -a pairs=(NCCL_ALGO Ring NVTE_ALLOW_NONDETERMINISTIC_ALGO 0
    ROCBLAS_DEFAULT_ATOMICS_MODE 0 TORCH_COMPILE_DISABLE 1 PRIMUS_TURBO_AUTO_TUNE 0)
  if [[ ${PRIMUS_ACCELERATOR:-} == cuda ]]; then
    pairs+=(CUBLAS_WORKSPACE_CONFIG :4096:8)
  fi
  local i name want
  for ((i = 0; i < ${#pairs[@]}; i += 2)); do
    name=${pairs[i]} want=${pairs[i + 1]}
    primus_env_fallback "$name" "$want" deterministic
    if [[ ${!name-} != "$want" ]]; then
      LOG_WARN_RANK0 "base_env: PRIMUS_DETERMINISTIC=1 needs $name=$want but $name='${!name-}' is exported; runs are not reproducible. Fix: unset $name or export $name=$want."
    fi
  done
}

# __primus_base_summary: one INFO line per group, on node rank 0.
__primus_base_summary() {
  local group name line text=""
  local -a groups=(
    "cluster:MASTER_ADDR MASTER_PORT NNODES NODE_RANK GPUS_PER_NODE PRIMUS_ACCELERATOR PRIMUS_GPU_MODEL"
    "network:NCCL_IB_HCA NCCL_IB_GID_INDEX NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME HIP_VISIBLE_DEVICES"
    "paths:PRIMUS_PATH DATA_PATH HF_HOME"
  )
  for group in "${groups[@]}"; do
    line=""
    for name in ${group#*:}; do
      [[ -v $name ]] && line+=" $name=${!name}"
    done
    text+=${text:+$'\n'}"base_env ${group%%:*}:${line}"
  done
  # One call, one masking pass, one prefix per line.
  LOG_INFO_RANK0 "$text"
}

# __primus_base_env_main: everything above, in order.
__primus_base_env_main() {
  # Detection first: it reads the exported environment, where a default set
  # here would look like the user's (GPUS_PER_NODE=8 on a 2-GPU host).
  if __primus_detection_needed; then
    __primus_run_detection
  fi
  __primus_base_distributed
  __primus_base_network
  __primus_base_libraries
  __primus_base_visible_devices
  __primus_base_rocm_libs
  __primus_base_paths
  __primus_base_deterministic
  primus_env_export_origins
  __primus_base_summary
}

# __primus_physical_dir VAR DIR: DIR as an absolute path without symlinks (what
# `cd -P DIR && pwd` prints), in a subshell only when a component is a symlink.
__primus_physical_dir() {
  local __rest=$2 __part __dir=""
  [[ $__rest == /* ]] || __rest=$PWD/$__rest
  while [[ -n $__rest ]]; do
    __part=${__rest%%/*}
    if [[ $__rest == */* ]]; then __rest=${__rest#*/}; else __rest=""; fi
    case $__part in
      "" | .) ;;
      ..) __dir=${__dir%/*} ;;
      *)
        __dir+=/$__part
        if [[ -L $__dir ]]; then
          printf -v "$1" '%s' "$(cd -P -- "$2" && pwd)"
          return
        fi
        ;;
    esac
  done
  printf -v "$1" '%s' "${__dir:-/}"
}

__PRIMUS_BASE_ENV_SOURCED=1
__PRIMUS_ENVS_DIR=${BASH_SOURCE[0]}
if [[ -L $__PRIMUS_ENVS_DIR ]]; then
  __PRIMUS_ENVS_DIR=$(readlink -f -- "$__PRIMUS_ENVS_DIR")
fi
case $__PRIMUS_ENVS_DIR in */*) __PRIMUS_ENVS_DIR=${__PRIMUS_ENVS_DIR%/*} ;; *) __PRIMUS_ENVS_DIR=. ;; esac
__primus_physical_dir __PRIMUS_ENVS_DIR "$__PRIMUS_ENVS_DIR"
# shellcheck source=runner/lib/shellopts.sh
source "$__PRIMUS_ENVS_DIR/../../lib/shellopts.sh"
primus_opts_save
# The runner directory of this file (physical: through a symlinked directory too).
if [[ -z ${PRIMUS_RUNNER_DIR:-} || ! -f ${PRIMUS_RUNNER_DIR:-}/lib/common.sh ]]; then
  PRIMUS_RUNNER_DIR=${__PRIMUS_ENVS_DIR%/helpers/envs}
fi
# shellcheck source=runner/lib/common.sh
source "$__PRIMUS_ENVS_DIR/../../lib/common.sh"
# shellcheck source=runner/lib/env_origin.sh
source "$__PRIMUS_ENVS_DIR/../../lib/env_origin.sh"
primus_debug_trace_begin  # PRIMUS_DEBUG=1: trace, secrets masked
__primus_base_env_main
primus_opts_restore
