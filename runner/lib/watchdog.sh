# shellcheck shell=bash
# runner/lib/watchdog.sh: the launcher's side of the run monitor.
# Sourced by runner/lib/supervise.sh; defines only primus_* names, never changes
# shell options. It starts the run monitor (python -m primus_runner.monitor,
# python/primus_runner/monitor/: it writes the run's output, decides hang,
# stopped, mismatch, busy and straggler verdicts and asks
# python/primus_runner/diagnose for the stacks, and it is the run's
# parent-death guard, monitor/guard.py), watches it, and gives the workload
# what it needs to be watched; it reads no stacks itself.
#
#   primus_watchdog_env LOG_FILE MODE
#       before the workload starts: export PRIMUS_RUN_LOG (the log, so
#       `primus-cli stacks` finds the run) and PRIMUS_HEARTBEAT_DIR (<log>.ranks);
#       run mode single: also PRIMUS_HEARTBEAT_FILE (torchrun: run_worker.sh sets
#       it per rank)
#   primus_watchdog_start LOG_FILE RUN_ID
#       before the workload starts: PRIMUS_HANG_TIMEOUT (the last resort in
#       seconds, default 1800; 0 = no verdicts, the guard stays) and
#       PRIMUS_HANG_ACTION (report|stop, default report). A SIGCHLD trap
#       notices the monitor's death at once: named and restarted (every time).
#   primus_watchdog_tell LINE   one line on the monitor's stdin (a launch phase's end)
#   primus_watchdog_stop        the launch ends on purpose: "done", the monitor exits

PRIMUS_HANG_FD="" PRIMUS_HANG_PID="" PRIMUS_HANG_ERR_FD="" PRIMUS_HANG_RESTARTS=0
PRIMUS_HANG_STARTED=0 PRIMUS_HANG_QUICK=0 PRIMUS_HANG_QUICK_DEATHS=5 PRIMUS_HANG_GAVE_UP=0
PRIMUS_HANG_ARGS=()
# shellcheck source=runner/lib/flight_recorder.sh
source "$PRIMUS_SUPERVISE_DIR/lib/flight_recorder.sh"

primus_watchdog_env() {
  export PRIMUS_RUN_LOG=$1 PRIMUS_HEARTBEAT_DIR=${1%.log}.ranks
  if [[ $2 == single ]]; then
    [[ -d $PRIMUS_HEARTBEAT_DIR ]] || mkdir -p -- "$PRIMUS_HEARTBEAT_DIR" 2>/dev/null || true
    export PRIMUS_HEARTBEAT_FILE=$PRIMUS_HEARTBEAT_DIR/rank-${RANK:-${NODE_RANK:-0}}.heartbeat
  fi
}

# primus_watchdog_start: the verdict checked PRIMUS_HANG_TIMEOUT and
# PRIMUS_HANG_ACTION (registry types: seconds up to 9999999, report|stop); the
# defaults are the registry's (facts.sh). Anything else is read as the default.
primus_watchdog_start() {
  local timeout=${PRIMUS_HANG_TIMEOUT:-} action=${PRIMUS_HANG_ACTION:-} grace
  [[ $timeout =~ ^[0-9]{1,7}$ ]] || timeout=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_HANG_TIMEOUT]}
  [[ $action == report || $action == stop ]] || action=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_HANG_ACTION]}
  primus_kill_grace grace
  # The launcher's output pipes it copies (runner/lib/launch_log.sh); its own
  # stdout and stderr are the console.
  local output="" out=1 err=2
  if [[ -n ${PRIMUS_OUT_R:-} ]]; then
    output="$PRIMUS_OUT_R $PRIMUS_ERR_R ${PRIMUS_LOG_SILENT:-0}" out=3 err=4
  fi
  # stdin: a pipe only the launcher writes ("done": the launch ends on purpose;
  # end of file without it: the launcher died, and the monitor is the guard).
  exec {PRIMUS_HANG_FD}> >(PYTHONPATH=$PRIMUS_SUPERVISE_DIR/../python PRIMUS_MONITOR_OUTPUT=$output \
    PRIMUS_LAUNCH_PHASES=${PRIMUS_PHASE_MARKS:-} exec setsid "${PRIMUS_PYTHON:-python3}" -m primus_runner.monitor \
    "$1" "$2" "$((10#$timeout))" "$action" "$$" "$PRIMUS_RUN_MODE" "$grace" 1>&"$out" 2>&"$err")
  PRIMUS_HANG_PID=$!
  PRIMUS_HANG_STARTED=${EPOCHREALTIME//[.,]/}
  PRIMUS_HANG_ARGS=("$1" "$2")
  # Set once: the restart runs inside this trap, and bash warns ("bad value in
  # trap_list") when a trap is replaced while it runs. The trap may run inside
  # `wait ... 2>/dev/null` (primus_wait_pid): its words go to the launcher's own stderr.
  [[ -z $PRIMUS_HANG_ERR_FD ]] || return 0
  exec {PRIMUS_HANG_ERR_FD}>&2
  trap 'primus_watchdog_check 2>&"$PRIMUS_HANG_ERR_FD"' CHLD
}

