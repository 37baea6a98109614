# shellcheck shell=bash
# runner/lib/hook_runner.sh: the hook runner (docs/hooks-and-patches.md "Hooks and patches"; the
# protocol, the gates, the records and the exit codes are in
# `runner/helpers/execute_hooks.sh --help`). A library: it defines only
# primus_* / __primus_* functions and PRIMUS_HR_* state; it needs common.sh,
# hook_exec.sh, hook_gates.sh and hook_checks.sh.
#
#   primus_hook_runner_main ARGS...   execute_hooks.sh's command line; exits
#   primus_patch_runner_main [--dry-run] PATCH...
#                                     the patches (execute_patches.sh, the launcher)
#   PRIMUS_HR_BEFORE_GROUP=FUNCTION   called once before the first hook of
#                                     DIR/<group>/<name>/ (the launcher's)
#   primus_hook_runner_preload GROUP NAME
#                                     the hooks' gate declarations, read ahead
#
# It runs in a process of its own: execute_hooks.sh, or a subshell of the
# launcher (runner/lib/launch_hooks.sh), which saves the launcher a bash start,
# its libraries and a variable scan per launch (~15 ms of a dry run).

if [[ -n ${__PRIMUS_HOOK_RUNNER_SH:-} ]]; then
  return 0
fi
__PRIMUS_HOOK_RUNNER_SH=1

# __primus_hr_init: the state the functions below share, from this process's
# environment at the start of the run.
__primus_hr_init() {
  PRIMUS_HR_DRY_RUN=${PRIMUS_DRY_RUN:-0}
  PRIMUS_HR_HOOKS_DIR=${PRIMUS_HOOKS_DIR:-$PRIMUS_RUNNER_DIR/helpers/hooks}
  PRIMUS_HR_LABEL=hook
  PRIMUS_HR_SKIP_EXIT=""
  PRIMUS_HR_GROUP="" PRIMUS_HR_NAME="" PRIMUS_HR_OUT="" PRIMUS_HR_DURATIONS=""
  PRIMUS_HR_SCRIPTS=() PRIMUS_HR_ARGS=()
  PRIMUS_HR_ENV_NAMES=() PRIMUS_HR_ENV_VALUES=()
  PRIMUS_HR_USE_SCRIPTS=0 PRIMUS_HR_EXPLICIT=0
  PRIMUS_HR_SMALL_ENV=0
  if __primus_hr_env_is_small; then PRIMUS_HR_SMALL_ENV=1; fi
  # The values to mask that the launcher has (none in a process of its own).
  PRIMUS_MASK_VALUES=("${PRIMUS_MASK_VALUES[@]}")
}

