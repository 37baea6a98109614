# shellcheck shell=bash
# runner/lib/launch_start.sh: what a launcher does first, before it reads its
# other libraries. A library: it defines only primus_* functions and the
# PRIMUS_NOTICE_QUEUE array; it needs common.sh.
#
#   primus_default_sigint SCRIPT ARGS...
#       a launcher started with SIGINT ignored (a non-interactive shell's
#       `cmd &`) starts again with SIGINT at its default, so its INT trap
#       stops the launch (exit 130)
#   primus_notice_queue
#       USR1/USR2 (a preemption notice) neither end the launcher nor get lost
#       while it reads runner/lib/supervise.sh: they are queued, and
#       supervise.sh's primus_early_notice_traps handles them when it takes over

if [[ -n ${__PRIMUS_LAUNCH_START_SH:-} ]]; then
  return 0
fi
__PRIMUS_LAUNCH_START_SH=1

# shellcheck disable=SC2034  # read by supervise.sh (primus_early_notice_traps)
PRIMUS_NOTICE_QUEUE=()

# primus_default_sigint SCRIPT ARGS...: called first by the launchers. A
# non-interactive shell starts `cmd &` with SIGINT (and SIGQUIT) ignored, and a
# signal ignored on entry cannot be trapped or reset by bash (bash(1), SIGNALS),
# so SIGINT would do nothing to the launcher nor, inherited, to its ranks. Then
# start SCRIPT again in this same process (same pid) with SIGINT at its default:
# one read of /proc, and a Python start only in that case.
primus_default_sigint() {
  # __primus_ names: the exec below keeps them in the new process's environment
  # when the user exported the same name (docs/configuration.md "Your variables reach the ranks").
  local __primus_line __primus_mask=0
  while primus_read __primus_line; do
    [[ $__primus_line == SigIgn:* ]] || continue
    __primus_mask=${__primus_line##*[[:space:]]}
    break
  done 2>/dev/null <"/proc/$BASHPID/status" || return 0
  [[ $__primus_mask =~ ^[0-9a-fA-F]+$ ]] && ((16#${__primus_mask: -1} & 2)) || return 0
  primus_pick_python
  command -v "$PRIMUS_PYTHON" >/dev/null 2>&1 || return 0
  exec "$PRIMUS_PYTHON" -I -S -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$BASH" "$@"
}

# primus_notice_queue: queue USR1/USR2 until primus_early_notice_traps.
primus_notice_queue() {
  trap 'PRIMUS_NOTICE_QUEUE+=(USR1)' USR1
  trap 'PRIMUS_NOTICE_QUEUE+=(USR2)' USR2
}
