# shellcheck shell=bash
# runner/lib/common.sh: logging, errors, paths and the Python entry; secret
# masking is runner/lib/secrets.sh, which it sources.
#
# Sourced by every runner script (and safe to source by hand): it defines
# functions and a few PRIMUS_* variables, never changes shell options, never
# exits the caller's shell on its own.
#
# Logging (docs/run-on-one-node.md "What you see, and where it goes"): LOG_DEBUG / LOG_INFO / LOG_WARN / LOG_ERROR and
# *_RANK0 variants; prefix [NODE-<NODE_RANK>(<host>)]; PRIMUS_LOG_LEVEL
# DEBUG|INFO|WARN|ERROR; PRIMUS_LOG_TIMESTAMP=1 adds a UTC timestamp;
# PRIMUS_LOG_COLOR=1 colours, off automatically when the stream is not a TTY.
# Every level goes to stderr (one stream: lines stay in order through pipes).

if [[ -n ${__PRIMUS_COMMON_SH:-} ]]; then
  return 0
fi
__PRIMUS_COMMON_SH=1

# primus_dir_of VAR PATH: PATH's directory, as dirname(1) gives it, without a
# process (trailing slashes ignored; "." for a bare name, "/" for /x).
primus_dir_of() {
  local __primus_p=$2
  while [[ $__primus_p == ?*/ ]]; do __primus_p=${__primus_p%/}; done
  case $__primus_p in
    /) ;;
    */*)
      __primus_p=${__primus_p%/*}
      while [[ $__primus_p == ?*/ ]]; do __primus_p=${__primus_p%/}; done
      __primus_p=${__primus_p:-/}
      ;;
    *) __primus_p=. ;;
  esac
  printf -v "$1" '%s' "$__primus_p"
}

