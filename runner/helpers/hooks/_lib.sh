# shellcheck shell=bash
# runner/helpers/hooks/_lib.sh: helpers shared by the bundled hooks (sourced).
#
# Not a hook itself (execute_hooks.sh runs only NN_*.sh / NN_*.py at this level).
# A hook checks its gate variable first, in plain bash, and sources this file
# only when it has work to do, so a hook whose gate is off costs a bash start.
#
# Conventions for hooks (see runner/helpers/execute_hooks.sh --help):
# - stdout is the protocol channel: only env.NAME=VALUE / extra.name=value lines
#   (hook_emit_env / hook_emit_extra); logs and tool output go to stderr.
# - exit 78 = configuration error (the launch exits 2), exit 66 = missing file
#   or dependency (exit 1), anything else non-zero = failure (exit 3).
# - PRIMUS_DRY_RUN=1: change nothing; say what would be done (hook_run does).
# - "unless set" defaults: hook_emit_default (a base_env.sh default does not
#   count as set; your value, --env, detection or an earlier hook do).

# shellcheck source=runner/lib/common.sh
source "${PRIMUS_RUNNER_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/lib/common.sh"

# The hook protocol's codes, from runner/lib/facts.sh (registry shared_facts).
HOOK_EXIT_MISSING=$PRIMUS_HOOK_EXIT_MISSING
HOOK_EXIT_CONFIG=$PRIMUS_HOOK_EXIT_CONFIG
HOOK_SELF=${0##*/}

# hook_dry_run: true under --dry-run.
hook_dry_run() { [[ ${PRIMUS_DRY_RUN:-0} == 1 ]]; }

hook_info() { LOG_INFO "[$HOOK_SELF] $*" >&2; }
hook_warn() { LOG_WARN "[$HOOK_SELF] $*"; }

# hook_config_error MESSAGE: report a configuration error and exit 78 (-> 2).
hook_config_error() {
  LOG_ERROR "[$HOOK_SELF] $*"
  exit "$HOOK_EXIT_CONFIG"
}

# hook_missing MESSAGE: report a missing file/dependency and exit 66 (-> 1).
hook_missing() {
  LOG_ERROR "[$HOOK_SELF] $*"
  exit "$HOOK_EXIT_MISSING"
}

# hook_fail MESSAGE: report a failure and exit 1 (-> 3).
hook_fail() {
  LOG_ERROR "[$HOOK_SELF] $*"
  exit 1
}

# hook_gate NAME: exit 0 (nothing to do) when variable NAME is unset, empty or
# 0; continue when 1; any other value is a configuration error.
hook_gate() {
  local value=${!1:-0}
  case $value in
    0) exit 0 ;;
    1) return 0 ;;
    *) hook_config_error "$1='$value' is not a switch; accepted: 1 (on) or 0 / unset (off)." ;;
  esac
}

# hook_show_cmd VAR CMD...: store CMD quoted for bash (copy-pastable) in VAR.
hook_show_cmd() {
  local __var=$1 __text="" __arg __q
  shift
  for __arg in "$@"; do
    printf -v __q '%q' "$__arg"
    __text+=${__text:+ }$__q
  done
  printf -v "$__var" '%s' "$__text"
}

# hook_run CMD...: run CMD with its output on stderr; under dry run only say so.
hook_run() {
  local shown
  hook_show_cmd shown "$@"
  if hook_dry_run; then
    hook_info "dry run: would run: $shown"
    return 0
  fi
  hook_info "running: $shown"
  "$@" >&2
}

# hook_emit_env NAME VALUE / hook_emit_extra NAME VALUE: protocol lines.
hook_emit_env() { printf 'env.%s=%s\n' "$1" "$2"; }
hook_emit_extra() { printf 'extra.%s=%s\n' "$1" "$2"; }

# hook_origin NAME: print the origin the layers recorded for NAME in
# PRIMUS_ENV_ORIGINS ("NAME:origin ..."; empty when not recorded).
hook_origin() {
  local item
  for item in ${PRIMUS_ENV_ORIGINS-}; do
    if [[ ${item%%:*} == "$1" ]]; then
      printf '%s' "${item#*:}"
      return 0
    fi
  done
}

# hook_is_set NAME: true when NAME has a value that is not a base_env.sh
# reference default (a value you exported, --env, a detected value or an
# earlier hook's value all count as set). The reference launcher's hooks test
# "non-empty", so base_env's own defaults (NCCL_IB_GID_INDEX=3 for instance)
# used to shadow the hook's defaults; here the hook's default replaces them.
hook_is_set() {
  [[ -n ${!1:-} ]] || return 1
  [[ $(hook_origin "$1") != default ]]
}

# hook_value VAR NAME DEFAULT: store in VAR NAME's value when hook_is_set,
# else DEFAULT.
hook_value() {
  if hook_is_set "$2"; then
    printf -v "$1" '%s' "${!2}"
  else
    printf -v "$1" '%s' "$3"
  fi
}

# hook_emit_default NAME DEFAULT: emit env.NAME= its own value when set (see
# hook_is_set), else DEFAULT; the value is also set in this shell.
hook_emit_default() {
  local __v
  hook_value __v "$1" "$2"
  printf -v "$1" '%s' "$__v"
  hook_emit_env "$1" "$__v"
}

# hook_pip ARGS...: $PRIMUS_PYTHON -m pip ARGS (only shown under dry run).
hook_pip() {
  primus_pick_python
  hook_run "$PRIMUS_PYTHON" -m pip "$@"
}

# hook_sysfs PATH: PATH under PRIMUS_SYSFS_ROOT (default /), e.g.
# hook_sysfs /sys/class/infiniband.
hook_sysfs() {
  local root=${PRIMUS_SYSFS_ROOT:-/}
  printf '%s%s' "${root%/}" "$1"
}
