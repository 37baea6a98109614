# shellcheck shell=bash
# runner/lib/processes.sh: whether a process still runs (read from /proc, no
# fork), how a child of this shell ended, and a signal number's name. The run's
# processes, which are its ranks and how to stop them are decided in Python
# (python/primus_runner/monitor/members.py, supervise.py). Sourced by runner/lib/supervise.sh,
# runner/lib/container_watch.sh and runner/helpers/srun_parent.sh; defines
# only primus_* / __PRIMUS_* names and never changes shell options.

if [[ -n ${__PRIMUS_PROCESSES_SH:-} ]]; then
  return 0
fi
__PRIMUS_PROCESSES_SH=1

# primus_any_alive PID...: true while one of the PIDs runs (zombies count as gone).
primus_any_alive() {
  local pid stat
  for pid in "$@"; do
    { read -r stat <"/proc/$pid/stat"; } 2>/dev/null || continue
    [[ ${stat##*) } == Z* ]] || return 0
  done
  return 1
}

# primus_child_ended VAR PID: status 1 while this shell's child PID runs; else
# PID is reaped and VAR says how it ended ("killed by SIGKILL: kill -9 or the
# OOM killer; sender unknown", "ended with status N"). No fork: it runs in
# SIGCHLD traps (runner/lib/watchdog.sh, runner/lib/container_watch.sh).
primus_child_ended() {
  local __primus_rc=0 __primus_sig
  ! kill -0 "$2" 2>/dev/null || return 1
  wait "$2" 2>/dev/null || __primus_rc=$?
  if ((__primus_rc > 128)); then
    primus_signal_name __primus_sig $((__primus_rc - 128))
    printf -v "$1" '%s' "killed by SIG$__primus_sig: kill -9 or the OOM killer; sender unknown"
  else
    printf -v "$1" '%s' "ended with status $__primus_rc"
  fi
}

# primus_signal_name VAR NUMBER: VAR = TERM, INT, ... for the closing line. No
# subshell: it runs in SIGCHLD traps, where a command substitution's own child
# makes bash warn "run_pending_traps: bad value in trap_list".
primus_signal_name() {
  local __primus_word
  case $2 in
    1) __primus_word=HUP ;;
    2) __primus_word=INT ;;
    9) __primus_word=KILL ;;
    10) __primus_word=USR1 ;;
    12) __primus_word=USR2 ;;
    15) __primus_word=TERM ;;
    *) __primus_word=$2 ;;
  esac
  printf -v "$1" '%s' "$__primus_word"
}
