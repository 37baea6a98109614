#!/usr/bin/env bash
# runner/helpers/execute_hooks.sh: run the launch hooks (README "Hooks and patches").
#
# Usage:
#   execute_hooks.sh [--dry-run] [--hooks-dir DIR] --group G --name N -- [workload args...]
#   execute_hooks.sh [--dry-run] [--hooks-dir DIR] <group> <name> [workload args...]
#   execute_hooks.sh [--dry-run] [--label WORD] [--skip-exit CODE] --scripts FILE... [-- workload args...]
# The first form is the launcher's: G and N (the first two workload words, maybe
# empty) are option values and everything after `--` is data, so workload words
# such as --help, --dry-run or --hooks-dir are never taken as this script's options.
#
# Runs, in name order, the global hooks DIR/NN_*.sh and DIR/NN_*.py, then every
# DIR/<group>/<name>/*.sh and *.py (e.g. hooks/train/pretrain/). DIR defaults to
# $PRIMUS_HOOKS_DIR, else runner/helpers/hooks. `.sh` files run with bash, `.py`
# files with $PRIMUS_PYTHON (else python3); each gets the workload args as its
# arguments, and PRIMUS_HOOK_GROUP / PRIMUS_HOOK_NAME / PRIMUS_ROOT /
# PRIMUS_RUNNER_DIR / PRIMUS_PYTHON in its environment. --scripts runs exactly
# the given files instead (execute_patches.sh uses it). --skip-exit CODE: a
# script exiting CODE was skipped (its protocol lines still apply) and the next
# one runs (patches: 2, as the upstream Primus runner's execute_patches.sh).
#
# Protocol (only a hook's stdout is parsed; its stderr passes straight through):
#   env.NAME=VALUE    export NAME=VALUE (VALUE literal: everything after the
#                     first '='); NAME must be a shell identifier.
#   extra.name=value  append `--name value` to the workload args.
#   anything else     shown to the user (on stderr, secrets masked).
# env. values reach the following hooks; extra. options are appended to the
# arguments of the following hooks too.
#
# Gate: a hook may declare in its first 30 lines
#   `# primus-hook-gate: VAR [VAR...]`        open when one VAR is set and not 0
#   `# primus-hook-when-unset: VAR [VAR...]`  open when one VAR is unset or empty
# (values after earlier hooks' env. lines). A hook with declarations whose
# every declaration is closed is not started at all (it would only exit 0).
#
# This script's own stdout carries only NUL-delimited records, in order:
#   env\0NAME\0VALUE\0     and     extra\0NAME\0VALUE\0
# Logs (each hook's duration) go to stderr. Everything on stderr (the hooks'
# own stderr, live, and this script's lines) passes through one masking
# process, in order; it is restarted only when a hook emits a secret env. value,
# so the next hooks' output masks that value too.
#
# Dry run (--dry-run or PRIMUS_DRY_RUN=1): hooks run with PRIMUS_DRY_RUN=1 and
# must change nothing; they print what they would do and the lines they would emit.
#
# Exit codes:
#   0  every hook succeeded
#   1  a hook exited 66 (missing file or dependency), or --scripts names a missing file
#   2  bad arguments; a hook printed an invalid env./extra. line; or a hook
#      exited 78 (configuration error: EX_CONFIG from sysexits.h)
#   3  a hook failed with any other non-zero code (its stdout is shown after
#      its stderr, which was shown as it ran), or ran longer than
#      PRIMUS_HOOK_TIMEOUT seconds (default 1800, 0: no limit) and was stopped
#   128+N  this runner got signal N (TERM, HUP, INT) while a hook ran: the hook's
#      process group got it too, then SIGKILL after PRIMUS_KILL_GRACE
# Each hook runs in a process group of its own (runner/lib/hook_exec.sh) and is
# named on stderr as it starts.
# The first failing hook stops everything. The dedicated codes 66 / 78 (rather
# than 1 / 2) keep a stray `grep`/`ls` failure inside a hook from being
# misreported as a configuration error.
set -euo pipefail
HERE=${BASH_SOURCE[0]%/*}; [[ $HERE != "${BASH_SOURCE[0]}" ]] || HERE=.

# shellcheck source=runner/lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source=runner/lib/hook_exec.sh
source "$HERE/../lib/hook_exec.sh"
# shellcheck source=runner/lib/hook_gates.sh
source "$HERE/../lib/hook_gates.sh"

# The hook protocol's codes, from runner/lib/facts.sh (registry shared_facts).
readonly HOOK_EXIT_MISSING=$PRIMUS_HOOK_EXIT_MISSING HOOK_EXIT_CONFIG=$PRIMUS_HOOK_EXIT_CONFIG

usage() {
  primus_usage "${BASH_SOURCE[0]}"
}

# Results and state shared by the functions below.
DRY_RUN=${PRIMUS_DRY_RUN:-0}
HOOKS_DIR=${PRIMUS_HOOKS_DIR:-$PRIMUS_RUNNER_DIR/helpers/hooks}
LABEL=hook
SKIP_EXIT=""
GROUP="" NAME=""
declare -a SCRIPTS=() WORKLOAD_ARGS=()
declare -a ENV_NAMES=() ENV_VALUES=()
USE_SCRIPTS=0 EXPLICIT_TARGET=0
PRIMUS_MASK_VALUES=()  # a new process: no values yet (arrays are never inherited)

# parse_args ARGS...: fill the globals above from the command line.
parse_args() {
  while (($#)); do
    case $1 in
      -h | --help) usage; exit 0 ;;
      --dry-run) DRY_RUN=1; shift ;;
      --hooks-dir)
        (($# >= 2)) || primus_die "$PRIMUS_EXIT_INVALID" "--hooks-dir needs a directory; usage: execute_hooks.sh [--dry-run] [--hooks-dir DIR] <group> <name> [args...]"
        HOOKS_DIR=$2; shift 2 ;;
      --label)
        (($# >= 2)) || primus_die "$PRIMUS_EXIT_INVALID" "--label needs a word (e.g. patch)"
        LABEL=$2; shift 2 ;;
      --skip-exit)
        (($# >= 2)) && [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$PRIMUS_EXIT_INVALID" "--skip-exit needs an exit code (1-255, e.g. 2)"
        SKIP_EXIT=$2; shift 2 ;;
      --group | --name)
        (($# >= 2)) || primus_die "$PRIMUS_EXIT_INVALID" "$1 needs a value (may be empty); usage: execute_hooks.sh --group G --name N -- [workload args...]"
        if [[ $1 == --group ]]; then GROUP=$2; else NAME=$2; fi
        EXPLICIT_TARGET=1; shift 2 ;;
      --scripts)
        USE_SCRIPTS=1; shift
        while (($#)) && [[ $1 != -- ]]; do SCRIPTS+=("$1"); shift; done
        if (($#)); then shift; fi
        WORKLOAD_ARGS=("$@")
        return 0 ;;
      --) shift; break ;;
      -*) primus_die "$PRIMUS_EXIT_INVALID" "unknown option '$1'; accepted: --dry-run, --hooks-dir DIR, --group G, --name N, --scripts FILE..., --help" ;;
      *) break ;;
    esac
  done
  if ((EXPLICIT_TARGET)); then
    WORKLOAD_ARGS=("$@")
    return 0
  fi
  if (($# < 1)); then
    primus_die "$PRIMUS_EXIT_INVALID" "missing <group>; usage: execute_hooks.sh [--dry-run] [--hooks-dir DIR] <group> <name> [workload args...]"
  fi
  GROUP=$1
  NAME=${2-}
  if (($# >= 2)); then shift 2; else shift; fi
  WORKLOAD_ARGS=("$@")
}

# is_path_word WORD: true when WORD can name a hooks sub-directory.
is_path_word() {
  [[ -n $1 && $1 != . && $1 != .. && $1 != */* && $1 != -* ]]
}

