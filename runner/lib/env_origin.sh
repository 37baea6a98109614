# shellcheck shell=bash
# runner/lib/env_origin.sh: who set each variable, and the precedence rule of the
# environment layers (docs/configuration.md "Configuration"): a value the user set is never replaced.
# A library: it only defines functions (and the origin map, when absent).
#
#   primus_env_user_owns NAME              true when NAME is the user's value
#   primus_env_default NAME VALUE ORIGIN   set NAME unless the user owns it (layers)
#   primus_env_fallback NAME VALUE ORIGIN  set NAME only when unset (base defaults)
#   primus_env_note_origin NAME ORIGIN     record who set NAME (hook, cli, ...)
#   primus_env_export_origins              PRIMUS_ENV_ORIGINS="NAME:origin ..."
#   primus_env_ask WHICH ORIGIN            apply a layer's Python decision
#
# Origins live in the associative array __PRIMUS_ORIGIN; `primus-cli env show`
# reads them back from PRIMUS_ENV_ORIGINS. Names listed in PRIMUS_DETECTED_VARS
# (exported by the launcher for values it detected or defaulted) are not the user's.
# The Python decisions a layer asks for (primus_env_ask; python/primus_runner/
# launch/layers.py) read ownership from those two exports by this same rule.

if ! declare -p __PRIMUS_ORIGIN >/dev/null 2>&1; then
  declare -gA __PRIMUS_ORIGIN=()
fi

# primus_env_user_owns NAME: true when NAME was set before any layer touched it
# and the launcher did not list it in PRIMUS_DETECTED_VARS. Records the answer.
primus_env_user_owns() {
  local name=$1 origin=${__PRIMUS_ORIGIN[$1]-}
  if [[ -n $origin ]]; then
    [[ $origin == user* ]]
    return
  fi
  [[ -v $name ]] || return 1
  if [[ " ${PRIMUS_DETECTED_VARS-} " == *" $name "* ]]; then
    __PRIMUS_ORIGIN[$name]=launcher
    return 1
  fi
  __PRIMUS_ORIGIN[$name]=user
  export "${name?}"
  return 0
}

# primus_env_default NAME VALUE ORIGIN: export NAME=VALUE unless the user owns
# NAME; a value set by a lower layer (or detected) is replaced.
primus_env_default() {
  primus_env_user_owns "$1" && return 0
  printf -v "$1" '%s' "$2"
  export "${1?}"
  __PRIMUS_ORIGIN[$1]=$3
}

# primus_env_fallback NAME VALUE ORIGIN: export NAME=VALUE only when NAME is
# not set at all (the base defaults: below detection, the launcher and layers).
primus_env_fallback() {
  if primus_env_user_owns "$1" || [[ -v $1 ]]; then
    export "${1?}"
    return 0
  fi
  printf -v "$1" '%s' "$2"
  export "${1?}"
  __PRIMUS_ORIGIN[$1]=$3
}

# primus_env_note_origin NAME ORIGIN: record that ORIGIN (hook, cli, ...) set
# NAME; for the launcher after hooks and --env. Updates PRIMUS_ENV_ORIGINS.
primus_env_note_origin() {
  __PRIMUS_ORIGIN[$1]=$2
  primus_env_export_origins
}

# primus_env_export_origins: PRIMUS_ENV_ORIGINS="NAME:origin ..." for every
# name a layer, detection, hook or --env set, or a layer kept as the user's.
primus_env_export_origins() {
  local name list=""
  for name in "${!__PRIMUS_ORIGIN[@]}"; do
    list+="${list:+ }$name:${__PRIMUS_ORIGIN[$name]}"
  done
  export PRIMUS_ENV_ORIGINS=$list
}

# __primus_env_export_set: export every upper-case shell variable (run in a
# subshell only): a value the caller set without exporting is the user's too.
__primus_env_export_set() {
  local name
  for name in $(compgen -v); do
    [[ $name =~ ^[A-Z][A-Z0-9_]*$ ]] && export "${name?}" 2>/dev/null
  done
  return 0
}

# __primus_env_apply KIND NAME VALUE: one record of a layer's decision, for
# the origin primus_env_ask was given: default (primus_env_default), set
# (exported, the origin recorded), unset (the origin dropped), warn (node rank 0
# only). A name that is not a variable name is ignored.
__primus_env_apply() {
  [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*$ || $1 == warn ]] || return 0
  case $1 in
    default) primus_env_default "$2" "$3" "$__PRIMUS_ENV_ASK_ORIGIN" ;;
    set)
      printf -v "$2" '%s' "$3"
      export "${2?}"
      __PRIMUS_ORIGIN[$2]=$__PRIMUS_ENV_ASK_ORIGIN
      ;;
    unset)
      unset "$2"
      unset '__PRIMUS_ORIGIN[$2]'
      ;;
    warn) LOG_WARN_RANK0 "$3" ;;
  esac
}

# primus_env_ask WHICH ORIGIN: a layer's Python decision (python/primus_runner/
# launch/layers.py: neuron, neuron-slices, jax, jax-workload) for the current
# variables, its records applied with ORIGIN as who set them. Inside
# `primus-cli direct` the launch helper answers (primus_helper_layer,
# runner/lib/launch_helper.sh: no Python start); sourced by hand, one `python3
# -m primus_runner layer WHICH` start, with the caller's unexported variables
# passed too (they are the user's). Status 1 when the decision could not run;
# PRIMUS_ENV_ASK_FAILED then says why. PRIMUS_ENV_ORIGINS is exported before
# and after (the decision reads it; the records change it).
primus_env_ask() {
  PRIMUS_ENV_ASK_FAILED="" __PRIMUS_ENV_ASK_ORIGIN=$2
  primus_env_export_origins
  if declare -F primus_helper_layer >/dev/null && primus_helper_layer "$1" __primus_env_apply; then
    primus_env_export_origins
    return 0
  fi
  local ended=0
  local -a rec
  # mapfile: no IFS= in front of read (runner/lib/nofork.sh) and no record shift
  # after a value that is not UTF-8 (runner/lib/launch_helper.sh).
  while mapfile -n 3 -d '' -t rec && ((${#rec[@]} == 3)); do
    if [[ ${rec[0]} == end ]]; then
      ended=1
      break
    fi
    __primus_env_apply "${rec[@]}"
  done < <(__primus_env_export_set
    primus_python layer "$1" 2>/dev/null)
  primus_env_export_origins
  ((!ended)) || return 0
  # Failure path only: a second start to say why (last line of its stderr).
  PRIMUS_ENV_ASK_FAILED=$({ primus_python layer "$1" 2>&1 >/dev/null || true; } | tail -n 1)
  [[ -n $PRIMUS_ENV_ASK_FAILED ]] || PRIMUS_ENV_ASK_FAILED="$PRIMUS_PYTHON -m primus_runner layer $1 failed"
  return 1
}
