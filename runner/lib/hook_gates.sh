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

# __primus_gate_value OUT NAME NAMES VALUES: NAME's value as the hook would see it.
__primus_gate_value() {
  local -n __primus_gv_out=$1 __primus_gv_names=$3 __primus_gv_values=$4
  local i
  __primus_gv_out=${!2-}
  for ((i = 0; i < ${#__primus_gv_names[@]}; i++)); do
    [[ ${__primus_gv_names[i]} != "$2" ]] || __primus_gv_out=${__primus_gv_values[i]}
  done
}

primus_hook_gate_open() {
  local text kind var value declared=0
  local -a vars head
  # One read of the 30 lines (mapfile), and the declarations found by a regular
  # expression over them rather than a test per line: this runs for every hook
  # file of every launch.
  mapfile -n 30 -t head <"$1" || return 0
  printf -v text '%s\n' "${head[@]}"
  local re=$'(^|\n)# primus-hook-(gate|when-unset):([^\n]*)'
  while [[ $text =~ $re ]]; do
    declared=1
    kind=${BASH_REMATCH[2]}
    read -r -a vars <<<"${BASH_REMATCH[3]}"
    text=${text#*"${BASH_REMATCH[0]}"}
    for var in "${vars[@]}"; do
      __primus_gate_value value "$var" "$2" "$3"
      if [[ $kind == gate ]]; then
        [[ -z $value || $value == 0 ]] || return 0
      else
        [[ -n $value ]] || return 0
      fi
    done
  done
  ((declared == 0))
}
