#!/usr/bin/env bats
# One help printer: every executable of the repository answers --help
# with exit 0 and its header text (runner/lib/usage.sh, primus_usage), and the text
# ends cleanly: no stray code line (`set -euo pipefail`, a shebang, a shellcheck
# directive), no comment marks left, no empty last line. Hooks are left out (their
# arguments are the workload's, so --help belongs to the workload), and so are the
# stubs under tests/fixtures/ that stand in for external tools.

load "$BATS_TEST_DIRNAME/../../node_modules/bats-support/load"
load "$BATS_TEST_DIRNAME/../../node_modules/bats-assert/load"

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"

executables() {
  local f
  while IFS= read -r f; do
    [[ -f $ROOT/$f && -x $ROOT/$f ]] || continue
    # Hooks take the workload's arguments; fixture stubs stand in for external tools.
    case $f in runner/helpers/hooks/* | tests/fixtures/* | tests/bats/* | tests/slurm/*.bats) continue ;; esac
    printf '%s\n' "$f"
  done < <(git -C "$ROOT" ls-files runner bench examples tests .ci)
}

@test "every executable: --help exits 0 with its header text, ending cleanly" {
  local f out last rc bad=0 count=0
  while IFS= read -r f; do
    count=$((count + 1))
    rc=0
    out=$(cd "$ROOT" && PRIMUS_LOG_COLOR=0 timeout 20 "./$f" --help 2>&1) || rc=$?
    if ((rc != 0)); then
      echo "$f --help: exit status $rc"$'\n'"$out"
      bad=$((bad + 1))
      continue
    fi
    last=${out##*$'\n'}
    if [[ -z $out || -z $last ]]; then
      echo "$f --help: empty text or an empty last line"
      bad=$((bad + 1))
    fi
    if grep -qE '^(set -[a-z]|#!|# ?shellcheck|shellcheck |#)' <<<"$out"; then
      echo "$f --help: stray line(s):"$'\n'"$(grep -E '^(set -[a-z]|#!|# ?shellcheck|shellcheck |#)' <<<"$out")"
      bad=$((bad + 1))
    fi
  done < <(executables)
  ((count >= 15)) || { echo "only $count executables found"; return 1; }
  ((bad == 0))
}

@test "sourced-only files print their header when executed, and say they must be sourced" {
  local f
  for f in runner/helpers/envs/base_env.sh runner/helpers/envs/primus-env.sh; do
    run bash "$ROOT/$f" --help
    assert_success
    refute_output --partial 'set -euo'
    refute_line --regexp '^#'
    run bash "$ROOT/$f"
    assert_failure 2
    assert_output --partial "must be sourced"
  done
}

@test "primus_usage: header from line 2 to the last comment line, '# ' stripped, directives left out" {
  local script=$BATS_TEST_TMPDIR/x.sh
  printf '%s\n' '#!/usr/bin/env bash' '# x.sh: does x.' '# shellcheck disable=SC2016' '#' '#   x.sh ARG' \
    'set -euo pipefail' '# not help' >"$script"
  run bash -c 'source "$1"; primus_usage "$2"' _ "$ROOT/runner/lib/usage.sh" "$script"
  assert_success
  assert_output "x.sh: does x.

  x.sh ARG"
}
