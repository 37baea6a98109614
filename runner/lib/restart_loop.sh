# shellcheck shell=bash
# runner/lib/restart_loop.sh: hand a launch to the closed loop (docs/restart-on-failure.md).
# Sourced by runner/primus-cli-direct.sh; defines only primus_* names and never changes
# shell options.
#
#   primus_restart_loop_enter DRY_RUN SCRIPT ARGS...
#       first thing after the options: with PRIMUS_ON_FAILURE restart or stop, unless
#       this launch already runs under the loop (PRIMUS_RESTART_COUNT, set by it) or
#       is a dry run, the launcher becomes
#       `python -m primus_runner restart-loop -- bash SCRIPT ARGS...`
#       (python/primus_runner/launch/restart_loop.py), which runs this launch again
#       per attempt and decides every restart (launch/restart.py). Otherwise (report,
#       the default, or a value the helper's env check then names) it returns and
#       the launch goes on as always. The config key direct.on_failure is read by
#       the loop's launch (below: primus_restart_loop_config).
#       The arguments are kept for primus_restart_loop_config.
#   primus_restart_loop_config DRY_RUN
#       once the configuration is read: PRIMUS_ON_FAILURE unset and direct.on_failure
#       restart or stop: the helper and the early log copy stopped, PRIMUS_ON_FAILURE
#       exported, then as primus_restart_loop_enter with the kept arguments.

# primus_restart_loop_enter DRY_RUN SCRIPT ARGS...: see the header.
PRIMUS_RESTART_LOOP_ARGV=()

primus_restart_loop_enter() {
  local dry=$1 script=$2 policy=${PRIMUS_ON_FAILURE:-}
  shift 2
  PRIMUS_RESTART_LOOP_ARGV=("$script" "$@")
  [[ $policy == restart || $policy == stop ]] || return 0
  [[ -z ${PRIMUS_RESTART_COUNT:-} && $dry != 1 ]] || return 0
  primus_pick_python
  PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" exec "$PRIMUS_PYTHON" -m primus_runner \
    restart-loop --policy "$policy" -- "$BASH" "$script" "$@"
}

# primus_restart_loop_config DRY_RUN: see the header.
primus_restart_loop_config() {
  local dry=$1 policy=""
  [[ -z ${PRIMUS_ON_FAILURE:-} ]] || return 0
  primus_config_get_into policy direct.on_failure ""
  [[ $policy == restart || $policy == stop ]] || return 0
  [[ -z ${PRIMUS_RESTART_COUNT:-} && $dry != 1 ]] || return 0
  local helper=${PRIMUS_HELPER_PID:-}
  primus_helper_stop
  [[ -z $helper ]] || wait "$helper" 2>/dev/null || true
  # The helper's console descriptor is a copy of the spooled stderr: closed
  # first, or the copy never sees its end.
  if [[ -n ${PRIMUS_CONSOLE_FD:-} ]]; then
    exec {PRIMUS_CONSOLE_FD}>&-
    PRIMUS_CONSOLE_FD=""
  fi
  primus_log_spool_drop
  trap - EXIT INT TERM HUP
  export PRIMUS_ON_FAILURE=$policy
  primus_restart_loop_enter "$dry" "${PRIMUS_RESTART_LOOP_ARGV[@]}"
}
