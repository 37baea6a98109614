#!/usr/bin/env bash
# runner/helpers/execute_patches.sh: run patch scripts after the hooks (docs/hooks-and-patches.md "Hooks and patches").
#
# Usage:
#   execute_patches.sh [--dry-run] PATCH...
#
# Runs every given patch script (.sh with bash, .py with $PRIMUS_PYTHON) in the
# order given (direct.patch entries, then each --patch), with exactly the
# protocol, records, dry-run rule and exit codes of execute_hooks.sh (see
# `execute_hooks.sh --help`): stdout lines env.NAME=VALUE and extra.name=value
# become NUL records on this script's stdout.
#
# Exit codes of a patch (those of the upstream Primus runner's execute_patches.sh):
#   0      done
#   2      skipped (nothing to do here): its env./extra. lines still apply and
#          the next patch runs
#   other  failure: everything stops (exit 3, its stderr and stdout shown; 66 -> 1,
#          78 -> 2 as for hooks)
#
# PRIMUS_PATCHES is not read here: it selects Primus's own Python patches
# (Primus docs, environment variables: "Primus core"); every patch you pass with --patch / direct.patch runs.
set -euo pipefail
HERE=${BASH_SOURCE[0]%/*}; [[ $HERE != "${BASH_SOURCE[0]}" ]] || HERE=.

# shellcheck source=runner/lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source=runner/lib/hook_exec.sh
source "$HERE/../lib/hook_exec.sh"
# shellcheck source=runner/lib/hook_gates.sh
source "$HERE/../lib/hook_gates.sh"
# shellcheck source=runner/lib/hook_runner.sh
source "$HERE/../lib/hook_runner.sh"

usage() {
  primus_usage "${BASH_SOURCE[0]}"
}

main() {
  local -a pass=()
  while (($#)); do
    case $1 in
      -h | --help) usage; return 0 ;;
      --dry-run) pass=(--dry-run); shift ;;
      --) shift; break ;;
      -*) primus_die "$PRIMUS_EXIT_INVALID" "unknown option '$1'; usage: execute_patches.sh [--dry-run] PATCH..." ;;
      *) break ;;
    esac
  done
  (($#)) || return 0
  primus_patch_runner_main "${pass[@]}" "$@"
}

main "$@"
