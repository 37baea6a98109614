# shellcheck shell=bash
# runner/lib/launch_hooks.sh: the direct launcher's side of the hook protocol
# (docs/hooks-and-patches.md "Hooks, gates and patches"): run the hook runner or the patch runner and apply the NUL
# records it prints (runner/helpers/execute_hooks.sh says what they are).
# Sourced by runner/primus-cli-direct.sh; defines only primus_* / PRIMUS_*
# names and never changes shell options.
#
#   primus_hooks_run DRY_RUN [WORKLOAD...]
#       global hooks, then hooks/<group>/<name>/ for the first two workload words
#   primus_hooks_run_patches DRY_RUN PATCH...
#       the patches (--patch, direct.patch), after the hooks
# env records are exported (their origin noted for env show), extra records
# are appended to PRIMUS_EXTRA_ARGS as --name value. A failing runner ends the
# launch with its exit code. The runner (runner/lib/hook_runner.sh, the code of
# execute_hooks.sh and execute_patches.sh) runs in a subshell of the launcher:
# a process of its own, without a bash start.

if [[ -n ${__PRIMUS_LAUNCH_HOOKS_SH:-} ]]; then
  return 0
fi
__PRIMUS_LAUNCH_HOOKS_SH=1

# shellcheck source=runner/lib/hook_exec.sh
source "${BASH_SOURCE[0]%/*}/hook_exec.sh"
# shellcheck source=runner/lib/hook_gates.sh
source "${BASH_SOURCE[0]%/*}/hook_gates.sh"
# shellcheck source=runner/lib/hook_checks.sh
source "${BASH_SOURCE[0]%/*}/hook_checks.sh"
# shellcheck source=runner/lib/hook_runner.sh
source "${BASH_SOURCE[0]%/*}/hook_runner.sh"

PRIMUS_EXTRA_ARGS=()

# primus_hooks_on_record KIND NAME VALUE: env -> export, extra -> --name value.
primus_hooks_on_record() {
  case $1 in
    env)
      printf -v "$2" '%s' "$3"
      export "${2?}"
      primus_secret_note "$2"
      primus_env_note_origin "$2" hook
      ;;
    extra) PRIMUS_EXTRA_ARGS+=("--$2" "$3") ;;
    # The helper's records the runner read for the workload's hooks
    # (primus_helper_hook_inputs_here, runner/lib/launch_helper.sh).
    helper-env) primus_helper_on_record env "$2" "$3" ;;
    helper) [[ $2 != hooks-read ]] || __PRIMUS_HELPER_HOOKS_READ=1 ;;
    *) LOG_WARN "ignoring unknown hook record kind '$1'" ;;
  esac
}

# primus_hooks_read_records: NUL records kind\0name\0value\0 on stdin.
# mapfile, not read -d '': that one shifts the records after a value that is
# not UTF-8 in a UTF-8 locale (runner/lib/launch_helper.sh).
primus_hooks_read_records() {
  local -a __primus_rec
  while mapfile -n 3 -d '' -t __primus_rec && ((${#__primus_rec[@]} == 3)); do
    primus_hooks_on_record "${__primus_rec[@]}"
  done
}

# primus_hooks_apply DRY_RUN RUNNER ARGS...: run RUNNER (primus_hook_runner_main
# or primus_patch_runner_main, runner/lib/hook_runner.sh) with ARGS (and
# --dry-run when DRY_RUN is 1) in a subshell and apply its records.
# A TERM/HUP/INT to the launcher meanwhile goes to the runner, which stops the
# running hook's process group (TERM, grace, KILL: runner/lib/hook_exec.sh);
# the launcher waits for it and exits 128+N, as its own traps do.
primus_hooks_apply() {
  # __primus_ locals: a hook's env. line may name any variable (env.rc=...).
  local -a __primus_hooks_cmd=("${@:2}")
  [[ $1 != 1 ]] || __primus_hooks_cmd=("$2" --dry-run "${@:3}")
  local __primus_fd __primus_rc=0
  # The traps come first: a signal after the fork (a loaded host can run the
  # runner and its hook before the launcher's next command) is kept until the
  # runner's pid is known, then handled.
  __PRIMUS_HOOKS_PID="" __PRIMUS_HOOKS_PENDING=""
  trap 'primus_hooks_stop 15' TERM
  trap 'primus_hooks_stop 1' HUP
  trap 'primus_hooks_stop 2' INT
  # PRIMUS_HR_BEFORE_GROUP a plain assignment: in front of the call it would be
  # exported to every hook.
  exec {__primus_fd}< <(set -euo pipefail; PRIMUS_HR_BEFORE_GROUP=primus_helper_hook_inputs_here; "${__primus_hooks_cmd[@]}")
  __PRIMUS_HOOKS_PID=$!
  [[ -z $__PRIMUS_HOOKS_PENDING ]] || primus_hooks_stop "$__PRIMUS_HOOKS_PENDING"
  primus_hooks_read_records <&"$__primus_fd"
  exec {__primus_fd}<&-
  wait "$__PRIMUS_HOOKS_PID" || __primus_rc=$?
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  trap 'exit 130' INT
  ((__primus_rc == 0)) || exit "$__primus_rc"
}

# primus_hooks_stop N: the trap while the hook runner runs: signal N to it, wait
# until it has stopped the hook's tree, exit 128+N.
primus_hooks_stop() {
  if [[ -z $__PRIMUS_HOOKS_PID ]]; then
    __PRIMUS_HOOKS_PENDING=$1
    return 0
  fi
  trap '' TERM HUP INT
  kill -"$1" "$__PRIMUS_HOOKS_PID" 2>/dev/null || true
  wait "$__PRIMUS_HOOKS_PID" 2>/dev/null || true
  exit $((128 + $1))
}

# primus_hooks_run DRY_RUN [WORKLOAD...]: group and name are the
# first two workload words (with fewer, empty ones: only the global hooks
# run), handed over as option values; the workload words follow `--` as data,
# whatever they start with.
primus_hooks_run() {
  local __primus_dry=$1
  shift
  primus_hooks_apply "$__primus_dry" primus_hook_runner_main --group "${1-}" --name "${2-}" -- "${@:3}"
}

# primus_hooks_run_patches DRY_RUN PATCH...: every patch must exist.
primus_hooks_run_patches() {
  local __primus_dry=$1 __primus_patch
  shift
  (($# > 0)) || return 0
  for __primus_patch in "$@"; do
    primus_require_file "$__primus_patch" "patch (--patch / direct.patch)"
  done
  primus_hooks_apply "$__primus_dry" primus_patch_runner_main "$@"
}
