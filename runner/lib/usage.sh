# shellcheck shell=bash
# runner/lib/usage.sh: the one help printer of every executable in the repository.
#
#   primus_usage FILE   print FILE's header comment as its help text: from line 2
#                       to the last comment line before the first line that is not
#                       a comment, "# " stripped; shellcheck directives left out.
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