# discover_hooks: fill SCRIPTS with the global hooks then the group hooks.
discover_hooks() {
  if [[ ! -d $HOOKS_DIR ]]; then
    if [[ -n ${PRIMUS_HOOKS_DIR:-} || $HOOKS_DIR != "$PRIMUS_RUNNER_DIR/helpers/hooks" ]]; then
      primus_die "$PRIMUS_EXIT_MISSING" "hooks directory '$HOOKS_DIR' (--hooks-dir / PRIMUS_HOOKS_DIR) does not exist; point it at a directory of NN_*.sh hooks."
    fi
    return 0
  fi
  local LC_ALL=C f
  local -a found
  shopt -s nullglob
  # *.[sp][hy] keeps .sh and .py together in one name-ordered glob.
  found=("$HOOKS_DIR"/[0-9][0-9]_*.[sp][hy])
  if is_path_word "$GROUP" && is_path_word "$NAME" && [[ -d $HOOKS_DIR/$GROUP/$NAME ]]; then
    found+=("$HOOKS_DIR/$GROUP/$NAME"/*.[sp][hy])
  fi
  shopt -u nullglob
  for f in "${found[@]}"; do
    case $f in
      *.sh | *.py) [[ -f $f ]] && SCRIPTS+=("$f") ;;
    esac
  done
}

# check_scripts: every --scripts file must exist.
check_scripts() {
  local f
  for f in "${SCRIPTS[@]}"; do
    [[ -f $f ]] || primus_die "$PRIMUS_EXIT_MISSING" "$LABEL script '$f' not found; give an existing .sh or .py file."
    case $f in
      *.sh | *.py) ;;
      *) primus_die "$PRIMUS_EXIT_INVALID" "$LABEL script '$f' is neither .sh nor .py; accepted: .sh (run with bash), .py (run with python)." ;;
    esac
  done
}

# run_one SCRIPT VAR: run SCRIPT with the current env/extra state, its stdout
# into VAR (the protocol lines), its stderr live on this script's (masked)
# stderr, in a process group of its own with the time limit (hook_exec.sh).
# Returns its code.
run_one() {
  local script=$1
  local -n __out=$2
  local -a cmd
  if [[ $script == *.py ]]; then
    cmd=("$PRIMUS_PYTHON" "$script")
  else
    cmd=("$BASH" "$script")
  fi
  local rc=0
  primus_hook_exec "$HOOK_OUT" hook_child "${cmd[@]}" || rc=$?
  # As $(<file) reads it (trailing newlines dropped), without a subshell.
  __out=""
  primus_read -d '' __out <"$HOOK_OUT" || true  # runner/lib/nofork.sh
  while [[ $__out == *$'\n' ]]; do __out=${__out%$'\n'}; done
  return "$rc"
}

# hook_child CMD...: the hook's process. In a subshell: the hooks' env. values
# must never alter this script's own variables (a hook may legitimately set PATH
# or IFS for the job); env(1) sets them (an export rebuilds bash's environment).
# With none to set, CMD replaces the subshell at once (one exec less per hook).
hook_child() {
  trap - TERM HUP INT
  local python_path=${PYTHONPATH-} assign=()
  for ((i = 0; i < ${#ENV_NAMES[@]}; i++)); do
    assign+=("${ENV_NAMES[i]}=${ENV_VALUES[i]}")
    [[ ${ENV_NAMES[i]} != PYTHONPATH ]] || python_path=${ENV_VALUES[i]}
  done
  [[ $1 != "$PRIMUS_PYTHON" ]] || assign+=("PYTHONPATH=$PRIMUS_ROOT/python${python_path:+:$python_path}")
  if ((${#assign[@]} == 0)); then
    exec "$@" "${WORKLOAD_ARGS[@]}" {PRIMUS_HOOK_ORIG_ERR}>&-
  fi
  exec env -- "${assign[@]}" "$@" "${WORKLOAD_ARGS[@]}" {PRIMUS_HOOK_ORIG_ERR}>&-
}

# is_reserved_name NAME: bash variables a hook may not set (read-only or
# internal to bash; assigning them fails or breaks the shell).
is_reserved_name() {
  case $1 in
    BASHOPTS | BASHPID | BASH_ARGC | BASH_ARGV | BASH_ARGV0 | BASH_COMMAND | BASH_LINENO | \
      BASH_SOURCE | BASH_SUBSHELL | BASH_VERSINFO | BASH_VERSION | EUID | FUNCNAME | GROUPS | \
      LINENO | PIPESTATUS | PPID | SHELLOPTS | UID | EPOCHREALTIME | EPOCHSECONDS | RANDOM | \
      SRANDOM | SECONDS | HISTCMD)
      return 0 ;;
  esac
  return 1
}

# log_record KIND HOOK KEY VALUE: debug-log one record, secret values masked
# (no command substitution: this runs for every record).
log_record() {
  [[ ${PRIMUS_LOG_LEVEL:-INFO} == DEBUG ]] || return 0
  local shown=$4
  if primus_is_secret_name "$3" && [[ -n $shown ]]; then shown='****'; fi
  LOG_DEBUG "$LABEL $2: $1 $3=$shown" >&2
}

# parse_output SCRIPT OUT: read the protocol lines of the text OUT, print records on
# stdout, queue env values for the following hooks, show the other lines.
parse_output() {
  local script=$1 out=$2
  local line key value lineno=0 shown="" name=${1##*/}
  [[ -n $out ]] || return 0
  while primus_read line || [[ -n $line ]]; do
    lineno=$((lineno + 1))
    case $line in
      env.*)
        if [[ $line != *=* ]]; then
          primus_die "$PRIMUS_EXIT_INVALID" "$LABEL '$name' line $lineno: '${line:0:80}' has no '='; write env.NAME=VALUE."
        fi
        key=${line%%=*}
        key=${key#env.}
        value=${line#*=}
        if [[ ! $key =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
          primus_die "$PRIMUS_EXIT_INVALID" "$LABEL '$name' line $lineno: invalid variable name '$key' in env. line; accepted: letters, digits and _ not starting with a digit (e.g. env.NCCL_NET_PLUGIN=...)."
        fi
        if is_reserved_name "$key"; then
          primus_die "$PRIMUS_EXIT_INVALID" "$LABEL '$name' line $lineno: env.$key names a variable internal to bash, which cannot be exported to the job; choose another name."
        fi
        ENV_NAMES+=("$key")
        ENV_VALUES+=("$value")
        primus_mask_add "$key" "$value"
        printf 'env\0%s\0%s\0' "$key" "$value"
        log_record env "$name" "$key" "$value"
        ;;
      extra.*)
        if [[ $line != *=* ]]; then
          primus_die "$PRIMUS_EXIT_INVALID" "$LABEL '$name' line $lineno: '${line:0:80}' has no '='; write extra.name=value."
        fi
        key=${line%%=*}
        key=${key#extra.}
        value=${line#*=}
        if [[ ! $key =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]]; then
          primus_die "$PRIMUS_EXIT_INVALID" "$LABEL '$name' line $lineno: invalid option name '$key' in extra. line; accepted: letters, digits, _ . - not starting with - (e.g. extra.train_data_path=...)."
        fi
        WORKLOAD_ARGS+=("--$key" "$value")
        printf 'extra\0%s\0%s\0' "$key" "$value"
        log_record extra "$name" "$key" "$value"
        ;;
      *)
        shown+=$line$'\n'
        ;;
    esac
  done <<<"$out"
  if [[ -n $shown ]]; then
    # Masked once for the whole text: per-line masking would cost seconds on a
    # hook that prints thousands of lines.
    primus_mask_into shown "$shown"
    printf '%s' "$shown" >&2
  fi
}

# exit_code_for RC: this script's exit code for a hook that exited RC.
exit_code_for() {
  case $1 in
    "$HOOK_EXIT_CONFIG") echo "$PRIMUS_EXIT_INVALID" ;;
    "$HOOK_EXIT_MISSING") echo "$PRIMUS_EXIT_MISSING" ;;
    *) echo "$PRIMUS_EXIT_RUNTIME" ;;
  esac
}

