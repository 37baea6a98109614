# shellcheck shell=bash
# runner/lib/env_origin.sh: who set each variable, and the precedence rule of the
# environment layers (SPEC section 3): a value the user set is never replaced.
# A library: it only defines functions (and the origin map, when absent).
#
#   primus_env_user_owns NAME              true when NAME is the user's value
#   primus_env_default NAME VALUE ORIGIN   set NAME unless the user owns it (layers)
#   primus_env_fallback NAME VALUE ORIGIN  set NAME only when unset (base defaults)
#   primus_env_note_origin NAME ORIGIN     record who set NAME (hook, cli, ...)
#   primus_env_export_origins              PRIMUS_ENV_ORIGINS="NAME:origin ..."
#
# Origins live in the associative array __PRIMUS_ORIGIN; `primus-cli env show`
# reads them back from PRIMUS_ENV_ORIGINS. Names listed in PRIMUS_DETECTED_VARS
# (exported by the launcher for values it detected or defaulted) are not the user's.
# The Python decisions a layer asks for (python/primus_runner/launch/
# neuron_layer.py) read ownership from those two exports by this same rule.

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
