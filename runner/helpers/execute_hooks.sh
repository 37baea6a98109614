#!/usr/bin/env bash
# runner/helpers/execute_hooks.sh: run the launch hooks (docs/hooks-and-patches.md "Hooks and patches").
#
# Usage:
#   execute_hooks.sh [--dry-run] [--hooks-dir DIR] --group G --name N -- [workload args...]
#   execute_hooks.sh [--dry-run] [--hooks-dir DIR] <group> <name> [workload args...]
#   execute_hooks.sh [--dry-run] [--label WORD] [--skip-exit CODE] --scripts FILE... [-- workload args...]
# The first form is the launcher's: G and N (the first two workload words, maybe
# empty) are option values and everything after `--` is data, so workload words
# such as --help, --dry-run or --hooks-dir are never taken as this script's options.
#
# Runs, in name order, the global hooks DIR/NN_*.sh and DIR/NN_*.py, then every
# DIR/<group>/<name>/*.sh and *.py (e.g. hooks/train/pretrain/). DIR defaults to
# $PRIMUS_HOOKS_DIR, else runner/helpers/hooks. `.sh` files run with bash, `.py`
# files with $PRIMUS_PYTHON (else python3); each gets the workload args as its
# arguments, and PRIMUS_HOOK_GROUP / PRIMUS_HOOK_NAME / PRIMUS_ROOT /
# PRIMUS_RUNNER_DIR / PRIMUS_PYTHON in its environment. --scripts runs exactly
# the given files instead (execute_patches.sh uses it). --skip-exit CODE: a
# script exiting CODE was skipped (its protocol lines still apply) and the next
# one runs (patches: 2, as the upstream Primus runner's execute_patches.sh).
#
# Protocol (only a hook's stdout is parsed; its stderr passes straight through):
#   env.NAME=VALUE    export NAME=VALUE (VALUE literal: everything after the
#                     first '='); NAME must be a shell identifier, and
#                     not one of bash's own variables nor a read-only one
#                     of the launcher.
#   extra.name=value  append `--name value` to the workload args.
#   anything else     shown to the user (on stderr, secrets masked).
# env. values reach the following hooks; extra. options are appended to the
# arguments of the following hooks too.
#
# Gate: a hook may declare in its first 30 lines
#   `# primus-hook-gate: VAR [VAR...]`        open when one VAR is set and not 0
#   `# primus-hook-when-unset: VAR [VAR...]`  open when one VAR is unset or empty
# (one open line opens the hook) and what it needs to do anything (each
# unmet one closes it):
#   `# primus-hook-skip-when: VAR=VALUE...`   closed when one VAR is VALUE
#   `# primus-hook-needs-command: CMD...`     closed unless each CMD is on PATH
#   `# primus-hook-needs-file: FILE in VAR...`  closed unless FILE is in the
#                                             directory of the first VAR set
# (values after earlier hooks' env. lines). A closed hook is not started at
# all (it would only exit 0).
#
# Checks first: `# primus-hook-installs:` marks a hook that installs, builds
# or downloads (`# primus-hook-installs: VAR...`: only when one VAR is set and
# not 0). Before the first open one, every later open hook declaring
# `# primus-hook-checks-first:` runs once with PRIMUS_DRY_RUN=1 (its output
# shown only when it fails); a failure ends the run, before anything is
# installed, with the code its real run would give. Not in a dry run.
#
# This script's own stdout carries only NUL-delimited records, in order:
#   env\0NAME\0VALUE\0     and     extra\0NAME\0VALUE\0
# Logs (each hook's duration) go to stderr. Everything on stderr (the hooks'
# own stderr, live, and this script's lines) passes through one masking
# process, in order; it is restarted only when a hook emits a secret env. value,
# so the next hooks' output masks that value too.
#
# Dry run (--dry-run or PRIMUS_DRY_RUN=1): hooks run with PRIMUS_DRY_RUN=1 and
# must change nothing; they print what they would do and the lines they would emit.
#
# Exit codes:
#   0  every hook succeeded
#   1  a hook exited 66 (missing file or dependency), or --scripts names a missing file
#   2  bad arguments; a hook printed an invalid env./extra. line; or a hook
#      exited 78 (configuration error: EX_CONFIG from sysexits.h)
#   3  a hook failed with any other non-zero code (its stdout is shown after
#      its stderr, which was shown as it ran), or ran longer than
#      PRIMUS_HOOK_TIMEOUT seconds (default 1800, 0: no limit) and was stopped
#   128+N  this runner got signal N (TERM, HUP, INT) while a hook ran: the hook's
#      process group got it too, then SIGKILL after PRIMUS_KILL_GRACE
# Each hook runs in a process group of its own (runner/lib/hook_exec.sh) and is
# named on stderr as it starts.
# The first failing hook stops everything. The dedicated codes 66 / 78 (rather
# than 1 / 2) keep a stray `grep`/`ls` failure inside a hook from being
# misreported as a configuration error.
set -euo pipefail
HERE=${BASH_SOURCE[0]%/*}; [[ $HERE != "${BASH_SOURCE[0]}" ]] || HERE=.

# shellcheck source=runner/lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source=runner/lib/hook_exec.sh
source "$HERE/../lib/hook_exec.sh"
# shellcheck source=runner/lib/hook_gates.sh
source "$HERE/../lib/hook_gates.sh"

# shellcheck source=runner/lib/hook_checks.sh
source "$HERE/../lib/hook_checks.sh"
# shellcheck source=runner/lib/hook_runner.sh
source "$HERE/../lib/hook_runner.sh"

primus_hook_runner_main "$@"
