# shellcheck shell=bash
# runner/lib/signal_origin.sh: the receipts a launcher and its slurm-entry leave
# of the signals they receive, and how a signal came, as Python decides it
# (python/primus_runner/monitor/origin.py: forwarded by the entry, delivered by
# Slurm to every process of the step, or sent to this process alone). The entry
# and the launcher each note when they received a signal in PRIMUS_SIGNAL_DIR;
# two receipts within PRIMUS_SIGNAL_WINDOW_MS of each other were one step-wide
# delivery, which already reached every rank. Sourced by runner/lib/supervise.sh;
# defines only primus_* names and never changes shell options.

if [[ -n ${__PRIMUS_SIGNAL_ORIGIN_SH:-} ]]; then
  return 0
fi
__PRIMUS_SIGNAL_ORIGIN_SH=1

# primus_signal_note ROLE SIG: record that ROLE received SIG now (prints the
# time in microseconds, EPOCHREALTIME in either decimal mark).
primus_signal_note() {
  local now=${EPOCHREALTIME//[.,]/}
  [[ -z ${PRIMUS_SIGNAL_DIR:-} || ! -d $PRIMUS_SIGNAL_DIR ]] ||
    printf '%s\n' "$now" >"$PRIMUS_SIGNAL_DIR/$1.$2" 2>/dev/null || true
  echo "$now"
}

# primus_signal_came VAR TIME_US: VAR = the arguments that tell
# `python -m primus_runner supervise` when and where a signal was noted.
primus_signal_came() {
  local -n __primus_came=$1
  local ms=${PRIMUS_SIGNAL_WINDOW_MS:-}
  [[ $ms =~ ^[0-9]{1,6}$ ]] || ms=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_SIGNAL_WINDOW_MS]}
  __primus_came=(--at "$2" --signal-dir "${PRIMUS_SIGNAL_DIR:-}" --window-ms "$((10#$ms))")
}

# primus_supervise_helper ARGS...: `python -m primus_runner supervise ARGS`,
# started from a trap: it ignores the signals a step or a process group may
# deliver while it decides (they are the launcher's to handle).
primus_supervise_helper() {
  (
    trap '' TERM INT HUP USR1 USR2
    primus_python supervise "$@"
  )
}

# primus_signal_origin ORIGIN_VAR SENDER_VAR ROLE SIG TIME_US: how SIG, which
# ROLE (launcher|entry) received at TIME_US, came: forwarded, step or direct,
# and the sender text of a line ("direct" and its text when Python cannot answer).
primus_signal_origin() {
  local -n __primus_origin=$1 __primus_sender=$2
  local -a came
  local line
  primus_signal_came came "$5"
  line=$(primus_supervise_helper origin "$4" --role "$3" "${came[@]}") || line=""
  __primus_origin=${line%%$'\t'*} __primus_sender=${line#*$'\t'}
  if [[ -z $line || $line != *$'\t'* ]]; then
    __primus_origin=direct __primus_sender="sender: unknown"
  fi
}
