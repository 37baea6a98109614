# shellcheck shell=bash
# runner/helpers/envs/primus-env.sh: the environment layer loader (docs/configuration.md,
# "Environment layers").
#
#   source runner/helpers/envs/primus-env.sh [-- WORKLOAD ARGS...]
#   source runner/helpers/envs/primus-env.sh --help    this help; loads nothing
#
# Order (each layer only fills what the user did not export):
#   1. base_env.sh                reference defaults, detection (once)
#   2. accelerator layer          PRIMUS_ACCELERATOR=rocm: <PRIMUS_GPU_MODEL>.sh
#                                 (MI300X.sh, MI325X.sh, MI355X.sh; another or no
#                                 model: a warning, base only);
#                                 PRIMUS_ACCELERATOR=neuron: neuron.sh
#   3. framework layer            jax_xla.sh when the workload is JAX: PRIMUS_FRAMEWORK
#                                 is maxtext, jax or maxdiffusion; or, when unset, a
#                                 workload argument given after `--` names one of
#                                 them (`maxtext`, `--backend=maxtext`,
#                                 `examples/maxtext/x.yaml`); the match is exported
#                                 as PRIMUS_FRAMEWORK
#   4. validation                 `python3 -m primus_runner env check` (every
#                                 rule, the Neuron ones included)
#                                 (errors: return 2). PRIMUS_SKIP_VALIDATION=1 skips
#                                 it with a warning; PRIMUS_ENV_DEFER_VALIDATION=1
#                                 (the launcher, which runs env check itself after
#                                 hooks and --env) skips only env check, silently.
# PRIMUS_DEBUG=1 traces the loader (set -x) and only the loader.
# Returns 0, or 2 when validation fails; never exits the caller's shell; leaves
# the caller's shell options as they were. Guarded: a second source in the same
# shell does nothing.
#
# Launcher contract: when the launcher has detected devices and NICs it exports
# PRIMUS_DETECTION_DONE=1 and the values (see base_env.sh), and lists in
# PRIMUS_DETECTED_VARS the names whose values it defaulted or detected itself.

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "$0")/../../lib/usage.sh"
  primus_usage "$0"
  case ${1:-} in -h | --help) exit 0 ;; esac
  echo "primus-env.sh must be sourced: source $0" >&2
  exit 2
fi

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../../lib/usage.sh"
  primus_usage "${BASH_SOURCE[0]}"
  return 0
fi

if [[ -n ${__PRIMUS_ENV_LOADED:-} ]]; then
  return 0
fi

# __primus_envs_dir VAR: the directory of this file, through symlinks, as an
# absolute path (without a subshell: the kernel resolves its ..).
__primus_envs_dir() {
  local src=${BASH_SOURCE[1]}
  if [[ -L $src ]]; then src=$(readlink -f -- "$src"); fi
  case $src in */*) src=${src%/*} ;; *) src=. ;; esac
  [[ $src == /* ]] || src=$PWD/$src
  printf -v "$1" '%s' "$src"
}

# __primus_framework_from_args VAR ARGS...: store in VAR the JAX framework a
# workload argument names (maxtext, maxdiffusion, jax); return 1 when none does.
__primus_framework_from_args() {
  local __var=$1 arg word
  shift
  for arg in "$@"; do
    arg=${arg,,}
    for word in maxdiffusion maxtext jax; do
      if [[ $arg =~ (^|[/=:,])${word}([/=:,._-]|$) ]]; then
        printf -v "$__var" '%s' "$word"
        return 0
      fi
    done
  done
  return 1
}

# __primus_layer_accelerator DIR: the ROCm GPU-model layer or the Neuron layer.
__primus_layer_accelerator() {
  local dir=$1 model accepted
  case ${PRIMUS_ACCELERATOR:-auto} in
    rocm)
      model=${PRIMUS_GPU_MODEL:-}
      model=${model^^}
      # The models with a layer: PRIMUS_GPU_MODELS (runner/lib/facts.sh, registry shared_facts).
      if [[ -n $model && " ${PRIMUS_GPU_MODELS[*]} " == *" $model "* ]]; then
        LOG_INFO_RANK0 "primus-env: GPU-model layer $model.sh"
        # shellcheck source=runner/helpers/envs/MI300X.sh
        source "$dir/$model.sh"
      else
        printf -v accepted '%s, ' "${PRIMUS_GPU_MODELS[@]}"
        accepted=${accepted%, }
        LOG_WARN_RANK0 "primus-env: GPU model '${PRIMUS_GPU_MODEL:-unknown}' has no layer (accepted: $accepted); using the base defaults only. Fix: export PRIMUS_GPU_MODEL=<one of $accepted> if this GPU is one of them."
      fi
      ;;
    neuron)
      # shellcheck source=runner/helpers/envs/neuron.sh
      source "$dir/neuron.sh"
      ;;
  esac
  return 0
}

# __primus_layer_framework DIR ARGS...: jax_xla.sh for JAX workloads.
__primus_layer_framework() {
  local dir=$1 framework
  shift
  framework=${PRIMUS_FRAMEWORK:-}
  if [[ -z $framework ]] && __primus_framework_from_args framework "$@"; then
    primus_env_default PRIMUS_FRAMEWORK "$framework" detected
  fi
  case ${framework,,} in
    maxtext | jax | maxdiffusion)
      # shellcheck source=runner/helpers/envs/jax_xla.sh
      source "$dir/jax_xla.sh"
      ;;
  esac
  return 0
}

# __primus_layer_validation: the registry's env check (every rule, Neuron included).
__primus_layer_validation() {
  if [[ ${PRIMUS_SKIP_VALIDATION:-0} == 1 ]]; then
    LOG_WARN_RANK0 "primus-env: PRIMUS_SKIP_VALIDATION=1: environment validation skipped (not recommended)."
    return 0
  fi
  [[ ${PRIMUS_ENV_DEFER_VALIDATION:-0} == 1 ]] && return 0
  # shellcheck source=runner/lib/validation.sh
  source "$1/../../lib/validation.sh"
  primus_env_check primus-env
}

# __primus_env_main ARGS...: load every layer in order.
__primus_env_main() {
  local dir rc=0
  __primus_envs_dir dir
  # shellcheck source=runner/helpers/envs/base_env.sh
  source "$dir/base_env.sh"
  # PRIMUS_DEBUG=1: trace the layers after base_env too, secrets masked.
  primus_debug_trace_begin
  __primus_layer_accelerator "$dir"
  if [[ ${1-} == -- ]]; then
    shift
    __primus_layer_framework "$dir" "$@"
  else
    __primus_layer_framework "$dir"  # a caller's own positional parameters are not workload words
  fi
  primus_env_export_origins
  # The layers refuse nothing: every refusal is a rule of the rules engine.
  __primus_layer_validation "$dir" || rc=2
  return "$rc"
}

__PRIMUS_ENV_LOADED=1
__primus_env_rc=0
__primus_env_dir=
__primus_envs_dir __primus_env_dir
# shellcheck source=runner/lib/shellopts.sh
source "$__primus_env_dir/../../lib/shellopts.sh"
unset __primus_env_dir
primus_opts_save
__primus_env_main "$@" || __primus_env_rc=$?
primus_opts_restore
# The loader's status (0, or 2 when validation failed) is the source's status.
__primus_env_status() { return "$__primus_env_rc"; }
__primus_env_status
