#!/usr/bin/env bash
# runner/helpers/execute_patches.sh: run patch scripts after the hooks (SPEC section 8).
#
# Usage:
#   execute_patches.sh [--dry-run] PATCH...
#
# Runs the given patch scripts (.sh with bash, .py with $PRIMUS_PYTHON) in the
# order given, with exactly the protocol, records, dry-run rule and exit codes of
# execute_hooks.sh (see `execute_hooks.sh --help`): stdout lines env.NAME=VALUE
# and extra.name=value become NUL records on this script's stdout; a failing
# patch stops everything (exit 3, its whole output shown).
#
# PRIMUS_PATCHES selects which of them run (reference section 2):
#   all or empty   run every given patch (the default)
#   none           run none
#   a,b,c          run only the patches whose base name, with or without its
#                  extension, is listed (e.g. `fix_x` or `fix_x.sh` selects
#                  /any/dir/fix_x.sh); items are trimmed; a listed name that
#                  matches no given patch is reported as a warning (the same list
#                  also selects the framework's own Python patches).
set -euo pipefail

# shellcheck source=runner/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

usage() {
  primus_usage "${BASH_SOURCE[0]}"
}

# trim VAR TEXT: store TEXT without leading/trailing blanks in VAR.
trim() {
  local text=$2
  text=${text#"${text%%[![:space:]]*}"}
  text=${text%"${text##*[![:space:]]}"}
  printf -v "$1" '%s' "$text"
}

# selected_patches SELECTION PATCH...: print (NUL-separated) the patches that
# SELECTION (the value of PRIMUS_PATCHES) enables, warn about unmatched names.
selected_patches() {
  local selection=$1
  shift
  local lowered=${selection,,}
  trim lowered "$lowered"
  if [[ -z $lowered || $lowered == all ]]; then
    if (($#)); then printf '%s\0' "$@"; fi
    return 0
  fi
  if [[ $lowered == none ]]; then
    LOG_INFO "PRIMUS_PATCHES=none: skipping ${#} patch(es)" >&2
    return 0
  fi
  local -a wanted=() matched=()
  local item patch base stem i
  IFS=, read -r -a wanted <<<"$selection"
  for ((i = 0; i < ${#wanted[@]}; i++)); do
    trim item "${wanted[i]}"
    wanted[i]=$item
    matched[i]=0
  done
  for patch in "$@"; do
    base=${patch##*/}
    stem=${base%.*}
    for ((i = 0; i < ${#wanted[@]}; i++)); do
      if [[ -n ${wanted[i]} && (${wanted[i]} == "$base" || ${wanted[i]} == "$stem") ]]; then
        printf '%s\0' "$patch"
        matched[i]=1
        break
      fi
    done
  done
  for ((i = 0; i < ${#wanted[@]}; i++)); do
    if [[ -n ${wanted[i]} && ${matched[i]} == 0 ]]; then
      LOG_WARN "PRIMUS_PATCHES lists '${wanted[i]}', which matches none of the given patches (${*##*/}); it is ignored here."
    fi
  done
}

main() {
  local -a pass=()
  while (($#)); do
    case $1 in
      -h | --help) usage; return 0 ;;
      --dry-run) pass+=(--dry-run); shift ;;
      --) shift; break ;;
      -*) primus_die "$PRIMUS_EXIT_INVALID" "unknown option '$1'; usage: execute_patches.sh [--dry-run] PATCH..." ;;
      *) break ;;
    esac
  done
  local -a patches=()
  local p
  while IFS= read -r -d '' p; do
    patches+=("$p")
  done < <(selected_patches "${PRIMUS_PATCHES:-}" "$@")
  ((${#patches[@]})) || return 0
  exec "$PRIMUS_RUNNER_DIR/helpers/execute_hooks.sh" "${pass[@]}" --label patch --scripts "${patches[@]}" --
}

main "$@"
