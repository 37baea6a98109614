# shellcheck shell=bash
# runner/lib/launch_log.sh: the direct launcher's log file: its default name,
# claiming it without overwriting anything, and copying the launcher's output
# into it. Sourced by runner/primus-cli-direct.sh; defines only primus_* /
# PRIMUS_* names and never changes shell options.
#
#   primus_launch_log_default VAR WORKSPACE NODE_RANK
#       VAR = WORKSPACE/logs/primus-<UTC>-node<NODE_RANK>.log
#   primus_launch_log_claim VAR
#       create the file VAR names, or name-1.log, name-2.log, ... when taken
#   primus_launch_log_full VAR PATH
#       true when the filesystem holding PATH (or its first existing parent)
#       has no space left; VAR = that directory
#   primus_launch_log_space VAR LOG_FILE WORKSPACE
#       status 1 when either is on a full filesystem; VAR = the error to show
#   primus_launch_log_tee FILE SILENT
#       from now on stdout and stderr also go to FILE (SILENT=1: stdout only
#       to FILE); the console stays on descriptors 3 and 4
#   primus_launch_log_flush
#       close the copy's pipes so every line is written before the launcher exits
#   primus_launch_log_lost LOG_FILE RC
#       the closing lines of a run whose copy lost output (the log writer
#       died: $PRIMUS_RC_DIR/lost-output, noted by the run monitor), written
#       to the console and to LOG_FILE directly, never through the copy
#
# The copy is python/primus_runner/launch/logwriter.py, one process for both
# streams (PRIMUS_LOG_TEE_PID): a log file that cannot be written (a full disk) never fails the workload nor
# the launcher (one warning per launch, PRIMUS_LOG_ONCE; the console keeps its
# output), and a console that goes away (`| head`) never cuts the log file.

if [[ -n ${__PRIMUS_LAUNCH_LOG_SH:-} ]]; then
  return 0
fi
__PRIMUS_LAUNCH_LOG_SH=1

PRIMUS_LOG_TEE_PID=""

# primus_launch_log_default VAR WORKSPACE NODE_RANK: the default log file.
primus_launch_log_default() {
  local __primus_stamp
  primus_utc_now __primus_stamp ""
  printf -v "$1" '%s' "$2/logs/primus-$__primus_stamp-node$3.log"
}

# primus_launch_log_claim VAR: create the file VAR names without overwriting
# anything: when the name is taken, name-1.log, name-2.log, ... VAR becomes the
# file created. Returns 1 when the directory cannot be created and 2 when the
# file cannot (VAR then names the directory or the file that failed).
primus_launch_log_claim() {
  local -n __primus_log=$1
  local base=${__primus_log%.log} candidate=$__primus_log n=0 log_dir
  primus_dir_of log_dir "$__primus_log"
  if [[ ! -d $log_dir ]] && ! mkdir -p -- "$log_dir" 2>/dev/null; then
    __primus_log=$log_dir
    return 1
  fi
  until (set -o noclobber && : >"$candidate") 2>/dev/null; do
    if [[ ! -e $candidate ]]; then
      __primus_log=$candidate
      return 2
    fi
    n=$((n + 1))
    candidate=$base-$n.log
  done
  __primus_log=$candidate
}

# primus_launch_log_full VAR PATH: see the header (`stat -f`: blocks free to
# an unprivileged writer; zero is a full disk, as df reports it).
primus_launch_log_full() {
  local -n __primus_full_dir=$1
  local __primus_d=$2 __primus_free
  while [[ -n $__primus_d && ! -d $__primus_d ]]; do
    primus_dir_of __primus_d "$__primus_d"
  done
  __primus_full_dir=$__primus_d
  __primus_free=$(stat -f -c %a -- "$__primus_d" 2>/dev/null) || return 1
  [[ $__primus_free == 0 ]]
}

