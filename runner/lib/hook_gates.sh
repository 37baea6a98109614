# shellcheck shell=bash
# runner/lib/hook_gates.sh: a hook's gate declarations (README "Hooks and
# patches"), read by runner/helpers/execute_hooks.sh before it starts the hook.
# A library: it only defines functions.
#
# A hook may declare in its first 30 lines
#   `# primus-hook-gate: VAR [VAR...]`        open when one VAR is set and not 0
#   `# primus-hook-when-unset: VAR [VAR...]`  open when one VAR is unset or empty
# A hook with declarations whose every declaration is closed would only exit 0:
# not starting it saves a bash start per hook on every launch.
#
#   primus_hook_gate_open SCRIPT NAMES VALUES
#       status 1 when SCRIPT declares gates and none is open; NAMES and VALUES
#       name the arrays of the env. lines earlier hooks emitted (they win over
#       this process's environment, as they will in the hook's)

if [[ -n ${__PRIMUS_HOOK_GATES_SH:-} ]]; then
  return 0
fi
__PRIMUS_HOOK_GATES_SH=1

primus_hook_gate_open() {
  local text kind var value declared=0 i IFS=$' \t\n'
  local -n __primus_gate_names=$2 __primus_gate_values=$3
  local -a vars head
  local -  # set -f below (a declaration's words are names, never globs) ends with the function
  # One read of the 30 lines (mapfile), and the declarations found by a regular
  # expression over them rather than a test per line: this runs for every hook
  # file of every launch.
  mapfile -n 30 -t head <"$1" || return 0
  printf -v text '%s\n' "${head[@]}"
  set -f
  local re=$'(^|\n)# primus-hook-(gate|when-unset):([^\n]*)'
  # The glob first: a regular expression costs ~70 us, even one that fails.
  while [[ $text == *"# primus-hook-"* && $text =~ $re ]]; do
    declared=1
    kind=${BASH_REMATCH[2]}
    # shellcheck disable=SC2206  # word splitting wanted; globbing is off
    vars=(${BASH_REMATCH[3]})
    text=${text#*"${BASH_REMATCH[0]}"}
    for var in "${vars[@]}"; do
      # The value the hook would see: an earlier hook's env. line wins.
      value=${!var-}
      for ((i = 0; i < ${#__primus_gate_names[@]}; i++)); do
        [[ ${__primus_gate_names[i]} != "$var" ]] || value=${__primus_gate_values[i]}
      done
      if [[ $kind == gate ]]; then
        [[ -z $value || $value == 0 ]] || return 0
      else
        [[ -n $value ]] || return 0
      fi
    done
  done
  ((declared == 0))
}
