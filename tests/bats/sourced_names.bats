#!/usr/bin/env bats
# shellcheck disable=SC2016 # single-quoted $ in the scripts given to clean_bash is meant for that shell
# A library, not a layer: the files a user sources (base_env.sh,
# primus-env.sh and what they source from runner/lib/) define only prefixed names
# (primus_, __primus_, PRIMUS_, __PRIMUS_), plus the LOG_* logging
# functions (docs/run-on-one-node.md "What you see, and where it goes"), so the caller's own functions and variables survive sourcing.

load layers_helper

# The caller's own helpers, with the names shell scripts commonly use.
CALLER_DEFS='
die() { echo "my die $*"; }
require_file() { echo "my require_file $*"; }
require_command() { echo "my require_command $*"; }
log() { echo "my log $*"; }
warn() { echo "my warn $*"; }
usage() { echo "my usage"; }
dir=mine name=mine rc=mine value=mine origin=mine entry=mine list=mine
'
SNAPSHOT='{ declare -f die require_file require_command log warn usage; declare -p dir name rc value origin entry list; }'

@test "a caller's die, require_file, require_command, log, warn, usage and variables survive sourcing" {
  local loader
  for loader in "$BASE_ENV" "$PRIMUS_ENV"; do
    run --separate-stderr clean_bash PRIMUS_PYTHON="$VENV_PY" PRIMUS_SYSFS_ROOT="$SYSFS/mi300x-2gpu" \
      PRIMUS_DEV_ROOT="$SYSFS/mi300x-2gpu" -- \
      "$CALLER_DEFS
before=\$($SNAPSHOT)
source '$loader' >/dev/null
after=\$($SNAPSHOT)
[[ \$before == \"\$after\" ]] && echo same || { echo changed; diff <(echo \"\$before\") <(echo \"\$after\"); }
die x; require_file y"
    assert_success
    assert_line same
    assert_line "my die x"
    assert_line "my require_file y"
  done
}

@test "every function and shell variable the sourced files define is prefixed" {
  run --separate-stderr clean_bash PRIMUS_PYTHON="$VENV_PY" PRIMUS_SYSFS_ROOT="$SYSFS/trn1.32xlarge" \
    PRIMUS_DEV_ROOT="$SYSFS/trn1.32xlarge" PRIMUS_FRAMEWORK=maxtext -- '
fns=$(compgen -A function | sort); vars=$(compgen -v | sort)
source "'"$PRIMUS_ENV"'" >/dev/null 2>&1
comm -13 <(echo "$fns") <(compgen -A function | sort) | sed "s/^/function /"
# Shell variables that are not exported: exported ones are the job environment.
comm -13 <(echo "$vars") <(compgen -v | sort) | while read -r v; do
  [[ $v == fns || $v == vars ]] && continue
  declare -p "$v" 2>/dev/null | grep -q "^declare -[a-zA-Z]*x" || echo "variable $v"
done'
  assert_success
  local line bad=()
  for line in "${lines[@]}"; do
    case $line in
      "function "__primus_* | "function "primus_* | "function "LOG_*) ;;
      "variable "__PRIMUS_* | "variable "PRIMUS_* | "variable "__primus_*) ;;
      "variable "BASH_REMATCH | "variable "PIPESTATUS | "variable "_) ;;  # bash's own
      *) bad+=("$line") ;;
    esac
  done
  ((${#lines[@]} > 20)) || { echo "too few names seen: ${lines[*]}"; return 1; }
  ((${#bad[@]} == 0)) || { printf 'unprefixed: %s\n' "${bad[@]}"; return 1; }
}

@test "runner/lib/shellopts.sh and env_origin.sh are libraries: sourcing them changes nothing else" {
  run clean_bash -- '
set -eu; before=$-
source "'"$REPO_ROOT"'/runner/lib/shellopts.sh"
source "'"$REPO_ROOT"'/runner/lib/env_origin.sh"
[[ $- == "$before" ]] && echo opts-same
primus_opts_save; [[ $- != *e* && $- != *u* ]] && echo inside-off
primus_opts_save; primus_opts_restore; [[ $- != *e* ]] && echo nested-still-off
primus_opts_restore; [[ $- == "$before" ]] && echo restored
export MINE=1; primus_env_fallback MINE 2 default; primus_env_fallback NEW 3 default
echo "MINE=$MINE NEW=$NEW ${__PRIMUS_ORIGIN[MINE]} ${__PRIMUS_ORIGIN[NEW]}"'
  assert_success
  assert_line opts-same
  assert_line inside-off
  assert_line nested-still-off
  assert_line restored
  assert_line "MINE=1 NEW=3 user default"
}
