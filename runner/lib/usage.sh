# shellcheck shell=bash
# runner/lib/usage.sh: the one help printer of every executable in the repository.
#
#   primus_usage FILE   print FILE's header comment as its help text: from line 2
#                       to the last comment line before the first line that is not
#                       a comment, "# " stripped; shellcheck directives left out.
#
#   primus_help_options VAR FILE
#                       VAR = the --options FILE's help text lists (the candidates
#                       of a "did you mean" for a mistyped option)
#   primus_did_you_mean VAR WORD CANDIDATE...
#                       VAR = "; did you mean 'X'?" for the candidate closest to
#                       WORD, '' when none is close (or no Python runs): the one
#                       rule is python/primus_runner/usertext (did_you_mean)
#
# The help lives at the top of each script, so --help and the code cannot drift.
# A library: it only defines the function. Sourced by runner/lib/common.sh and by
# the scripts that do not need the rest of common.sh (bench/, tests/lint.sh, .ci/run).

primus_usage() {
  local line
  {
    IFS= read -r line || return 0 # line 1: the shebang or the shellcheck shell= directive
    while IFS= read -r line && [[ $line == '#'* ]]; do
      [[ $line == '# shellcheck '* ]] && continue
      line=${line#\#}
      printf '%s\n' "${line# }"
    done
  } <"$1"
}

primus_help_options() {
  local -n __primus_options=$1
  local line word
  local -A __primus_seen=()
  __primus_options=()
  while IFS= read -r line; do
    for word in $line; do
      word=${word%%[=,;:.)]*}
      [[ $word =~ ^--[a-z][a-z0-9_-]*$ && -z ${__primus_seen[$word]:-} ]] || continue
      __primus_seen[$word]=1
      __primus_options+=("$word")
    done
  done < <(primus_usage "$2")
}

primus_did_you_mean() {
  local -n __primus_hint=$1
  local word=$2
  shift 2
  local root py
  root=$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
  py=${PRIMUS_PYTHON:-$root/.venv/bin/python}
  [[ -x $py ]] || py=python3
  __primus_hint=$("$py" -c 'import sys; sys.path.insert(0, sys.argv[1])
from primus_runner.usertext import main
sys.exit(main(sys.argv[2:]))' "$root/python" suggest "$word" "$@" 2>/dev/null) || __primus_hint=""
}
