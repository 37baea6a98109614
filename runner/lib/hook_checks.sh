# shellcheck shell=bash
# runner/lib/hook_checks.sh: checks first (docs/hooks-and-patches.md "Hooks and patches"). Before
# the first hook that installs, builds or downloads, the later hooks that hold
# the launch's own checks run once in dry-run mode, so what a dry run can know
# (the experiment config, the framework's checkout) stops the launch before
# minutes of pip or make, with the exit code their real run would give.
# A library of the hook runner (runner/lib/hook_runner.sh, which runs the
# hooks): it defines only primus_* / __primus_* functions; it needs
# hook_exec.sh and hook_gates.sh.
#
# A hook declares in its first 30 lines (read ahead with its gates):
#   `# primus-hook-installs:`          it installs, builds or downloads
#   `# primus-hook-installs: VAR...`   only when one VAR is set and not 0
#   `# primus-hook-checks-first:`      its dry run checks what the launch needs
#                                      and changes nothing (a hook that also
#                                      installs checks before it does)
#
#   primus_hook_installs SCRIPT NAMES VALUES
#       status 0 when SCRIPT declares that it installs (NAMES and VALUES: the
#       arrays of the earlier hooks' env. lines, as for primus_hook_gate_open)
#   primus_hook_declares_checks SCRIPT
#       status 0 when SCRIPT declares its checks first

if [[ -n ${__PRIMUS_HOOK_CHECKS_SH:-} ]]; then
  return 0
fi
__PRIMUS_HOOK_CHECKS_SH=1

# __primus_hook_decls VAR SCRIPT: VAR = SCRIPT's declaration lines (read
# ahead by primus_hook_gates_preload, else now).
__primus_hook_decls() {
  if [[ -v __PRIMUS_GATE_DECLS[$2] ]]; then
    printf -v "$1" '%s' "${__PRIMUS_GATE_DECLS[$2]}"
  else
    __primus_gate_declarations "$1" "$2" || printf -v "$1" '%s' ""
  fi
}

primus_hook_installs() {
  # Read ahead and without the declaration (most hooks): one glob, no more.
  [[ ! -v __PRIMUS_GATE_DECLS[$1] || ${__PRIMUS_GATE_DECLS[$1]} == *"# primus-hook-installs:"* ]] || return 1
  local text value word IFS=$' \t\n'
  # The names __primus_gate_value (hook_gates.sh) reads.
  local -n __primus_gate_names=$2 __primus_gate_values=$3
  local -a words
  local -
  __primus_hook_decls text "$1"
  [[ $text == *"# primus-hook-installs:"* ]] || return 1
  local re=$'(^|\n)# primus-hook-installs:([^\n]*)'
  [[ $text =~ $re ]] || return 1
  set -f
  # shellcheck disable=SC2206  # word splitting wanted; globbing is off
  words=(${BASH_REMATCH[2]})
  ((${#words[@]})) || return 0
  for word in "${words[@]}"; do
    __primus_gate_value value "$word" || continue
    [[ -z $value || $value == 0 ]] || return 0
  done
  return 1
}

primus_hook_declares_checks() {
  local text
  __primus_hook_decls text "$1"
  [[ $text == *"# primus-hook-checks-first:"* ]]
}

# __primus_hook_quiet_child ERRFILE CMD...: CMD with its stderr into ERRFILE
# (a check's dry-run words are noise unless it fails).
__primus_hook_quiet_child() {
  exec 2>"$1"
  "${@:2}"
}

# primus_hook_checks_first INSTALLER BEFORE: the hook runner is about to start
# INSTALLER, which installs: every later hook of this run (PRIMUS_HR_SCRIPTS)
# that declares its checks first and is open runs now in dry-run mode, with the
# values of now; the first to fail ends the run with the code its real run
# would give (hook_runner.sh's mapping). BEFORE: the runner's function for the
# first hook of the group (the launch helper's records), '' for none.
primus_hook_checks_first() {
  local installer=$1 before=$2 later=0 script rc out start took text=""
  local group_dir=$PRIMUS_HR_HOOKS_DIR/$PRIMUS_HR_GROUP/$PRIMUS_HR_NAME/ err=$PRIMUS_HR_OUT.check
  for script in "${PRIMUS_HR_SCRIPTS[@]}"; do
    if [[ $script == "$installer" ]]; then later=1; continue; fi
    if ((later == 0)) || ! primus_hook_declares_checks "$script"; then continue; fi
    if [[ -n $before && $script == "$group_dir"* ]]; then "$before"; before=""; fi
    primus_hook_gate_open "$script" PRIMUS_HR_ENV_NAMES PRIMUS_HR_ENV_VALUES || continue
    primus_hook_mask_refresh
    PRIMUS_HR_ENV_NAMES+=(PRIMUS_DRY_RUN) PRIMUS_HR_ENV_VALUES+=(1)
    start=$EPOCHREALTIME rc=0
    __primus_hr_run_one "$script" out __primus_hook_quiet_child "$err" || rc=$?
    unset 'PRIMUS_HR_ENV_NAMES[-1]' 'PRIMUS_HR_ENV_VALUES[-1]'
    primus_hook_elapsed took "$start"
    primus_read -d '' text <"$err" || true  # runner/lib/nofork.sh
    rm -f -- "$err"
    primus_hook_stopped "$PRIMUS_HR_LABEL" "$script"
    if ((rc != 0)) || [[ $PRIMUS_HOOK_ENDED == timeout ]]; then
      __primus_hr_flush_durations
      printf '%s' "$text" >&2
      LOG_ERROR "$PRIMUS_HR_LABEL ${script#"$PRIMUS_ROOT"/} holds checks of this launch and ran first, in dry-run mode, before ${installer#"$PRIMUS_ROOT"/}, which installs, builds or downloads: it failed, so nothing was installed; its real run would fail the same way." >&2
      primus_hook_report_failure "$PRIMUS_HR_LABEL" "$script" "$rc" "$out"
      [[ $PRIMUS_HOOK_ENDED != timeout ]] || exit "$PRIMUS_EXIT_RUNTIME"
      exit "$(__primus_hr_exit_code_for "$rc")"
    fi
    PRIMUS_HR_DURATIONS+="$PRIMUS_HR_LABEL ${script#"$PRIMUS_ROOT"/} checked first (dry run) in $took s, before ${installer##*/}"$'\n'
  done
}
