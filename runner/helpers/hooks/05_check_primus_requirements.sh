#!/usr/bin/env bash
# 05_check_primus_requirements.sh: are the repository's requirements installed?
# primus-hook-needs-file: requirements.txt in PRIMUS_PATH PRIMUS_ROOT
# primus-hook-installs: PRIMUS_AUTO_INSTALL
#
# No gate. Upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/. Reads <repo>/requirements.txt, <repo> =
# $PRIMUS_PATH, else $PRIMUS_ROOT (absent -> nothing to do). Each line that is
# not empty, a comment or an option (-r, -e, --...) names a distribution: the
# text before the first of > < = ! ; [ or a space, normalised (runs of - _ .
# become -, lower case); `git+` lines always count as missing. One python call
# checks them all (importlib.metadata).
# Missing ones are listed as a warning, then:
#   PRIMUS_STRICT_REQUIREMENTS=1 -> exit 66 (launch exit 1)   (checked first)
#   PRIMUS_AUTO_INSTALL=1        -> pip install -q -r requirements.txt (only
#                                   shown under dry run); failure -> exit 66
#   otherwise                    -> exit 0
set -uo pipefail

REQ=${PRIMUS_PATH:-${PRIMUS_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}}/requirements.txt
[[ -f $REQ ]] || exit 0
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"

# requirement_names: print one normalised name per requirement line of $REQ
# (git+ lines as "git+<line>").
requirement_names() {
  local line name
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%$'\r'}
    line=${line#"${line%%[![:space:]]*}"}
    [[ -n $line && $line != '#'* && $line != -* ]] || continue
    if [[ $line == git+* ]]; then
      printf '%s\n' "$line"
      continue
    fi
    name=${line%%[<>=!;\[ ]*}
    name=${name,,}
    name=$(sed -E 's/[-_.]+/-/g' <<<"$name")
    printf '%s\n' "$name"
  done <"$REQ"
}

readonly CHECK_PY='
import sys
from importlib import metadata
import re
have = {re.sub(r"[-_.]+", "-", (d.metadata["Name"] or "")).lower() for d in metadata.distributions()}
for name in sys.argv[1:]:
    if name.startswith("git+") or name not in have:
        print(name)
'

main() {
  local -a names=() missing=()
  mapfile -t names < <(requirement_names)
  ((${#names[@]})) || exit 0
  primus_pick_python
  mapfile -t missing < <("$PRIMUS_PYTHON" -c "$CHECK_PY" "${names[@]}")
  ((${#missing[@]})) || exit 0
  hook_warn "requirements of $REQ not installed for $PRIMUS_PYTHON: ${missing[*]}"
  if [[ ${PRIMUS_STRICT_REQUIREMENTS:-0} == 1 ]]; then
    hook_missing "PRIMUS_STRICT_REQUIREMENTS=1 and ${#missing[@]} requirement(s) of $REQ are missing (${missing[*]}); install them ($PRIMUS_PYTHON -m pip install -r $REQ), set PRIMUS_AUTO_INSTALL=1, or unset PRIMUS_STRICT_REQUIREMENTS."
  fi
  if [[ ${PRIMUS_AUTO_INSTALL:-0} == 1 ]]; then
    hook_pip install -q -r "$REQ" ||
      hook_missing "PRIMUS_AUTO_INSTALL=1: '$PRIMUS_PYTHON -m pip install -q -r $REQ' failed (see pip's output above); fix the requirement or install it by hand."
    return 0
  fi
  hook_info "set PRIMUS_AUTO_INSTALL=1 to install them, or PRIMUS_STRICT_REQUIREMENTS=1 to stop instead"
}

main "$@"