# __primus_hr_parse_args ARGS...: fill the globals above from the command line.
__primus_hr_parse_args() {
  while (($#)); do
    case $1 in
      -h | --help) primus_usage "$PRIMUS_RUNNER_DIR/helpers/execute_hooks.sh"; exit 0 ;;
      --dry-run) PRIMUS_HR_DRY_RUN=1; shift ;;
      --hooks-dir)
        (($# >= 2)) || primus_die "$PRIMUS_EXIT_INVALID" "--hooks-dir needs a directory; usage: execute_hooks.sh [--dry-run] [--hooks-dir DIR] <group> <name> [args...]"
        PRIMUS_HR_HOOKS_DIR=$2; shift 2 ;;
      --label)
        (($# >= 2)) || primus_die "$PRIMUS_EXIT_INVALID" "--label needs a word (e.g. patch)"
        PRIMUS_HR_LABEL=$2; shift 2 ;;
      --skip-exit)
        (($# >= 2)) && [[ $2 =~ ^[1-9][0-9]*$ ]] || primus_die "$PRIMUS_EXIT_INVALID" "--skip-exit needs an exit code (1-255, e.g. 2)"
        PRIMUS_HR_SKIP_EXIT=$2; shift 2 ;;
      --group | --name)
        (($# >= 2)) || primus_die "$PRIMUS_EXIT_INVALID" "$1 needs a value (may be empty); usage: execute_hooks.sh --group G --name N -- [workload args...]"
        if [[ $1 == --group ]]; then PRIMUS_HR_GROUP=$2; else PRIMUS_HR_NAME=$2; fi
        PRIMUS_HR_EXPLICIT=1; shift 2 ;;
      --scripts)
        PRIMUS_HR_USE_SCRIPTS=1; shift
        while (($#)) && [[ $1 != -- ]]; do PRIMUS_HR_SCRIPTS+=("$1"); shift; done
        if (($#)); then shift; fi
        PRIMUS_HR_ARGS=("$@")
        return 0 ;;
      --) shift; break ;;
      -*) primus_die "$PRIMUS_EXIT_INVALID" "unknown option '$1'; accepted: --dry-run, --hooks-dir DIR, --group G, --name N, --scripts FILE..., --help" ;;
      *) break ;;
    esac
  done
  if ((PRIMUS_HR_EXPLICIT)); then
    PRIMUS_HR_ARGS=("$@")
    return 0
  fi
  if (($# < 1)); then
    primus_die "$PRIMUS_EXIT_INVALID" "missing <group>; usage: execute_hooks.sh [--dry-run] [--hooks-dir DIR] <group> <name> [workload args...]"
  fi
  PRIMUS_HR_GROUP=$1
  PRIMUS_HR_NAME=${2-}
  if (($# >= 2)); then shift 2; else shift; fi
  PRIMUS_HR_ARGS=("$@")
}

# __primus_hr_is_path_word WORD: true when WORD can name a hooks sub-directory.
__primus_hr_is_path_word() {
  [[ -n $1 && $1 != . && $1 != .. && $1 != */* && $1 != -* ]]
}

# __primus_hr_discover: fill PRIMUS_HR_SCRIPTS with the global hooks then the group hooks.
__primus_hr_discover() {
  if [[ ! -d $PRIMUS_HR_HOOKS_DIR ]]; then
    if [[ -n ${PRIMUS_HOOKS_DIR:-} || $PRIMUS_HR_HOOKS_DIR != "$PRIMUS_RUNNER_DIR/helpers/hooks" ]]; then
      primus_die "$PRIMUS_EXIT_MISSING" "hooks directory '$PRIMUS_HR_HOOKS_DIR' (--hooks-dir / PRIMUS_HOOKS_DIR) does not exist; point it at a directory of NN_*.sh hooks."
    fi
    return 0
  fi
  local LC_ALL=C f
  local -a found
  shopt -s nullglob
  # *.[sp][hy] keeps .sh and .py together in one name-ordered glob.
  found=("$PRIMUS_HR_HOOKS_DIR"/[0-9][0-9]_*.[sp][hy])
  if __primus_hr_is_path_word "$PRIMUS_HR_GROUP" && __primus_hr_is_path_word "$PRIMUS_HR_NAME" && [[ -d $PRIMUS_HR_HOOKS_DIR/$PRIMUS_HR_GROUP/$PRIMUS_HR_NAME ]]; then
    found+=("$PRIMUS_HR_HOOKS_DIR/$PRIMUS_HR_GROUP/$PRIMUS_HR_NAME"/*.[sp][hy])
  fi
  shopt -u nullglob
  for f in "${found[@]}"; do
    case $f in
      *.sh | *.py) [[ -f $f ]] && PRIMUS_HR_SCRIPTS+=("$f") ;;
    esac
  done
}

# primus_hook_runner_preload GROUP NAME: read now the gate declarations of the
# hooks a run for GROUP NAME would find (the launcher, while the helper starts:
# ~0.4 ms a hook file off the launch's path); the run takes them from memory.
primus_hook_runner_preload() {
  PRIMUS_HR_HOOKS_DIR=${PRIMUS_HOOKS_DIR:-$PRIMUS_RUNNER_DIR/helpers/hooks}
  PRIMUS_HR_GROUP=$1 PRIMUS_HR_NAME=$2 PRIMUS_HR_SCRIPTS=()
  [[ -d $PRIMUS_HR_HOOKS_DIR ]] || return 0  # the run says why
  __primus_hr_discover
  primus_hook_gates_preload "${PRIMUS_HR_SCRIPTS[@]}"
}

# __primus_hr_check_scripts: every --scripts file must exist.
__primus_hr_check_scripts() {
  local f
  for f in "${PRIMUS_HR_SCRIPTS[@]}"; do
    [[ -f $f ]] || primus_die "$PRIMUS_EXIT_MISSING" "$PRIMUS_HR_LABEL script '$f' not found; give an existing .sh or .py file."
    case $f in
      *.sh | *.py) ;;
      *) primus_die "$PRIMUS_EXIT_INVALID" "$PRIMUS_HR_LABEL script '$f' is neither .sh nor .py; accepted: .sh (run with bash), .py (run with python)." ;;
    esac
  done
}

# __primus_hr_run_one SCRIPT VAR [WRAPPER...]: run SCRIPT with the current env/extra state, its stdout
# into VAR (the protocol lines), its stderr live on this script's (masked)
# stderr, in a process group of its own with the time limit (hook_exec.sh).
# WRAPPER: a command the hook's process runs it through. Returns its code.
__primus_hr_run_one() {
  local script=$1
  local -n __out=$2
  local -a wrap=("${@:3}")
  local -a cmd
  if [[ $script == *.py ]]; then
    cmd=("$PRIMUS_PYTHON" "$script")
  else
    cmd=("$BASH" "$script")
  fi
  local rc=0
  primus_hook_exec "$PRIMUS_HR_OUT" "${wrap[@]}" __primus_hr_hook_child "${cmd[@]}" || rc=$?
  # As $(<file) reads it (trailing newlines dropped), without a subshell.
  __out=""
  primus_read -d '' __out <"$PRIMUS_HR_OUT" || true  # runner/lib/nofork.sh
  while [[ $__out == *$'\n' ]]; do __out=${__out%$'\n'}; done
  return "$rc"
}

# __primus_hr_hook_child CMD...: the hook's process. In a subshell: the hooks' env. values
# must never alter this script's own variables (a hook may legitimately set PATH
# or IFS for the job). With none to set, CMD replaces the subshell at once.
# Otherwise they are exported here, or set by env(1) when the environment is
# large (PRIMUS_HR_SMALL_ENV=0: bash rebuilds its environment after an export
# in time that grows with the square of its size, ~20 ms at 2,000 variables,
# where env(1) costs one more exec, ~1 ms) or when this shell gives a name an
# attribute (readonly, integer, case, array) that refuses or alters the value.
__primus_hr_hook_child() {
  trap - TERM HUP INT
  local python_path=${PYTHONPATH-} assign=() i
  for ((i = 0; i < ${#PRIMUS_HR_ENV_NAMES[@]}; i++)); do
    assign+=("${PRIMUS_HR_ENV_NAMES[i]}=${PRIMUS_HR_ENV_VALUES[i]}")
    [[ ${PRIMUS_HR_ENV_NAMES[i]} != PYTHONPATH ]] || python_path=${PRIMUS_HR_ENV_VALUES[i]}
  done
  [[ $1 != "$PRIMUS_PYTHON" ]] || assign+=("PYTHONPATH=$PRIMUS_ROOT/python${python_path:+:$python_path}")
  if ((${#assign[@]} == 0)); then
    exec "$@" "${PRIMUS_HR_ARGS[@]}" {PRIMUS_HOOK_ORIG_ERR}>&-
  fi
  if ((PRIMUS_HR_SMALL_ENV)) && __primus_hr_export_all "${assign[@]}"; then
    exec "$@" "${PRIMUS_HR_ARGS[@]}" {PRIMUS_HOOK_ORIG_ERR}>&-
  fi
  exec env -- "${assign[@]}" "$@" "${PRIMUS_HR_ARGS[@]}" {PRIMUS_HOOK_ORIG_ERR}>&-
}

# __primus_hr_export_all NAME=VALUE...: export them in this (hook) process;
# status 1 when a name has an attribute here that refuses or alters the value
# (readonly, integer, case, array): its caller then sets them all with env(1).
__primus_hr_export_all() {
  local __primus_pair __primus_name
  local -  # with errexit on, bash exits at an export to a readonly name, even here
  set +e
  for __primus_pair in "$@"; do
    __primus_name=${__primus_pair%%=*}
    export "${__primus_pair?}" 2>/dev/null || return 1
    [[ ${!__primus_name} == "${__primus_pair#*=}" && ${!__primus_name@a} != *[aAn]* ]] || return 1
  done
}

# __primus_hr_env_is_small: true when this process's environment holds fewer
# than 200 variables (read from /proc, at most 200 of them: no process started).
__primus_hr_env_is_small() {
  local -a head=()
  { mapfile -n 200 -d '' head </proc/self/environ; } 2>/dev/null || return 1
  ((${#head[@]} > 0 && ${#head[@]} < 200))
}

# __primus_hr_is_reserved_name NAME: bash variables a hook may not set (read-only or
# internal to bash; assigning them fails or breaks the shell).
__primus_hr_is_reserved_name() {
  case $1 in
    BASHOPTS | BASHPID | BASH_ARGC | BASH_ARGV | BASH_ARGV0 | BASH_COMMAND | BASH_LINENO | \
      BASH_SOURCE | BASH_SUBSHELL | BASH_VERSINFO | BASH_VERSION | EUID | FUNCNAME | GROUPS | \
      LINENO | PIPESTATUS | PPID | SHELLOPTS | UID | EPOCHREALTIME | EPOCHSECONDS | RANDOM | \
      SRANDOM | SECONDS | HISTCMD)
      return 0 ;;
  esac
  return 1
}

# __primus_hr_log_record KIND HOOK KEY VALUE: debug-log one record, secret values masked
# (no command substitution: this runs for every record).
__primus_hr_log_record() {
  [[ ${PRIMUS_LOG_LEVEL:-INFO} == DEBUG ]] || return 0
  local shown=$4
  if primus_is_secret_name "$3" && [[ -n $shown ]]; then shown='****'; fi
  LOG_DEBUG "$PRIMUS_HR_LABEL $2: $1 $3=$shown" >&2
}

# __primus_hr_parse_output SCRIPT OUT: read the protocol lines of the text OUT, print records on
# stdout, queue env values for the following hooks, show the other lines.
__primus_hr_parse_output() {
  local script=$1 out=$2
  local line key value lineno=0 shown="" name=${1##*/}
  [[ -n $out ]] || return 0
  while primus_read line || [[ -n $line ]]; do
    lineno=$((lineno + 1))
    case $line in
      env.*)
        if [[ $line != *=* ]]; then
          primus_die "$PRIMUS_EXIT_INVALID" "$PRIMUS_HR_LABEL '$name' line $lineno: '${line:0:80}' has no '='; write env.NAME=VALUE."
        fi
        key=${line%%=*}
        key=${key#env.}
        value=${line#*=}
        if [[ ! $key =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
          primus_die "$PRIMUS_EXIT_INVALID" "$PRIMUS_HR_LABEL '$name' line $lineno: invalid variable name '$key' in env. line; accepted: letters, digits and _ not starting with a digit (e.g. env.NCCL_NET_PLUGIN=...)."
        fi
        if __primus_hr_is_reserved_name "$key"; then
          primus_die "$PRIMUS_EXIT_INVALID" "$PRIMUS_HR_LABEL '$name' line $lineno: env.$key names a variable internal to bash, which cannot be exported to the job; choose another name."
        fi
        if [[ -v $key && ${!key@a} == *r* ]]; then
          primus_die "$PRIMUS_EXIT_INVALID" "$PRIMUS_HR_LABEL '$name' line $lineno: env.$key names a read-only variable of primus-runner itself, which a hook cannot change; choose another name."
        fi
        PRIMUS_HR_ENV_NAMES+=("$key")
        PRIMUS_HR_ENV_VALUES+=("$value")
        primus_mask_add "$key" "$value"
        printf 'env\0%s\0%s\0' "$key" "$value"
        __primus_hr_log_record env "$name" "$key" "$value"
        ;;
      extra.*)
        if [[ $line != *=* ]]; then
          primus_die "$PRIMUS_EXIT_INVALID" "$PRIMUS_HR_LABEL '$name' line $lineno: '${line:0:80}' has no '='; write extra.name=value."
        fi
        key=${line%%=*}
        key=${key#extra.}
        value=${line#*=}
        if [[ ! $key =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]]; then
          primus_die "$PRIMUS_EXIT_INVALID" "$PRIMUS_HR_LABEL '$name' line $lineno: invalid option name '$key' in extra. line; accepted: letters, digits, _ . - not starting with - (e.g. extra.train_data_path=...)."
        fi
        PRIMUS_HR_ARGS+=("--$key" "$value")
        printf 'extra\0%s\0%s\0' "$key" "$value"
        __primus_hr_log_record extra "$name" "$key" "$value"
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

# __primus_hr_exit_code_for RC: this script's exit code for a hook that exited RC.
__primus_hr_exit_code_for() {
  case $1 in
    "$PRIMUS_HOOK_EXIT_CONFIG") echo "$PRIMUS_EXIT_INVALID" ;;
    "$PRIMUS_HOOK_EXIT_MISSING") echo "$PRIMUS_EXIT_MISSING" ;;
    *) echo "$PRIMUS_EXIT_RUNTIME" ;;
  esac
}

primus_hook_runner_main() {
  __primus_hr_init
  __primus_hr_parse_args "$@"
  if ((PRIMUS_HR_USE_SCRIPTS)); then
    __primus_hr_check_scripts
  else
    __primus_hr_discover
  fi
  ((${#PRIMUS_HR_SCRIPTS[@]})) || return 0
  primus_pick_python
  export PRIMUS_HOOK_GROUP=$PRIMUS_HR_GROUP PRIMUS_HOOK_NAME=$PRIMUS_HR_NAME PRIMUS_ROOT PRIMUS_RUNNER_DIR
  if [[ $PRIMUS_HR_DRY_RUN == 1 ]]; then
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
  primus_temp_file PRIMUS_HR_OUT primus-hook || primus_die "$PRIMUS_EXIT_MISSING" "cannot create a temporary file in ${TMPDIR:-/tmp} for the hooks' output. Fix: free space there or point TMPDIR at a writable directory."
  trap 'primus_hook_tick_stop; primus_hook_mask_stop; rm -f -- "$PRIMUS_HR_OUT"' EXIT
  local script rc start out took suffix=""
  if [[ $PRIMUS_HR_DRY_RUN == 1 ]]; then suffix=" (dry run)"; fi
  local group_dir=$PRIMUS_HR_HOOKS_DIR/$PRIMUS_HR_GROUP/$PRIMUS_HR_NAME/ before=${PRIMUS_HR_BEFORE_GROUP:-}
  ((PRIMUS_HR_USE_SCRIPTS == 0)) || before=""
  # Checks first (hook_checks.sh): pending until the first hook that installs; none in a dry run.
  local checks=1
  ((PRIMUS_HR_USE_SCRIPTS == 0)) && [[ $PRIMUS_HR_DRY_RUN != 1 ]] || checks=0
  for script in "${PRIMUS_HR_SCRIPTS[@]}"; do
    if [[ -n $before && $script == "$group_dir"* ]]; then
      "$before"
      before=""
    fi
    if ! primus_hook_gate_open "$script" PRIMUS_HR_ENV_NAMES PRIMUS_HR_ENV_VALUES; then
      LOG_DEBUG "$PRIMUS_HR_LABEL ${script#"$PRIMUS_ROOT"/} skipped: its gate declarations close it (it would do nothing)" >&2
      continue
    fi
    if ((checks)) && primus_hook_installs "$script" PRIMUS_HR_ENV_NAMES PRIMUS_HR_ENV_VALUES; then
      checks=0
      primus_hook_checks_first "$script" "$before"
    fi
    primus_hook_mask_refresh
    # Named as it starts: a hook that hangs is known (one line, debug level, when it ends quickly).
    LOG_INFO "$PRIMUS_HR_LABEL ${script#"$PRIMUS_ROOT"/} starting (limit ${PRIMUS_HOOK_LIMIT} s, PRIMUS_HOOK_TIMEOUT)" >&2
    start=$EPOCHREALTIME
    rc=0
    __primus_hr_run_one "$script" out || rc=$?
    primus_hook_elapsed took "$start"
    primus_hook_stopped "$PRIMUS_HR_LABEL" "$script"
    if [[ -n $PRIMUS_HR_SKIP_EXIT && $rc == "$PRIMUS_HR_SKIP_EXIT" ]]; then
      __primus_hr_parse_output "$script" "$out"
      PRIMUS_HR_DURATIONS+="$PRIMUS_HR_LABEL ${script#"$PRIMUS_ROOT"/} skipped itself (exit $rc) after $took s$suffix"$'\n'
      continue
    fi
    if ((rc != 0)) || [[ $PRIMUS_HOOK_ENDED == timeout ]]; then
      __primus_hr_flush_durations
      primus_hook_report_failure "$PRIMUS_HR_LABEL" "$script" "$rc" "$out"
      if [[ $PRIMUS_HOOK_ENDED == timeout ]]; then exit "$PRIMUS_EXIT_RUNTIME"; fi
      exit "$(__primus_hr_exit_code_for "$rc")"
    fi
    __primus_hr_parse_output "$script" "$out"
    PRIMUS_HR_DURATIONS+="$PRIMUS_HR_LABEL ${script#"$PRIMUS_ROOT"/} done in $took s$suffix"$'\n'
  done
  __primus_hr_flush_durations
}

# __primus_hr_flush_durations: log the collected per-hook durations in one call (each
# LOG_INFO masks its text, which costs milliseconds; one call per run, not per hook).
__primus_hr_flush_durations() {
  if [[ -n $PRIMUS_HR_DURATIONS ]]; then
    LOG_INFO "${PRIMUS_HR_DURATIONS%$'\n'}" >&2
    PRIMUS_HR_DURATIONS=""
  fi
}

# primus_patch_runner_main [--dry-run] PATCH...: run the patch scripts in the
# order given, exit 2 of a patch meaning "skipped" (as the upstream Primus
# runner's execute_patches.sh): the one call for execute_patches.sh and the launcher.
primus_patch_runner_main() {
  local -a pass=()
  if [[ ${1-} == --dry-run ]]; then pass=(--dry-run); shift; fi
  primus_hook_runner_main "${pass[@]}" --label patch --skip-exit 2 --scripts "$@" --
}
