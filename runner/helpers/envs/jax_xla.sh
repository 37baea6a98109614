# shellcheck shell=bash
# runner/helpers/envs/jax_xla.sh: the JAX/XLA framework layer (reference
# section 14), sourced by primus-env.sh when the workload is JAX
# (PRIMUS_FRAMEWORK=maxtext|jax|maxdiffusion; see primus-env.sh).
#
# MaxText (PRIMUS_FRAMEWORK=maxtext or jax), in this order:
#   XLA_FLAGS = <inherited XLA_FLAGS> <managed flags> <XLA_FLAGS_APPEND>
#     managed (on GPU hosts; skipped on neuron/cpu, where xla_gpu_* flags would
#     be rejected): --xla_gpu_memory_limit_slop_factor=95
#     --xla_gpu_reduce_scatter_combine_threshold_bytes=8589934592
#     --xla_gpu_all_gather_combine_threshold_bytes=8589934592
#     --xla_gpu_enable_command_buffer='' --xla_gpu_enable_latency_hiding_scheduler=true
#     --xla_gpu_enable_triton_gemm=false --xla_gpu_enable_cublaslt=true
#     --xla_gpu_autotune_level=${XLA_GPU_AUTOTUNE_LEVEL:-4}
#     --xla_gpu_enable_all_gather_combine_by_dim=false
#     and, when DUMP_HLO=1, --xla_dump_to=${DUMP_HLO_DIR:-output/xla_dump_hlo}
#     XLA honours the last occurrence of a flag, so managed flags beat inherited
#     ones and XLA_FLAGS_APPEND beats both.
#   PRIMUS_XLA_FLAGS_OWNED=1 (the launcher exports it when config `env:` or
#     --env sets XLA_FLAGS): XLA_FLAGS is used as given, no managed flags.
#   XLA_FLAGS_APPEND: appended last, then unset (consumed on use); see
#     primus_xla_apply_append, which the launcher calls again after --env.
#   XLA_GPU_AUTOTUNE_LEVEL must be a whole number >= 1 (0 gives NaN on fp8 MoE):
#     the rules engine's rules type and xla_autotune_level_min say so (env check,
#     and the launcher's verdict before anything starts); this layer checks nothing.
#   set if unset: XLA_PYTHON_CLIENT_MEM_FRACTION=.97, TF_CPP_MIN_LOG_LEVEL=2.
# MaxDiffusion (PRIMUS_FRAMEWORK=maxdiffusion) declares no XLA defaults: only
# XLA_FLAGS_APPEND is applied.
#
# The JAX coordinator (JAX_COORDINATOR_IP/PORT, NNODES > 1, not MaxDiffusion)
# is decided by python/primus_runner/launch/jax_layer.py (request `jax`); this
# file only applies its records (primus_env_ask, runner/lib/env_origin.sh: the
# launch helper answers inside `primus-cli direct`, one python3 start by hand).

PRIMUS_XLA_MANAGED_FLAGS_FIXED=(
  --xla_gpu_memory_limit_slop_factor=95
  --xla_gpu_reduce_scatter_combine_threshold_bytes=8589934592
  --xla_gpu_all_gather_combine_threshold_bytes=8589934592
  "--xla_gpu_enable_command_buffer=''"
  --xla_gpu_enable_latency_hiding_scheduler=true
  --xla_gpu_enable_triton_gemm=false
  --xla_gpu_enable_cublaslt=true
)

# primus_xla_managed_flags VAR: the managed flag string for the current values.
primus_xla_managed_flags() {
  local __flags="${PRIMUS_XLA_MANAGED_FLAGS_FIXED[*]}"
  __flags+=" --xla_gpu_autotune_level=${XLA_GPU_AUTOTUNE_LEVEL:-4}"
  __flags+=" --xla_gpu_enable_all_gather_combine_by_dim=false"
  if [[ ${DUMP_HLO:-0} == 1 ]]; then
    __flags+=" --xla_dump_to=${DUMP_HLO_DIR:-output/xla_dump_hlo}"
  fi
  printf -v "$1" '%s' "$__flags"
}

# __primus_xla_note ORIGIN: add ORIGIN to XLA_FLAGS' origin ("user+jax_xla+append").
__primus_xla_note() {
  local now=${__PRIMUS_ORIGIN[XLA_FLAGS]-}
  if [[ -z $now ]]; then
    if primus_env_user_owns XLA_FLAGS; then now=user; fi
  fi
  __PRIMUS_ORIGIN[XLA_FLAGS]=${now:+$now+}$1
}

# primus_xla_apply_append: append XLA_FLAGS_APPEND to XLA_FLAGS and unset it.
# Idempotent: applying the same value twice in a row appends it once.
primus_xla_apply_append() {
  [[ -v XLA_FLAGS_APPEND ]] || return 0
  local append=$XLA_FLAGS_APPEND
  unset XLA_FLAGS_APPEND
  [[ -n $append ]] || return 0
  local current=${XLA_FLAGS-}
  if [[ $current == "$append" || $current == *" $append" ]]; then
    return 0
  fi
  __primus_xla_note append
  XLA_FLAGS="${current:+$current }$append"
  export XLA_FLAGS
}

# __primus_xla_managed: the MaxText managed string after the inherited flags.
__primus_xla_managed() {
  if [[ ${PRIMUS_XLA_FLAGS_OWNED:-0} == 1 ]]; then
    if [[ ${DUMP_HLO:-0} == 1 ]]; then
      LOG_WARN_RANK0 "jax_xla: DUMP_HLO=1 has no effect because XLA_FLAGS from config env/--env takes full ownership. Fix: add --xla_dump_to=<dir> to XLA_FLAGS_APPEND."
    fi
    return 0
  fi
  case ${PRIMUS_ACCELERATOR:-auto} in
    neuron | cpu)
      LOG_INFO_RANK0 "jax_xla: accelerator ${PRIMUS_ACCELERATOR}: managed xla_gpu_* flags not applied."
      return 0
      ;;
  esac
  local managed
  primus_xla_managed_flags managed
  __primus_xla_note jax_xla
  XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }$managed"
  export XLA_FLAGS
}

# __primus_jax_layer: the whole layer.
__primus_jax_layer() {
  local framework=${PRIMUS_FRAMEWORK:-maxtext}
  framework=${framework,,}
  if [[ $framework != maxdiffusion ]]; then
    __primus_xla_managed
    primus_env_default XLA_PYTHON_CLIENT_MEM_FRACTION .97 jax_xla
    primus_env_default TF_CPP_MIN_LOG_LEVEL 2 jax_xla
  fi
  # Cost, not a rule: with NNODES unset, empty or 1 the decision has nothing to
  # set (jax_layer.py decides NNODES > 1 itself), so a single node sourcing this
  # file by hand starts no Python for it.
  if [[ -n ${NNODES-} && $NNODES != 1 ]]; then
    primus_env_ask jax jax_xla ||
      LOG_WARN_RANK0 "jax_xla: the JAX coordinator's decision could not run ($PRIMUS_ENV_ASK_FAILED); no coordinator was set. Fix: run 'make setup' (or set PRIMUS_PYTHON to a python3 with the project's requirements), or export them yourself."
  fi
  primus_xla_apply_append
  LOG_INFO_RANK0 "jax_xla: framework=$framework XLA_FLAGS=${XLA_FLAGS-}"
}

__primus_jax_layer
