# shellcheck shell=bash
# runner/lib/watchdog.sh: the launcher's side of the run monitor.
# Sourced by runner/lib/supervise.sh; defines only primus_* names, never changes
# shell options. It starts the run monitor (python -m primus_runner.monitor,
# python/primus_runner/monitor/: it decides hang, stopped, mismatch, busy and
# straggler verdicts and asks python/primus_runner/diagnose for the stacks) and
# gives the workload what it needs to be watched; it reads no stacks itself.
#
#   primus_watchdog_env LOG_FILE MODE
#       before the workload starts: export PRIMUS_RUN_LOG (the log, so
#       `primus-cli stacks` finds the run) and PRIMUS_HEARTBEAT_DIR (<log>.ranks);
#       run mode single: also PRIMUS_HEARTBEAT_FILE (torchrun: run_worker.sh sets
#       it per rank)
#   primus_watchdog_start LOG_FILE RUN_ID
#       PRIMUS_HANG_TIMEOUT (the last resort in seconds, default 1800; 0 = no
#       monitor) and PRIMUS_HANG_ACTION (report|stop, default report)
#   primus_watchdog_stop        the launch ends: the monitor exits
#   primus_watchdog_exit_code VAR CODE
#       VAR = PRIMUS_EXIT_HANG_STOPPED (86) when the monitor stopped the run (PRIMUS_HANG_ACTION=stop), else CODE

PRIMUS_HANG_FD=""
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
  local timeout=${PRIMUS_HANG_TIMEOUT:-} action=${PRIMUS_HANG_ACTION:-}
  [[ $timeout =~ ^[0-9]{1,7}$ ]] || timeout=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_HANG_TIMEOUT]}
  ((10#$timeout > 0)) || return 0
  [[ $action == report || $action == stop ]] || action=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_HANG_ACTION]}
  # The launch's helpers it watches too (python/primus_runner/monitor/helpers.py).
  local helpers="" pids
  read -r -a pids <<<"${PRIMUS_LOG_TEE_PID:-}"
  ((${#pids[@]} != 2)) || helpers="stdout-writer=${pids[0]};stderr-writer=${pids[1]};"
  [[ -z ${PRIMUS_WATCH_PID:-} ]] || helpers+="watcher=$PRIMUS_WATCH_PID"
  # stdin: a pipe only the launcher writes (end of file: the launch ended).
  exec {PRIMUS_HANG_FD}> >(PYTHONPATH=$PRIMUS_SUPERVISE_DIR/../python PRIMUS_MONITOR_HELPERS=$helpers \
    exec setsid "${PRIMUS_PYTHON:-python3}" \
    -m primus_runner.monitor "$1" "$2" "$((10#$timeout))" "$action" "$$" "$PRIMUS_RUN_MODE")
}

primus_watchdog_stop() {
  [[ -n $PRIMUS_HANG_FD ]] || return 0
  exec {PRIMUS_HANG_FD}>&- 2>/dev/null || true
  PRIMUS_HANG_FD=""
}

primus_watchdog_exit_code() {
  local -n __primus_code=$1
  __primus_code=$2
  [[ -z ${PRIMUS_RC_DIR:-} || ! -f $PRIMUS_RC_DIR/hang-stop ]] || __primus_code=$PRIMUS_EXIT_HANG_STOPPED
}