# primus_watchdog_check: the SIGCHLD trap (a child of the launcher ended). A run
# monitor that died is named and restarted, every time: while it is gone there
# are no verdicts, a kill -9 of the launcher would leave a rank that ignores
# SIGTERM running, and every line of the run waits in its pipe (it writes the
# console, the log and every rank's file, python/primus_runner/monitor/output.py).
# One that keeps exiting at its start (PRIMUS_HANG_QUICK_DEATHS times in a row
# within a second of it) cannot do that: the run is stopped, with the reason.
# shellcheck disable=SC2329  # the CHLD trap
primus_watchdog_check() {
  # Tells runner/lib/secrets.sh (__primus_secret_listing) not to fork while
  # this trap runs; a local: seen by what it calls, not inherited by a child.
  # shellcheck disable=SC2034
  local PRIMUS_IN_CHLD_TRAP=1
  local __primus_old=$PRIMUS_HANG_PID __primus_how __primus_lived
  [[ -n $__primus_old && -n $PRIMUS_HANG_FD ]] || return 0
  primus_child_ended __primus_how "$__primus_old" || return 0
  exec {PRIMUS_HANG_FD}>&-
  PRIMUS_HANG_FD="" PRIMUS_HANG_PID=""
  # Exited on its own within a second of its start: it cannot start. A kill
  # (kill -9, the OOM killer) is restarted whenever it comes.
  __primus_lived=$((${EPOCHREALTIME//[.,]/} - PRIMUS_HANG_STARTED))
  if [[ $__primus_how == "ended with status"* ]] && ((__primus_lived < 1000000)); then
    PRIMUS_HANG_QUICK=$((PRIMUS_HANG_QUICK + 1))
  else
    PRIMUS_HANG_QUICK=0
  fi
  if ((PRIMUS_HANG_QUICK >= PRIMUS_HANG_QUICK_DEATHS)); then
    primus_watchdog_give_up "$__primus_old" "$__primus_how"
    return 0
  fi
  PRIMUS_HANG_RESTARTS=$((PRIMUS_HANG_RESTARTS + 1))
  primus_watchdog_start "${PRIMUS_HANG_ARGS[@]}"
  LOG_WARN "run monitor: the run monitor (pid $__primus_old) died ($__primus_how): no verdict and no" \
    "parent-death guard while it was gone, and the run's lines waited in their pipes; restarted it" \
    "(pid $PRIMUS_HANG_PID), which took the run's output over (restart $PRIMUS_HANG_RESTARTS of this run)." \
    "The run and its output go on."
}

# primus_watchdog_give_up PID HOW: the monitor keeps dying at its start; nobody
# writes the run's output nor watches it: say so on the console, stop the run.
primus_watchdog_give_up() {
  exec 1>&3 2>&4
  LOG_ERROR "run monitor: the run monitor (pid $1) died ($2), the $PRIMUS_HANG_QUICK_DEATHS""th time in a row" \
    "within a second of its start: nothing writes the run's output (console, log, rank files) nor" \
    "watches it, so the run is stopped. Fix: its own error, when it could print one, is on the console" \
    "above; '${PRIMUS_PYTHON:-python3} -m primus_runner.monitor --help' says what it needs."
  # shellcheck disable=SC2034  # read by primus_run_workload (runner/lib/supervise.sh)
  PRIMUS_HANG_GAVE_UP=1
  # Once the workload runs, the stop must not run inside this CHLD trap: every
  # child the stop forks (its helper, a command substitution) ends while bash
  # still marks the CHLD trap as running, and bash then prints "run_pending_traps:
  # bad value in trap_list[17]" on the console. So the run's top process gets
  # SIGTERM, which ends the launcher's wait, and primus_run_workload runs the
  # stop (primus_stop_run) after it, outside any trap. Before the workload there
  # is no wait to end: the stop runs as SIGTERM's (bash ends with status 0 when
  # `exit` runs in a CHLD trap; a stop queued while the workload starts runs
  # right after the start, outside the trap: primus_run_pending).
  if [[ -n ${PRIMUS_RUN_PID:-} ]]; then
    kill -TERM "$PRIMUS_RUN_PID" 2>/dev/null || true
  else
    kill -TERM "$$"
  fi
}

# primus_watchdog_tell LINE: one line on the run monitor's stdin (`phase NAME T`,
# python/primus_runner/monitor/cli.py); no fork, and no SIGPIPE when it is gone
# (it would end this launcher with 141).
primus_watchdog_tell() {
  [[ -n $PRIMUS_HANG_FD ]] || return 0
  trap '' PIPE
  { printf '%s\n' "$1" >&"$PRIMUS_HANG_FD"; } 2>/dev/null || true
  trap - PIPE
}

primus_watchdog_stop() {
  trap - CHLD
  # The copy of stderr (the write end of a pipe the monitor copies) must go
  # too: the monitor's copy of that pipe ends when every writer has closed it.
  if [[ -n $PRIMUS_HANG_ERR_FD ]]; then
    exec {PRIMUS_HANG_ERR_FD}>&-
    PRIMUS_HANG_ERR_FD=""
  fi
  [[ -n $PRIMUS_HANG_FD ]] || return 0
  # In a subshell: a monitor already gone must not end the launcher with
  # SIGPIPE, and the launcher's own PIPE disposition stays as it is.
  (printf 'done\n' >&"$PRIMUS_HANG_FD") 2>/dev/null || true
  exec {PRIMUS_HANG_FD}>&-
  PRIMUS_HANG_FD=""
}
