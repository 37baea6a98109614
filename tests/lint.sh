#!/usr/bin/env bash
# tests/lint.sh: the lint gate (`make lint`); each step can fail it:
#   - shellcheck: every shell file: *.sh, *.bash, *.bats, runner/primus-cli, .ci/run, or any
#     tracked/untracked (not ignored) file whose first line names bash or sh
#   - ruff: python/, tests/ and runner/ (rules in pyproject.toml [tool.ruff])
#   - mypy: strict on the package python/primus_runner (pyproject.toml [tool.mypy]),
#     then on the Python scripts under runner/ (torchrun_quiet.py, the hooks' steps)
# Tools: SHELLCHECK, RUFF, MYPY (default: the project's .venv/bin/...).
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../runner/lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
shellcheck=${SHELLCHECK:-.venv/bin/shellcheck}
ruff=${RUFF:-.venv/bin/ruff}
mypy=${MYPY:-.venv/bin/mypy}

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
"$ruff" check --quiet python tests runner
echo "ruff: python tests runner clean"
"$mypy"  # files and strictness from pyproject.toml
scripts=()
mapfile -t scripts < <(git ls-files -co --exclude-standard -- 'runner/*.py')
# Several hooks' steps are all named prepare.py: module names from their paths.
"$mypy" --explicit-package-bases "${scripts[@]}"
