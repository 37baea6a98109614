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
#       from now on stdout and stderr go to two pipes whose read ends this
#       shell keeps (PRIMUS_OUT_R, PRIMUS_ERR_R); the run monitor copies them to
#       FILE and the console (SILENT=1: stdout only to FILE). The console stays
#       on descriptors 3 and 4. Sets PRIMUS_SUPERVISE_CLEANUP to the flush.
#   primus_launch_log_flush
#       close the pipes and wait for the run monitor (told `done` by
#       runner/lib/watchdog.sh), so every line is written before the launcher exits
#
# The copying is python/primus_runner/monitor/output.py, a thread of the run
# monitor (runner/lib/watchdog.sh starts it; PRIMUS_MONITOR_OUTPUT names the
# pipes): a log file that cannot be written (a full disk) never fails the
# workload nor the launcher (one warning per launch, PRIMUS_LOG_ONCE; the
# console keeps its output), a console that goes away (`| head`) never cuts the
# log file, and a monitor killed meanwhile loses nothing: the lines wait in the
# pipes, which this shell holds open, and the monitor started in its place takes
# them over.

if [[ -n ${__PRIMUS_LAUNCH_LOG_SH:-} ]]; then
  return 0
fi
__PRIMUS_LAUNCH_LOG_SH=1

PRIMUS_OUT_R="" PRIMUS_ERR_R="" PRIMUS_LOG_SILENT=0

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

# primus_launch_log_tee FILE SILENT: see the header. The copying starts with
# the run monitor; until then the lines wait in the pipes.
primus_launch_log_tee() {
  local out out_w err err_w
  exec 3>&1 4>&2
  # The file whose removal claims the one "cannot write the log" warning of
  # this launch (python/primus_runner/monitor/writer.py).
  if primus_temp_file PRIMUS_LOG_ONCE primus-log-once; then
    export PRIMUS_LOG_ONCE
  fi
  # shellcheck disable=SC2034  # read by runner/lib/watchdog.sh
  PRIMUS_LOG_SILENT=$((${2:-0} == 1))
  # Two pipes: the read end of each stays with this shell, for the run
  # monitor and any monitor started in its place.
  exec {out}<> <(:)
  # shellcheck disable=SC2094  # one end each of the pipe, on purpose
  exec {PRIMUS_OUT_R}<"/proc/self/fd/$out" {out_w}>"/proc/self/fd/$out" {out}>&-
  exec {err}<> <(:)
  # shellcheck disable=SC2094  # one end each of the pipe, on purpose
  exec {PRIMUS_ERR_R}<"/proc/self/fd/$err" {err_w}>"/proc/self/fd/$err" {err}>&-
  # A write to a pipe whose reader is gone fails instead of ending the launcher
  # with SIGPIPE (a trap, not an ignore, so the workload still starts with the
  # default action).
  trap ':' PIPE
  exec 1>&"$out_w" 2>&"$err_w" {out_w}>&- {err_w}>&-
  # Before the launcher exits (runner/lib/supervise.sh): the pipes' last lines.
  # shellcheck disable=SC2034  # read by runner/lib/supervise.sh
  PRIMUS_SUPERVISE_CLEANUP=primus_launch_log_flush
}

# primus_launch_log_flush: see the header.
primus_launch_log_flush() {
  [[ -n $PRIMUS_OUT_R ]] || return 0
  exec 1>&3 2>&4 {PRIMUS_OUT_R}<&- {PRIMUS_ERR_R}<&-
  PRIMUS_OUT_R="" PRIMUS_ERR_R=""
  # The monitor ends once both pipes have ended (or after a second without a
  # byte); `wait` cannot be trusted with a process substitution that is not
  # the last one, so look (primus_any_alive: runner/lib/processes.sh), 10 s at most.
  local pid=${PRIMUS_HANG_PID:-} looks=0
  while [[ -n $pid ]] && primus_any_alive "$pid" && ((looks++ < 200)); do
    sleep 0.05
  done
  [[ -z ${PRIMUS_LOG_ONCE:-} ]] || rm -f -- "$PRIMUS_LOG_ONCE"
}
