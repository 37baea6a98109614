# shellcheck shell=bash
# runner/lib/hook_gates.sh: a hook's gate declarations (docs/hooks-and-patches.md "Hooks, gates and
# patches"), read by runner/helpers/execute_hooks.sh before it starts the hook.
# A library: it only defines functions.
#
# A hook may declare in its first 30 lines
#   `# primus-hook-gate: VAR [VAR...]`        open when one VAR is set and not 0
#   `# primus-hook-when-unset: VAR [VAR...]`  open when one VAR is unset or empty
# (with several such lines, one open line opens the hook), and conditions
# without which it would do nothing (each one that fails keeps it closed):
#   `# primus-hook-skip-when: VAR=VALUE [VAR=VALUE...]`
#                                   closed when one VAR has exactly VALUE
#   `# primus-hook-needs-command: CMD [CMD...]`
#                                   closed unless every CMD is on the hook's PATH
#   `# primus-hook-needs-file: FILE in VAR [VAR...]`
#                                   closed unless FILE is a file in the
#                                   directory of the first VAR set and not empty
#                                   (none set: no condition)
# A closed hook would only exit 0: not starting it saves a bash start per
# hook on every launch. Values are those the hook would see: an earlier hook's
# env. line wins over this process's environment.
#
#   primus_hook_gate_open SCRIPT NAMES VALUES
#       status 1 when SCRIPT is closed; NAMES and VALUES name the arrays of
#       the env. lines earlier hooks emitted
#   primus_hook_gates_preload FILE...
#       read the declarations of FILEs now (the launcher, while the helper
#       starts); primus_hook_gate_open then takes them from memory

if [[ -n ${__PRIMUS_HOOK_GATES_SH:-} ]]; then
  return 0
fi
__PRIMUS_HOOK_GATES_SH=1

# The declarations read ahead, by path: the lines themselves, '' for none.
declare -gA __PRIMUS_GATE_DECLS=()

# __primus_gate_declarations VAR FILE: VAR = FILE's declaration lines (of its
# first 30), '' when it has none; status 1 when FILE cannot be read.
__primus_gate_declarations() {
  local -n __primus_gd_out=$1
  local __primus_gd_text
  local -a __primus_gd_head
  __primus_gd_out=""
  # One read of the 30 lines (mapfile), and the declarations found by a
  # regular expression over them rather than a test per line.
  mapfile -n 30 -t __primus_gd_head <"$2" || return 1
  printf -v __primus_gd_text '%s\n' "${__primus_gd_head[@]}"
  local re=$'(^|\n)(# primus-hook-[a-z-]+:[^\n]*)'
  # The glob first: a regular expression costs ~70 us, even one that fails.
  while [[ $__primus_gd_text == *"# primus-hook-"* && $__primus_gd_text =~ $re ]]; do
    __primus_gd_out+=${BASH_REMATCH[2]}$'\n'
    __primus_gd_text=${__primus_gd_text#*"${BASH_REMATCH[0]}"}
  done
}

primus_hook_gates_preload() {
  local file decls
  for file in "$@"; do
    if __primus_gate_declarations decls "$file"; then __PRIMUS_GATE_DECLS[$file]=$decls; fi
  done
}

primus_hook_gate_open() {
  local text kind word value gated=0 opened=0 IFS=$' \t\n'
  local -n __primus_gate_names=$2 __primus_gate_values=$3
  local -a words
  local -  # set -f below (a declaration's words are never globs) ends with the function
  if [[ -v __PRIMUS_GATE_DECLS[$1] ]]; then
    text=${__PRIMUS_GATE_DECLS[$1]}
  else
    __primus_gate_declarations text "$1" || return 0
  fi
  set -f
  local re=$'(^|\n)# primus-hook-(gate|when-unset|skip-when|needs-command|needs-file):([^\n]*)'
  while [[ -n $text && $text =~ $re ]]; do
    kind=${BASH_REMATCH[2]}
    # shellcheck disable=SC2206  # word splitting wanted; globbing is off
    words=(${BASH_REMATCH[3]})
    text=${text#*"${BASH_REMATCH[0]}"}
    case $kind in
      gate | when-unset)
        gated=1
        ((opened == 0)) || continue
        for word in "${words[@]}"; do
          __primus_gate_value value "$word" || value=""
          if [[ $kind == gate ]]; then
            [[ -z $value || $value == 0 ]] || opened=1
          else
            [[ -n $value ]] || opened=1
          fi
        done
        ;;
      skip-when)
        for word in "${words[@]}"; do
          [[ $word == ?*=* ]] || continue
          if __primus_gate_value value "${word%%=*}" && [[ $value == "${word#*=}" ]]; then
            return 1
          fi
        done
        ;;
      needs-command)
        __primus_gate_value value PATH || continue  # no PATH: the hook's shell decides
        for word in "${words[@]}"; do
          __primus_gate_on_path "$word" "$value" || return 1
        done
        ;;
      needs-file)
        [[ ${#words[@]} -ge 3 && ${words[1]} == in ]] || continue
        for word in "${words[@]:2}"; do
          __primus_gate_value value "$word" && [[ -n $value ]] || continue
          [[ -f $value/${words[0]} ]] || return 1
          break
        done
        ;;
    esac
  done
  ((gated == 0 || opened == 1))
}

# __primus_gate_value VAR NAME: VAR = NAME's value as the hook would see it
# (an earlier hook's env. line wins); status 1 when it would be unset. Uses
# primus_hook_gate_open's arrays.
__primus_gate_value() {
  local i
  for ((i = ${#__primus_gate_names[@]} - 1; i >= 0; i--)); do
    if [[ ${__primus_gate_names[i]} == "$2" ]]; then
      printf -v "$1" '%s' "${__primus_gate_values[i]}"
      return 0
    fi
  done
  [[ -v $2 ]] || return 1
  printf -v "$1" '%s' "${!2}"
}

# __primus_gate_on_path CMD PATH: true when the hook's `command -v CMD` could
# find CMD: an executable file in a PATH directory (an empty entry is the
# working directory), a path that is executable, or a function of that name.
__primus_gate_on_path() {
  local dir IFS=:
  if [[ $1 == */* ]]; then
    [[ -f $1 && -x $1 ]]
    return
  fi
  ! declare -F "$1" >/dev/null || return 0
  # The ':' added keeps a trailing empty entry (word splitting drops the last one).
  for dir in $2:; do
    [[ -n $dir ]] || dir=.
    [[ ! -f $dir/$1 || ! -x $dir/$1 ]] || return 0
  done
  return 1
}