main() {
  parse_args "$@"
  if ((USE_SCRIPTS)); then
    check_scripts
  else
    discover_hooks
  fi
  ((${#SCRIPTS[@]})) || return 0
  primus_pick_python
  export PRIMUS_HOOK_GROUP=$GROUP PRIMUS_HOOK_NAME=$NAME PRIMUS_ROOT PRIMUS_RUNNER_DIR
  if [[ $DRY_RUN == 1 ]]; then
    export PRIMUS_DRY_RUN=1
  fi
  primus_hook_limits
  primus_hook_traps
  primus_env_settle  # one environment build for every hook started below (runner/lib/nofork.sh)
  primus_hook_mask_start
  # This runner's own variables hold no new secret from here on (a hook's
  # env.NAME=VALUE secrets join PRIMUS_MASK_VALUES): one variable scan serves
  # every log line (runner/lib/secrets.sh, primus_secret_scan_freeze).
  primus_secret_scan_freeze
  primus_temp_file HOOK_OUT primus-hook || primus_die "$PRIMUS_EXIT_MISSING" "cannot create a temporary file in ${TMPDIR:-/tmp} for the hooks' output. Fix: free space there or point TMPDIR at a writable directory."
  trap 'primus_hook_mask_stop; rm -f -- "$HOOK_OUT"' EXIT
  local script rc start out took suffix=""
  if [[ $DRY_RUN == 1 ]]; then suffix=" (dry run)"; fi
  for script in "${SCRIPTS[@]}"; do
    if ! primus_hook_gate_open "$script" ENV_NAMES ENV_VALUES; then
      LOG_DEBUG "$LABEL ${script#"$PRIMUS_ROOT"/} skipped: its gate variables are off" >&2
      continue
    fi
    primus_hook_mask_refresh
    # Named as it starts: a hook that hangs is known (one line, debug level, when it ends quickly).
    LOG_INFO "$LABEL ${script#"$PRIMUS_ROOT"/} starting (limit ${PRIMUS_HOOK_LIMIT} s, PRIMUS_HOOK_TIMEOUT)" >&2
    start=$EPOCHREALTIME
    rc=0
    run_one "$script" out || rc=$?
    primus_hook_elapsed took "$start"
    primus_hook_stopped "$LABEL" "$script"
    if [[ -n $SKIP_EXIT && $rc == "$SKIP_EXIT" ]]; then
      parse_output "$script" "$out"
      DURATIONS+="$LABEL ${script#"$PRIMUS_ROOT"/} skipped itself (exit $rc) after $took s$suffix"$'\n'
      continue
    fi
    if ((rc != 0)) || [[ $PRIMUS_HOOK_ENDED == timeout ]]; then
      flush_durations
      primus_hook_report_failure "$LABEL" "$script" "$rc" "$out"
      if [[ $PRIMUS_HOOK_ENDED == timeout ]]; then exit "$PRIMUS_EXIT_RUNTIME"; fi
      exit "$(exit_code_for "$rc")"
    fi
    parse_output "$script" "$out"
    DURATIONS+="$LABEL ${script#"$PRIMUS_ROOT"/} done in $took s$suffix"$'\n'
  done
  flush_durations
}

# flush_durations: log the collected per-hook durations in one call (each
# LOG_INFO masks its text, which costs milliseconds; one call per run, not per hook).
DURATIONS=""
flush_durations() {
  if [[ -n $DURATIONS ]]; then
    LOG_INFO "${DURATIONS%$'\n'}" >&2
    DURATIONS=""
  fi
}

main "$@"
