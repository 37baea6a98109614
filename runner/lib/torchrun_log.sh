# shellcheck shell=bash
# runner/lib/torchrun_log.sh: torchrun's own log lines (its elastic agent's
# "Sending process N closing signal SIGTERM", "failed (exitcode: 1)", "Received
# 15 death signal") belong in the launch log, not on the console:
# runner/helpers/torchrun_quiet.py writes them, secrets masked, to
# $PRIMUS_RC_DIR/torchrun.log, and primus_keep_torchrun_log appends that file
# to the log file once the run has ended (before the run's last line).
# Sourced by runner/lib/supervise.sh; defines only primus_* names, never
# changes shell options, and writes only to the log file it is given.

if [[ -n ${__PRIMUS_TORCHRUN_LOG_SH:-} ]]; then
  return 0
fi
__PRIMUS_TORCHRUN_LOG_SH=1

# primus_keep_torchrun_log LOG_FILE: append torchrun's log lines (if any) to
# LOG_FILE, once; nothing when either is missing.
primus_keep_torchrun_log() {
  local log=$1 lines=${PRIMUS_RC_DIR:-/nonexistent}/torchrun.log
  [[ -n $log && -s $lines ]] || return 0
  {
    printf '%s\n' "----- torchrun's own log lines (not shown on the console) -----"
    cat -- "$lines"
    printf '%s\n' "----- end of torchrun's log lines -----"
  } >>"$log" 2>/dev/null || true
  : >"$lines" 2>/dev/null || true
}
