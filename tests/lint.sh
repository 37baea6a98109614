#!/usr/bin/env bash
# tests/lint.sh: shellcheck every shell file of the repository (`make lint`).
# A shell file is *.sh, *.bash, *.bats, runner/primus-cli, .ci/run, or any
# tracked/untracked (not ignored) file whose first line names bash or sh.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
shellcheck=${SHELLCHECK:-.venv/bin/shellcheck}

files=()
while IFS= read -r -d '' f; do
  [[ -f $f ]] || continue
  case $f in
    node_modules/*) continue ;;
    *.sh | *.bash | *.bats | runner/primus-cli | .ci/run) files+=("$f") ;;
    *)
      IFS= read -r first <"$f" 2>/dev/null || first=""
      [[ $first =~ ^\#!.*(ba)?sh ]] && files+=("$f")
      ;;
  esac
done < <(git ls-files -z -co --exclude-standard)

"$shellcheck" -x "${files[@]}"
echo "shellcheck: ${#files[@]} files clean"
