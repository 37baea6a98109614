# shellcheck shell=bash
# runner/lib/signal_origin.sh: how a signal reached a launcher under
# slurm-entry: forwarded by the entry, delivered by Slurm to every process of
# the step (scancel --signal, --signal=SIG@T, the SIGTERM of a cancel or a time
# limit), or sent to the launcher alone. The entry and the launcher each note
# when they received a signal in PRIMUS_SIGNAL_DIR; two receipts within
# PRIMUS_SIGNAL_WINDOW_MS of each other were one step-wide delivery, which
# already reached every rank. Sourced by runner/lib/supervise.sh; defines only
# primus_* names and never changes shell options.

if [[ -n ${__PRIMUS_SIGNAL_ORIGIN_SH:-} ]]; then
  return 0
fi
__PRIMUS_SIGNAL_ORIGIN_SH=1

# PRIMUS_SIGNAL_WINDOW_MS: how close in time (ms) the entry's and the
# launcher's receipt of one signal must be to count as one step-wide delivery.
primus_signal_window_us() {
  local ms=${PRIMUS_SIGNAL_WINDOW_MS:-}
  [[ $ms =~ ^[0-9]{1,6}$ ]] || ms=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_SIGNAL_WINDOW_MS]}
  echo $((10#$ms * 1000))
}

# primus_now_us: EPOCHREALTIME in microseconds (either decimal mark).
primus_now_us() {
  local t=$EPOCHREALTIME
  echo "${t//[.,]/}"
}

# primus_signal_note ROLE SIG: record that ROLE received SIG now (prints the time).
primus_signal_note() {
  local now
  now=$(primus_now_us)
  [[ -z ${PRIMUS_SIGNAL_DIR:-} || ! -d $PRIMUS_SIGNAL_DIR ]] ||
    printf '%s\n' "$now" >"$PRIMUS_SIGNAL_DIR/$1.$2" 2>/dev/null || true
  echo "$now"
}

# primus_signal_peer_saw PEER SIG TIME_US: true when PEER noted SIG within the
# window around TIME_US (waits up to the window for the note to appear).
primus_signal_peer_saw() {
  local file=${PRIMUS_SIGNAL_DIR:-}/$1.$2 at=$3 window seen now
  [[ -n ${PRIMUS_SIGNAL_DIR:-} ]] || return 1
  window=$(primus_signal_window_us)
  while :; do
    if { read -r seen <"$file"; } 2>/dev/null && [[ $seen =~ ^[0-9]+$ ]]; then
      local diff=$((seen - at))
      ((diff < 0)) && diff=$((-diff))
      ((diff <= window)) && return 0
    fi
    now=$(primus_now_us)
    ((now - at <= window)) || return 1
    sleep 0.05
  done
}

# primus_signal_origin VAR SIG TIME_US: how SIG reached this launcher:
# forwarded (by slurm-entry), step (Slurm's step-wide delivery) or direct.
primus_signal_origin() {
  local -n __primus_origin=$1
  local marker=${PRIMUS_SIGNAL_DIR:-}/forwarded.$2
  __primus_origin=direct
  [[ -n ${PRIMUS_SIGNAL_DIR:-} ]] || return 0
  if [[ -e $marker ]]; then
    rm -f -- "$marker"
    __primus_origin=forwarded
  elif primus_signal_peer_saw entry "$2" "$3"; then
    __primus_origin=step
  fi
}

# primus_sender_text ORIGIN: the "sender" part of a log line. Bash has no
# SA_SIGINFO, so a signal sent straight to the launcher has no known sender.
primus_sender_text() {
  case $1 in
    forwarded) echo "sender: slurm-entry (forwarded)" ;;
    step) echo "sender: Slurm (delivered to every process of the step)" ;;
    *) echo "sender: unknown (a shell cannot read a signal's sender)" ;;
  esac
}