# primus_abs_path VAR PATH: PATH made absolute against $PWD, '.' and '..'
# resolved by name as `cd PATH && pwd` does (symlinks kept), without a process.
primus_abs_path() {
  local __primus_rest=$2 __primus_part __primus_out=""
  [[ $__primus_rest == /* ]] || __primus_rest=$PWD/$__primus_rest
  while [[ -n $__primus_rest ]]; do
    __primus_part=${__primus_rest%%/*}
    if [[ $__primus_rest == */* ]]; then __primus_rest=${__primus_rest#*/}; else __primus_rest=""; fi
    case $__primus_part in
      "" | .) ;;
      ..) __primus_out=${__primus_out%/*} ;;
      *) __primus_out+=/$__primus_part ;;
    esac
  done
  printf -v "$1" '%s' "${__primus_out:-/}"
}

# Libraries: facts shared with Python (generated from the registry) and the one
# help printer, primus_usage FILE.
__primus_lib_dir=""
primus_dir_of __primus_lib_dir "${BASH_SOURCE[0]}"
# shellcheck source=runner/lib/facts.sh
source "$__primus_lib_dir/facts.sh"
# Builtin-only stand-ins for date, mktemp and `IFS= read`.
# shellcheck source=runner/lib/nofork.sh
source "$__primus_lib_dir/nofork.sh"
# shellcheck source=runner/lib/usage.sh
source "$__primus_lib_dir/usage.sh"
# The secret-name rule, masking and argv hygiene (docs/security.md "Secrets").
# shellcheck source=runner/lib/secrets.sh
source "$__primus_lib_dir/secrets.sh"
# The early log's spool and its copies (the logger asks primus_log_spool_check).
# shellcheck source=runner/lib/log_spool.sh
source "$__primus_lib_dir/log_spool.sh"
unset __primus_lib_dir

# Exit codes (docs/exit-codes.md "The exit-code table"): PRIMUS_EXIT_OK/MISSING/INVALID/RUNTIME and the hook
# protocol's PRIMUS_HOOK_EXIT_MISSING/CONFIG come from facts.sh (registry shared_facts).

if [[ -z ${PRIMUS_RUNNER_DIR:-} ]]; then
  primus_dir_of PRIMUS_RUNNER_DIR "${BASH_SOURCE[0]}"
  primus_abs_path PRIMUS_RUNNER_DIR "$PRIMUS_RUNNER_DIR/.."
fi
[[ -n ${PRIMUS_ROOT:-} ]] || primus_abs_path PRIMUS_ROOT "$PRIMUS_RUNNER_DIR/.."
export PRIMUS_RUNNER_DIR PRIMUS_ROOT

# __primus_short_host: set __PRIMUS_HOST to this host's short name (once).
# The kernel's own answer first: an exported HOSTNAME can be inherited from
# another machine (sbatch/srun propagate the submitting shell's environment).
__primus_short_host() {
  local host=""
  { read -r host </proc/sys/kernel/hostname; } 2>/dev/null || host=""
  [[ -n $host ]] || host=${HOSTNAME:-}
  [[ -n $host ]] || host=$(hostname 2>/dev/null || echo localhost)
  __PRIMUS_HOST=${host%%.*}
}

# __primus_level_number VAR LEVEL: store LEVEL's rank in VAR (PRIMUS_LOG_LEVELS from
# runner/lib/facts.sh, the registry's shared_facts; an unknown level is the default's).
__primus_level_number() {
  local rank=${PRIMUS_LOG_LEVELS[${2^^}]-}
  [[ -n $rank ]] || rank=${PRIMUS_LOG_LEVELS[$PRIMUS_LOG_LEVEL_DEFAULT]}
  printf -v "$1" '%s' "$rank"
}

# __primus_switch_on VALUE: VALUE switches a log option on (PRIMUS_LOG_SWITCH_ON).
__primus_switch_on() {
  local on
  for on in "${PRIMUS_LOG_SWITCH_ON[@]}"; do [[ $1 == "$on" ]] && return 0; done
  return 1
}

__PRIMUS_STAMP_AT="" __PRIMUS_STAMP=""
__primus_log() {
  local level=$1
  shift
  # The ranks (PRIMUS_LOG_LEVELS from runner/lib/facts.sh, the registry's
  # shared_facts; an unknown level is the default's), inline: this runs for
  # every line, filtered or not.
  local want=${PRIMUS_LOG_LEVELS[${PRIMUS_LOG_LEVEL:-INFO}]-} have=${PRIMUS_LOG_LEVELS[$level]-}
  [[ -n $want ]] || __primus_level_number want "${PRIMUS_LOG_LEVEL:-INFO}"
  [[ -n $have ]] || __primus_level_number have "$level"
  ((have >= want)) || return 0
  [[ -z $__PRIMUS_SPOOL_PIDS ]] || primus_log_spool_check
  # Every level on stderr: one stream keeps the launcher's lines in order
  # through pipes (docs/run-on-one-node.md "What you see, and where it goes"); stdout is the workload's and the
  # commands' data (env list, config show).
  local fd=2
  local stamp="" tag="[$level]"
  if __primus_switch_on "${PRIMUS_LOG_TIMESTAMP:-1}"; then
    # The date of this second, made once per second.
    if [[ $__PRIMUS_STAMP_AT != "$EPOCHSECONDS" ]]; then
      __PRIMUS_STAMP_AT=$EPOCHSECONDS
      primus_utc_now __PRIMUS_STAMP - "$__PRIMUS_STAMP_AT"
    fi
    stamp="[$__PRIMUS_STAMP] "
  fi
  if __primus_switch_on "${PRIMUS_LOG_COLOR:-1}" && [[ -t $fd ]]; then
    case $level in
      DEBUG) tag=$'\e[36m'"$tag"$'\e[0m' ;;
      INFO) tag=$'\e[32m'"$tag"$'\e[0m' ;;
      WARN) tag=$'\e[33m'"$tag"$'\e[0m' ;;
      ERROR) tag=$'\e[31m'"$tag"$'\e[0m' ;;
    esac
  fi
  local message line
  primus_mask_into message "$*"
  [[ -n ${__PRIMUS_HOST:-} ]] || __primus_short_host
  if [[ $message != *$'\n'* ]]; then
    printf '%s[NODE-%s(%s)] %s %s\n' "$stamp" "${NODE_RANK:-0}" "$__PRIMUS_HOST" \
      "$tag" "$message" >&"$fd" && return 0
    # A spool copy that died since the check above (not yet reaped): again,
    # directly. A subshell of the launcher (the hook runner) only points its own
    # stderr at the console; the launcher says so at its next line.
    [[ -n $__PRIMUS_SPOOL_PIDS ]] || return 1
    if [[ $BASHPID == "$__PRIMUS_SPOOL_OWNER" ]]; then
      primus_log_spool_check failed
    else
      exec 2>&"$__PRIMUS_SPOOL_ERR"
    fi
    printf '%s[NODE-%s(%s)] %s %s\n' "$stamp" "${NODE_RANK:-0}" "$__PRIMUS_HOST" \
      "$tag" "$message" >&"$fd"
    return
  fi
  # A multi-line message is masked once and every line gets the prefix.
  while primus_read line || [[ -n $line ]]; do
    printf '%s[NODE-%s(%s)] %s %s\n' "$stamp" "${NODE_RANK:-0}" "$__PRIMUS_HOST" \
      "$tag" "$line" >&"$fd"
  done <<<"$message"
}

# Each logger runs untraced (its text may hold a secret before masking).
LOG_DEBUG() {
  { local __xt=$-; set +x; } 2>/dev/null
  __primus_log DEBUG "$@"
  [[ $__xt != *x* ]] || set -x
}
LOG_INFO() {
  { local __xt=$-; set +x; } 2>/dev/null
  __primus_log INFO "$@"
  [[ $__xt != *x* ]] || set -x
}
LOG_WARN() {
  { local __xt=$-; set +x; } 2>/dev/null
  __primus_log WARN "$@"
  [[ $__xt != *x* ]] || set -x
}
LOG_ERROR() {
  { local __xt=$-; set +x; } 2>/dev/null
  __primus_log ERROR "$@"
  [[ $__xt != *x* ]] || set -x
}

__primus_is_rank0() { [[ ${NODE_RANK:-0} =~ ^0*$ ]]; }
LOG_DEBUG_RANK0() { if __primus_is_rank0; then LOG_DEBUG "$@"; fi; }
LOG_INFO_RANK0() { if __primus_is_rank0; then LOG_INFO "$@"; fi; }
LOG_WARN_RANK0() { if __primus_is_rank0; then LOG_WARN "$@"; fi; }
LOG_ERROR_RANK0() { if __primus_is_rank0; then LOG_ERROR "$@"; fi; }

# primus_die CODE MESSAGE...: log MESSAGE as an error and exit with CODE.
# Only for executables; sourced files return instead.
primus_die() {
  local code=$1
  shift
  LOG_ERROR "$@"
  exit "$code"
}


# primus_bad_usage COMMAND MESSAGE: log MESSAGE, point at COMMAND --help, exit 2.
primus_bad_usage() {
  LOG_ERROR "$2"
  echo "Run '$1 --help' for the accepted options." >&2
  exit "$PRIMUS_EXIT_INVALID"
}

# primus_need_value COMMAND OPTION REMAINING: OPTION takes a value; REMAINING
# is how many arguments are left including OPTION.
primus_need_value() {
  (($3 >= 2)) || primus_bad_usage "$1" "option $2 needs a value."
}

# primus_require_command NAME [HINT]: exit 1 when NAME is not on PATH.
primus_require_command() {
  command -v "$1" >/dev/null 2>&1 ||
    primus_die "$PRIMUS_EXIT_MISSING" "required command '$1' not found on PATH.${2:+ $2}"
}

# primus_require_file PATH [WHAT]: exit 1 when PATH is not a readable file.
primus_require_file() {
  [[ -f $1 && -r $1 ]] ||
    primus_die "$PRIMUS_EXIT_MISSING" "${2:-file} '$1' not found or not readable."
}

# primus_is_one_of WORD LIST...: status 0 when WORD is one of LIST (a registry
# list from runner/lib/facts.sh: PRIMUS_NODE_MODES, PRIMUS_RUN_MODES, ...).
primus_is_one_of() {
  local __primus_word=$1 __primus_item
  shift
  for __primus_item in "$@"; do
    [[ $__primus_word != "$__primus_item" ]] || return 0
  done
  return 1
}

# primus_phase_mark NAME: note that the launch phase NAME ended now (bash's
# EPOCHREALTIME, no process) in PRIMUS_PHASE_MARKS (`start=T plan=T ...`), which
# the run monitor gets as PRIMUS_LAUNCH_PHASES (python/primus_runner/monitor/phases.py).
primus_phase_mark() {
  PRIMUS_PHASE_MARKS+=" $1=$EPOCHREALTIME"
}

# primus_pick_python: set PRIMUS_PYTHON once (PRIMUS_PYTHON, else the project's
# .venv, else python3), without starting an interpreter.
primus_pick_python() {
  if [[ -z ${PRIMUS_PYTHON:-} ]]; then
    if [[ -x $PRIMUS_ROOT/.venv/bin/python ]]; then
      PRIMUS_PYTHON=$PRIMUS_ROOT/.venv/bin/python
    else
      PRIMUS_PYTHON=python3
    fi
  fi
  export PRIMUS_PYTHON
}

# primus_require_python: primus_pick_python, and a clean error (status 1) when
# the interpreter picked is not an executable: for the entry points, so a bad
# PRIMUS_PYTHON never surfaces as a bash line number (base_env.sh, sourced,
# falls back quietly instead).
primus_require_python() {
  primus_pick_python
  command -v "$PRIMUS_PYTHON" >/dev/null 2>&1 && return 0
  LOG_ERROR "PRIMUS_PYTHON='$PRIMUS_PYTHON' is not an executable Python; accepted: a python3 (>= 3.10, pyproject.toml) with PyYAML, e.g. $PRIMUS_ROOT/.venv/bin/python after 'make setup'. Fix: unset PRIMUS_PYTHON or point it at one."
  return "$PRIMUS_EXIT_MISSING"
}

# primus_python ARGS...: run `python3 -m primus_runner ARGS...` with the
# package on PYTHONPATH (works with or without pip install).
primus_python() {
  primus_pick_python
  PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" "$PRIMUS_PYTHON" -m primus_runner "$@"
}

# primus_nics_get SCRIPT VAR [OPTION WHAT]... -- ARGS...: the main of the helpers
# that print one network value (runner/helpers/envs/get_*.sh): -h/--help prints
# SCRIPT's header; each OPTION takes a value (OPTION V or OPTION=V; WHAT names it
# in the synopsis); anything else is exit 2; then `nics --get VAR`.
primus_nics_get() {
  local script=$1 var=$2 known=" " synopsis name
  local -a args=()
  shift 2
  synopsis="usage: ${script##*/}"
  while [[ $1 != -- ]]; do
    known+="$1 "
    synopsis+=" [$1 $2]"
    shift 2
  done
  shift
  while (($#)); do
    name=${1%%=*}
    case $1 in -h | --help) primus_usage "$script"; return 0 ;; esac
    [[ $known == *" $name "* ]] || primus_die "$PRIMUS_EXIT_INVALID" "unknown argument '$1'; $synopsis"
    if [[ $1 == *=* ]]; then
      args+=("$name" "${1#*=}")
      shift
    else
      (($# >= 2)) || primus_die "$PRIMUS_EXIT_INVALID" "$1 needs a value; $synopsis"
      args+=("$1" "$2")
      shift 2
    fi
  done
  primus_python nics "${args[@]}" --get "$var"
}

# primus_read_nul_exports: read NAME\0VALUE\0 records on stdin and export each
# (values are assigned with printf -v, never evaluated). Names are checked.
primus_read_nul_exports() {
  { local __xt=$-; set +x; } 2>/dev/null
  local name value
  while primus_read -d '' name && primus_read -d '' value; do
    if [[ ! $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      LOG_ERROR "refusing to export invalid variable name '$name'"
      [[ $__xt != *x* ]] || set -x
      return "$PRIMUS_EXIT_INVALID"
    fi
    printf -v "$name" '%s' "$value"
    export "${name?}"
    primus_secret_note "$name"
  done
  [[ $__xt != *x* ]] || set -x
}
