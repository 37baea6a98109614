#!/usr/bin/env bash
# runner/helpers/envs/env-show.sh: `primus-cli env show`: the effective value of
# each launcher-managed variable and where it came from.
#
# Usage: env-show.sh [--format table|tsv] [--all] [--reload]
#                    [--env KEY=VALUE]... [-- WORKLOAD ARGS...]
#
# Without PRIMUS_ENV_ORIGINS in the environment (or with --reload, or --env)
# it loads the layers (primus-env.sh) in its own process, as a launch would,
# validation deferred, logs at ERROR only; then applies each --env KEY=VALUE.
# Inside a launched or sourced environment (PRIMUS_ENV_ORIGINS set) it reports
# the current values with the recorded origins.
#
# Origins: default (base_env.sh reference default), detected (devices/nics
# helpers), launcher (resolved by primus-cli before the layers), gpu layer
# (MI300X.sh, MI325X.sh, MI355X.sh), neuron layer, jax layer, deterministic
# (PRIMUS_DETERMINISTIC=1), user export, hook, --env; "a + b" when a layer
# appended to a user's value. Secret values (*_TOKEN, *_API_KEY, ...; docs/security.md "Security") are shown as ****.
#
# Options:
#   --format table   aligned columns NAME ORIGIN VALUE (default)
#   --format tsv     NAME<TAB>ORIGIN<TAB>VALUE, newlines in values shown as \n
#   --all            also list every other exported variable of the reference
#                    families (NCCL_*, RCCL_*, HSA_*, NEURON_*, XLA_*, ...) as user
#   --reload         recompute even when PRIMUS_ENV_ORIGINS is set
#   --env KEY=VALUE  apply like primus-cli direct --env (origin --env)
#   --debug, --dry-run, --config FILE   primus-cli global options: accepted
#                    and ignored (env show prints values, not logs)
#   -h, --help       this text
set -euo pipefail

PRIMUS_ENVS_DIR=$(cd -P -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")" && pwd)
PRIMUS_FAMILY_RE='^(NCCL|RCCL|HSA|HIP|ROCBLAS|HIPBLASLT|TORCH|CUDA|NVTE|PRIMUS|NEURON|XLA|JAX|TF|HF|WANDB|MLFLOW|DATABRICKS|GLOO|MASTER|TE|GPU|DUMP)_|^(NNODES|NODE_RANK|GPUS_PER_NODE|DATA_PATH|PYTHONPATH|IP_INTERFACE)$'

usage() {
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../../lib/usage.sh"
  primus_usage "${BASH_SOURCE[0]}"
}

# origin_label TOKEN: the human label of one recorded origin ("a+b" allowed).
origin_label() {
  local label part out=""
  local -a parts
  primus_split parts + "$1"  # runner/lib/common.sh
  for part in "${parts[@]}"; do
    if [[ " ${PRIMUS_GPU_MODELS[*]} " == *" $part "* ]]; then  # runner/lib/facts.sh
      out+="${out:+ + }gpu layer ($part.sh)"
      continue
    fi
    case $part in
      default) label="default (base_env.sh)" ;;
      detected) label="detected" ;;
      launcher) label="launcher" ;;
      deterministic) label="deterministic (PRIMUS_DETERMINISTIC=1)" ;;
      neuron) label="neuron layer (neuron.sh)" ;;
      jax_xla) label="jax layer (jax_xla.sh)" ;;
      append) label="XLA_FLAGS_APPEND" ;;
      user) label="user export" ;;
      hook) label="hook" ;;
      cli) label="--env" ;;
      *) label=$part ;;
    esac
    out+="${out:+ + }$label"
  done
  printf '%s' "$out"
}

# load_layers ARGS...: source the loader here, quietly, validation deferred.
load_layers() {
  local level=${PRIMUS_LOG_LEVEL-} had_level=0
  [[ -v PRIMUS_LOG_LEVEL ]] && had_level=1
  export PRIMUS_LOG_LEVEL=ERROR PRIMUS_ENV_DEFER_VALIDATION=1
  unset PRIMUS_ENV_ORIGINS
  # shellcheck source=runner/helpers/envs/primus-env.sh
  source "$PRIMUS_ENVS_DIR/primus-env.sh" -- "$@" || true
  if ((had_level)); then PRIMUS_LOG_LEVEL=$level; else unset PRIMUS_LOG_LEVEL; fi
  unset PRIMUS_ENV_DEFER_VALIDATION
}