# primus_launch_log_space VAR LOG_FILE WORKSPACE: see the header.
primus_launch_log_space() {
  local -n __primus_space_msg=$1
  local what dir
  __primus_space_msg=""
  for what in "log file=$2" "workspace=$3"; do
    primus_launch_log_full dir "${what#*=}" || continue
    __primus_space_msg="the ${what%%=*} '${what#*=}' is on a full filesystem ($dir: no space left on device); nothing was started. Fix: free space there, or choose another place (--log_file; PRIMUS_WORKSPACE or config direct.workspace)."
    return 1
  done
}

# primus_launch_log_tee FILE SILENT: from now on, everything also goes to
# FILE, through one logwriter.py process for both streams (stdin: stdout; a
# second pipe: stderr). The writer ignores the signals that stop a run: a
# SIGTERM to the launcher's process group (timeout, kill -- -PGID) must not cut
# the stop's own lines; it ends when the last writer of both pipes closes them.
primus_launch_log_tee() {
  local file=$1 writer=$PRIMUS_ROOT/python/primus_runner/launch/logwriter.py
  local -a once=() console=(--console-fd 3)
  local out out_r out_w err err_r err_w
  exec 3>&1 4>&2
  # The file whose removal claims the one "cannot write the log" warning of
  # this launch, shared with the run monitor's rank files (monitor/rankout.py).
  if primus_temp_file PRIMUS_LOG_ONCE primus-log-once; then
    export PRIMUS_LOG_ONCE
    once=(--once "$PRIMUS_LOG_ONCE")
  fi
  [[ $2 != 1 ]] || console=()  # --silent: stdout only to the file
  # Two pipes, one end each for the writer and for this shell.
  exec {out}<> <(:)
  # shellcheck disable=SC2094  # one end each of the pipe, on purpose
  exec {out_r}<"/proc/self/fd/$out" {out_w}>"/proc/self/fd/$out" {out}>&-
  exec {err}<> <(:)
  # shellcheck disable=SC2094  # one end each of the pipe, on purpose
  exec {err_r}<"/proc/self/fd/$err" {err_w}>"/proc/self/fd/$err" {err}>&-
  # A copy that dies (kill -9) leaves pipes without a reader: a write then
  # fails instead of ending the launcher with SIGPIPE (a trap, not an ignore,
  # so the workload still starts with the default action).
  trap ':' PIPE
  (
    trap '' INT TERM HUP USR1 USR2
    exec "$PRIMUS_PYTHON" -I -S "$writer" --log "$file" "${console[@]}" --stderr-fd "$err_r" \
      --stderr-console-fd 4 --warn-fd 4 "${once[@]}" <&"$out_r" {out_r}<&- {out_w}>&- {err_w}>&-
  ) &
  PRIMUS_LOG_TEE_PID=$!
  exec 1>&"$out_w" 2>&"$err_w" {out_r}<&- {out_w}>&- {err_r}<&- {err_w}>&-
}

# primus_launch_log_flush: close the copy's pipes so every line is written before exit.
primus_launch_log_flush() {
  [[ -n $PRIMUS_LOG_TEE_PID ]] || return 0
  exec 1>&3 2>&4
  wait "$PRIMUS_LOG_TEE_PID" 2>/dev/null || true
  PRIMUS_LOG_TEE_PID=""
  [[ -z ${PRIMUS_LOG_ONCE:-} ]] || rm -f -- "$PRIMUS_LOG_ONCE"
}

# primus_launch_log_lost LOG_FILE RC: see the header.
primus_launch_log_lost() {
  local log=$1 rc=$2 line how="finished successfully (exit code 0)"
  ((rc == 0)) || how="failed with exit code $rc"
  local -a lines=()
  mapfile -t lines <"$PRIMUS_RC_DIR/lost-output" 2>/dev/null || true
  lines+=("workload $how, but its console and log are incomplete (above); the full per-rank output is in ${log%.log}.ranks/; log: $log")
  for line in "${lines[@]}"; do
    { LOG_WARN "$line" 2>&4; } 2>/dev/null || true
    { LOG_WARN "$line" 2>>"$log"; } 2>/dev/null || true
  done
}
