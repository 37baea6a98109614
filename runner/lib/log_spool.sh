# shellcheck shell=bash
# runner/lib/log_spool.sh: the early log. The log file's path is known only
# after the configuration is read, so until then the launcher's stdout and
# stderr are also copied to a spool file (two tee processes); the launcher
# then appends the spool to its log file, or hands it to the launcher it
# starts. A copy that dies is noticed and said (primus_log_spool_check).
# Sourced by runner/lib/common.sh (its logger asks primus_log_spool_check);
# defines only primus_* / __PRIMUS_* names and never changes shell options
# (primus_log_spool_start sets a PIPE trap: only launchers call it). The log
# holds everything the console showed; primus_log_spool_into FILE appends the
# spool to FILE and stops copying (the caller tees from then on).

__PRIMUS_SPOOL="" __PRIMUS_SPOOL_PIDS="" __PRIMUS_SPOOL_OWNER=""

# primus_log_spool_start: start copying stdout and stderr to the spool.
primus_log_spool_start() {
  [[ -z $__PRIMUS_SPOOL ]] || return 0
  primus_temp_file __PRIMUS_SPOOL primus-log || {
    __PRIMUS_SPOOL=""
    return 0
  }
  exec {__PRIMUS_SPOOL_OUT}>&1 {__PRIMUS_SPOOL_ERR}>&2
  # The copies ignore the stop signals a whole process group gets (Ctrl-C,
  # timeout, kill -- -PGID): the launcher's closing lines must still pass.
  # tee -p (GNU coreutils): a console that goes away (`| head`) never ends the
  # copy to the spool, nor the launcher by SIGPIPE.
  exec > >(trap '' INT TERM HUP USR1 USR2; exec tee -p -a -- "$__PRIMUS_SPOOL" >&"$__PRIMUS_SPOOL_OUT")
  __PRIMUS_SPOOL_PIDS=$!
  exec 2> >(trap '' INT TERM HUP USR1 USR2; exec tee -p -a -- "$__PRIMUS_SPOOL" >&"$__PRIMUS_SPOOL_ERR")
  __PRIMUS_SPOOL_PIDS+=" $!"
  __PRIMUS_SPOOL_OWNER=$BASHPID
  # A copy that dies (kill -9) leaves a pipe without a reader: a write then
  # fails (primus_log_spool_check notices) instead of ending the launcher with
  # SIGPIPE. A trap, not an ignore: what the launcher starts gets the default.
  trap ':' PIPE
}

# primus_log_spool_check: while the spool copies, a copy that died (kill -9,
# the OOM killer) is noticed at the next line the launcher logs (and before
# each hook): stop copying, write to the console directly, say so there, and
# note it for the log file (primus_log_spool_into). The console keeps every
# line; the log lacks the launcher's own lines from then until the log file
# takes over (PRIMUS_LOG_SPOOL_LOST says so; the launch's last line repeats it).
# Status 0 (it never ends a set -e launcher).
PRIMUS_LOG_SPOOL_LOST=""
primus_log_spool_check() {
  # Only the shell that started the copies (a hook's subshell must not stop them).
  [[ -n $__PRIMUS_SPOOL_PIDS && $BASHPID == "$__PRIMUS_SPOOL_OWNER" ]] || return 0
  local pid dead="" tries=1
  # "failed": a write to a copy failed, so one has died; bash reaps it between
  # two commands (until then kill -0 still finds it): look for up to 1 s.
  [[ ${1:-} != failed ]] || tries=20
  while ((tries-- > 0)); do
    for pid in $__PRIMUS_SPOOL_PIDS; do
      kill -0 "$pid" 2>/dev/null || dead+=" $pid"
    done
    [[ -z $dead && $tries -gt 0 ]] || break
    sleep 0.05
  done
  [[ -n $dead || ${1:-} == failed ]] || return 0
  [[ -n $dead ]] || dead=" ${__PRIMUS_SPOOL_PIDS# }"
  __primus_log_spool_stop
  local at
  primus_utc_now at -
  PRIMUS_LOG_SPOOL_LOST="the launcher's copy of its console to the log (pid${dead}) died at $at:"
  PRIMUS_LOG_SPOOL_LOST+=" the launcher's lines from then until the log file took over are on the console only"
  LOG_WARN "$PRIMUS_LOG_SPOOL_LOST" || true
  return 0
}

# primus_log_spool_active: true while the spool copies.
primus_log_spool_active() { [[ -n $__PRIMUS_SPOOL ]]; }

__primus_log_spool_stop() {
  [[ -n $__PRIMUS_SPOOL_PIDS ]] || return 0
  exec 1>&"$__PRIMUS_SPOOL_OUT" 2>&"$__PRIMUS_SPOOL_ERR"
  exec {__PRIMUS_SPOOL_OUT}>&- {__PRIMUS_SPOOL_ERR}>&-
  local pid
  for pid in $__PRIMUS_SPOOL_PIDS; do
    wait "$pid" 2>/dev/null || true
  done
  __PRIMUS_SPOOL_PIDS=""
}

# primus_log_spool_into FILE: stop copying and append the spool to FILE,
# preceded by the prelude a parent launcher left (PRIMUS_LOG_PRELUDE, see
# primus_log_spool_hand_over), which is then no longer offered to children.
# Status 1 when FILE could not be written (a full disk: the caller says so).
primus_log_spool_into() {
  local rc=0
  if [[ -n ${PRIMUS_LOG_PRELUDE:-} ]]; then
    [[ ! -f $PRIMUS_LOG_PRELUDE ]] || cat -- "$PRIMUS_LOG_PRELUDE" >>"$1" 2>/dev/null || rc=1
    unset PRIMUS_LOG_PRELUDE
  fi
  [[ -n $__PRIMUS_SPOOL ]] || return "$rc"
  primus_log_spool_check
  __primus_log_spool_stop
  cat -- "$__PRIMUS_SPOOL" >>"$1" 2>/dev/null || rc=1
  [[ -z $PRIMUS_LOG_SPOOL_LOST ]] || { LOG_WARN "$PRIMUS_LOG_SPOOL_LOST" 2>>"$1"; } 2>/dev/null || rc=1
  rm -f -- "$__PRIMUS_SPOOL"
  __PRIMUS_SPOOL=""
  return "$rc"
}

# primus_log_spool_hand_over: stop copying and offer the spool to the launcher
# about to start (exported as PRIMUS_LOG_PRELUDE: the first lines of its log
# file); the caller removes it with primus_log_prelude_remove when that ends.
primus_log_spool_hand_over() {
  [[ -n $__PRIMUS_SPOOL ]] || return 0
  __primus_log_spool_stop
  export PRIMUS_LOG_PRELUDE=$__PRIMUS_SPOOL
  __PRIMUS_SPOOL=""
}

# primus_log_prelude_remove: remove the spool handed over, if any.
primus_log_prelude_remove() {
  [[ -z ${PRIMUS_LOG_PRELUDE:-} ]] || rm -f -- "$PRIMUS_LOG_PRELUDE"
}

# primus_log_spool_drop: stop copying and forget the spool (dry run).
primus_log_spool_drop() {
  [[ -n $__PRIMUS_SPOOL ]] || return 0
  __primus_log_spool_stop
  rm -f -- "$__PRIMUS_SPOOL"
  __PRIMUS_SPOOL=""
}