# apply_cli_env KEY=VALUE...: the --env values, recorded as origin cli.
apply_cli_env() {
  local item name
  for item in "$@"; do
    name=${item%%=*}
    printf -v "$name" '%s' "${item#*=}"
    export "${name?}"
    primus_secret_note "$name"
    __PRIMUS_ORIGIN[$name]=cli
  done
  if declare -F primus_xla_apply_append >/dev/null; then primus_xla_apply_append; fi
}

# read_recorded_origins: __PRIMUS_ORIGIN from PRIMUS_ENV_ORIGINS.
read_recorded_origins() {
  declare -gA __PRIMUS_ORIGIN=()
  local entry
  for entry in ${PRIMUS_ENV_ORIGINS-}; do
    __PRIMUS_ORIGIN[${entry%%:*}]=${entry#*:}
  done
}

# collect_names ALL: the names to show, sorted, into NAMES.
collect_names() {
  local all=$1 name
  local -A seen=()
  for name in "${!__PRIMUS_ORIGIN[@]}"; do seen[$name]=1; done
  if ((all)); then
    while read -r name; do
      [[ $name =~ $PRIMUS_FAMILY_RE && $name != PRIMUS_ENV_ORIGINS ]] && seen[$name]=1
    done < <(compgen -e)
  fi
  mapfile -t NAMES < <(printf '%s\n' "${!seen[@]}" | LC_ALL=C sort)
}

# print_rows FORMAT: one row per name in NAMES.
print_rows() {
  local format=$1 name value origin
  local width=4
  for name in "${NAMES[@]}"; do
    [[ -v $name ]] || continue
    ((${#name} > width)) && width=${#name}
  done
  [[ $format == table ]] && printf "%-${width}s  %-28s %s\n" NAME ORIGIN VALUE
  for name in "${NAMES[@]}"; do
    [[ -v $name ]] || continue
    if primus_is_secret_name "$name" && [[ -n ${!name} ]]; then
      value='****'
    else
      primus_mask_into value "${!name}"
    fi
    value=${value//$'\n'/\\n}
    value=${value//$'\t'/\\t}
    origin=$(origin_label "${__PRIMUS_ORIGIN[$name]:-user}")
    if [[ $format == tsv ]]; then
      printf '%s\t%s\t%s\n' "$name" "$origin" "$value"
    else
      printf "%-${width}s  %-28s %s\n" "$name" "$origin" "$value"
    fi
  done
}

main() {
  local format=table all=0 reload=0
  local -a cli_env=() workload=()
  while (($#)); do
    case $1 in
      -h | --help) usage; return 0 ;;
      --format)
        [[ ${2-} == table || ${2-} == tsv ]] || {
          echo "env-show: error: --format '${2-}' is not accepted; accepted: table, tsv." >&2
          return 2
        }
        format=$2
        shift 2
        ;;
      --all) all=1; shift ;;
      --reload) reload=1; shift ;;
      # primus-cli's global options, handed on by `primus-cli env show`.
      --dry-run) shift ;;
      --debug) shift ;;
      --config) shift 2 ;;
      --env)
        if [[ ! ${2-} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then
          echo "env-show: error: --env '${2-}' is not KEY=VALUE; accepted: NAME=VALUE with NAME a shell variable name. Fix: e.g. --env NCCL_DEBUG=INFO." >&2
          return 2
        fi
        cli_env+=("$2")
        shift 2
        ;;
      --) shift; workload=("$@"); break ;;
      *)
        echo "env-show: error: unknown option '$1'; accepted: --format --all --reload --env -- (see --help)." >&2
        return 2
        ;;
    esac
  done
  if ((reload)) || ((${#cli_env[@]})) || [[ ! -v PRIMUS_ENV_ORIGINS ]]; then
    load_layers "${workload[@]}"
    apply_cli_env "${cli_env[@]}"
  else
    # shellcheck source=runner/lib/common.sh
    source "$PRIMUS_ENVS_DIR/../../lib/common.sh"
    read_recorded_origins
  fi
  local -a NAMES=()
  collect_names "$all"
  print_rows "$format"
}

main "$@"
