# shellcheck shell=bash
# runner/lib/supervise.sh: start the workload, forward signals to it, stop it.
# Sourced by the launch modes; defines only primus_* names, never changes shell
# options. docs/stopping-and-requeue.md "Stopping, preemption and requeue" is the user's view.
#
#   primus_run_prepare MODE LOG_FILE NPROC
#       MODE single|torchrun; NPROC the processes per node (single: 1). The
#       run's id and exit-code directory, and the run monitor
#       (runner/lib/watchdog.sh: the writer of the run's output, and the
#       parent-death guard that SIGKILLs what is left after the grace).
#   primus_run_workload CMD...
#       after primus_run_prepare: runs CMD through python/primus_runner/launch/spawn.py
#       (a session of its own, SIGTERM when the launcher dies; torchrun runs
#       in-process there with SIGUSR1/SIGUSR2 caught), waits, and exits with
#       the code `supervise end` returns: the workload's (torchrun: the failing
#       worker's own code, recorded by run_worker.sh in PRIMUS_RC_DIR, after
#       the failure report), or 128+N when stopped by signal N.
#   USR1/USR2 -> primus_forward_notice: sent once to every rank process of this
#       node (torchrun does not forward them), the launcher keeps waiting.
#   TERM/INT/HUP -> primus_stop_run: delivered once to every rank (torchrun
#       mode: to torchrun, which sends it to each worker's process group;
#       single: to the workload's process group), then PRIMUS_KILL_GRACE
#       seconds, then SIGKILL to whatever of the run is left; one closing line.
#   The shell traps the signals and notes how each came (signal_origin.sh);
#       which processes are the ranks, the delivery, the grace, the SIGKILL,
#       the closing line and the exit code are decided by
#       `python -m primus_runner supervise` (python/primus_runner/monitor/supervise.py),
#       and so is the end of a run (`supervise end`: what a failed run left
#       running, torchrun's log lines, the failure report, the last line).
#   Under slurm-entry (PRIMUS_SIGNAL_DIR set by it): a signal that reached the
#       entry and this launcher within PRIMUS_SIGNAL_WINDOW_MS of each other was
#       Slurm's step-wide delivery (scancel --signal, --signal=SIG@T, the
#       SIGTERM of a cancel or time limit: Slurm signals every process of the
#       step), so it already reached every rank and is not sent again.
#   PRIMUS_SUPERVISE_CLEANUP names a function run before every exit.
#   primus_default_sigint SCRIPT ARGS...: runner/lib/launch_start.sh (sourced
#       here), which a launcher may read alone before this file.

if [[ -n ${__PRIMUS_SUPERVISE_SH:-} ]]; then
  return 0
fi
__PRIMUS_SUPERVISE_SH=1

PRIMUS_RUN_PID=""
PRIMUS_RUN_MODE=""
PRIMUS_RUN_NPROC=1
PRIMUS_RUN_ID=""
PRIMUS_RUN_LOG=""
PRIMUS_TRAPPED=0
PRIMUS_RUN_STARTING=0    # the workload is being forked: PRIMUS_RUN_PID is not known yet
PRIMUS_RUN_PENDING=()    # stop:N / notice:SIG trapped meanwhile
PRIMUS_RUN_ARGS=()       # the run, for `python -m primus_runner supervise` (monitor/supervise.py)
PRIMUS_SUPERVISE_CLEANUP=${PRIMUS_SUPERVISE_CLEANUP:-}
primus_dir_of PRIMUS_SUPERVISE_DIR "${BASH_SOURCE[0]}"
primus_abs_path PRIMUS_SUPERVISE_DIR "$PRIMUS_SUPERVISE_DIR/.."
# shellcheck source=runner/lib/launch_start.sh
source "$PRIMUS_SUPERVISE_DIR/lib/launch_start.sh"
# shellcheck source=runner/lib/processes.sh
source "$PRIMUS_SUPERVISE_DIR/lib/processes.sh"
# shellcheck source=runner/lib/signal_origin.sh
source "$PRIMUS_SUPERVISE_DIR/lib/signal_origin.sh"
# shellcheck source=runner/lib/watchdog.sh
source "$PRIMUS_SUPERVISE_DIR/lib/watchdog.sh"

# primus_kill_grace VAR: the stop grace in seconds (PRIMUS_KILL_GRACE, checked
# by the launch helper; its default from the registry through facts.sh;
# slurm-entry sets it from KillWait).
primus_kill_grace() {
  local __primus_grace=${PRIMUS_KILL_GRACE:-}
  [[ $__primus_grace =~ ^[0-9]{1,5}$ ]] || __primus_grace=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_KILL_GRACE]}
  printf -v "$1" '%s' "$((10#$__primus_grace))"
}

# primus_run_pending: the signals trapped while the workload was being forked
# (a loaded host can run the workload before the launcher's next command).
primus_run_pending() {
  local item
  while ((${#PRIMUS_RUN_PENDING[@]} > 0)); do
    item=${PRIMUS_RUN_PENDING[0]}
    PRIMUS_RUN_PENDING=("${PRIMUS_RUN_PENDING[@]:1}")
    case $item in
      stop:*) primus_stop_run "${item#stop:}" ;;
      notice:*) primus_forward_notice "${item#notice:}" ;;
    esac
  done
}

# primus_forward_notice SIGNAL_NAME: the USR1/USR2 trap.
primus_forward_notice() {
  PRIMUS_TRAPPED=1
  if ((PRIMUS_RUN_STARTING)); then
    PRIMUS_RUN_PENDING+=("notice:$1")
    return 0
  fi
  local sig=$1 at
  local -a came
  at=$(primus_signal_note launcher "$sig")
  printf '%s\n' "$sig" >>"${PRIMUS_RC_DIR:-/nonexistent}/notices" 2>/dev/null || true
  if [[ -z $PRIMUS_RUN_PID ]]; then
    LOG_WARN "SIG$sig received before the workload started: noted, nothing to forward."
    return 0
  fi
  primus_signal_came came "$at"
  primus_supervise_helper notice "$sig" --nproc "$PRIMUS_RUN_NPROC" "${came[@]}" "${PRIMUS_RUN_ARGS[@]}" || true
}

# ---------------------------------------------------------------- stopping

# primus_stop_run SIGNAL_NUMBER: the TERM/INT/HUP trap: the stop itself is
# decided and done by `supervise stop` (python/primus_runner/monitor/supervise.py:
# the signal once, PRIMUS_KILL_GRACE seconds, SIGKILL to what is left); the
# launcher reaps the run, keeps torchrun's log lines, prints the closing line
# it returned and exits with the code it returned (128+N; 86 after a verdict's stop).
primus_stop_run() {
  if ((PRIMUS_RUN_STARTING)); then
    PRIMUS_RUN_PENDING+=("stop:$1")
    return 0
  fi
  local num=$1 name at grace result code=$((128 + $1)) text=""
  local -a came
  # The console/log pipes may be gone already: a write must not turn the exit
  # status into 141 (SIGPIPE), and a failed write must not end the stop.
  trap '' TERM INT HUP PIPE
  trap - CHLD
  set +e
  primus_signal_name name "$num"
  at=$(primus_signal_note launcher "$name")
  primus_kill_grace grace
  if [[ -n $PRIMUS_RUN_PID ]]; then
    primus_signal_came came "$at"
    result=$(primus_python supervise stop "$num" --rank "${RANK:-0}" --log "$PRIMUS_RUN_LOG" \
      --grace "$grace" "${came[@]}" "${PRIMUS_RUN_ARGS[@]}")
    if [[ ${result%%$'\n'*} =~ ^[0-9]+$ ]]; then
      code=${result%%$'\n'*} text=${result#*$'\n'}
    else
      # No answer (a broken interpreter): the signal still reaches the run's
      # process group once; the run monitor's own stop is what is left.
      LOG_ERROR "the stop helper ('supervise stop') gave no answer: SIG$name sent to the run's process group" \
        "(pid $PRIMUS_RUN_PID) without a grace or SIGKILL; exit status $code."
      kill "-$name" -- "-$PRIMUS_RUN_PID" 2>/dev/null
    fi
    wait "$PRIMUS_RUN_PID" 2>/dev/null
    [[ -z $text ]] || LOG_WARN "$text"
  fi
  primus_cleanup_run
  exit "$code"
}

# ----------------------------------------------------------------- running

# primus_cleanup_run: tell the run monitor the launcher ends on purpose, remove
# the exit-code directory, run PRIMUS_SUPERVISE_CLEANUP.
primus_cleanup_run() {
  primus_watchdog_stop
  [[ -z ${PRIMUS_RC_DIR:-} ]] || rm -rf -- "$PRIMUS_RC_DIR"
  [[ -z $PRIMUS_SUPERVISE_CLEANUP ]] || "$PRIMUS_SUPERVISE_CLEANUP"
}

# primus_requeue_code: PRIMUS_REQUEUE_EXIT_CODE (registry default, facts.sh),
# the one reading of it (supervise, the Slurm entry's requeue, the failure report).
primus_requeue_code() {
  local code=${PRIMUS_REQUEUE_EXIT_CODE:-}
  [[ $code =~ ^[0-9]{1,3}$ ]] && ((10#$code <= 255)) || code=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_REQUEUE_EXIT_CODE]}
  echo "$((10#$code))"
}

# primus_spawn_command VAR CMD...: VAR = CMD started through spawn.py; a
# torchrun that is a Python script (a console script with a python shebang, or
# `<python> SCRIPT.py ...`) runs in-process (SIGUSR1/SIGUSR2 caught).
primus_spawn_command() {
  local -n __primus_cmd=$1
  shift
  local spawn=$PRIMUS_ROOT/python/primus_runner/launch/spawn.py first="" program
  program=$(command -v -- "$1" 2>/dev/null) || program=$1
  if [[ $PRIMUS_RUN_MODE == torchrun && -f $program ]]; then
    { primus_read first <"$program"; } 2>/dev/null || first=""
  fi
  if [[ $first =~ ^#![[:space:]]*(/[^[:space:]]*python[^[:space:]]*)[[:space:]]*$ && -x ${BASH_REMATCH[1]} ]]; then
    __primus_cmd=("${BASH_REMATCH[1]}" "$spawn" --parent "$$" --in-process -- "$program" "${@:2}")
  elif [[ $PRIMUS_RUN_MODE == torchrun && ${program##*/} == python* && -x $program \
    && ${2:-} == *.py && -f ${2:-} ]]; then
    # <python> torchrun_quiet.py ...: the same, in the workload's interpreter.
    __primus_cmd=("$program" "$spawn" --parent "$$" --in-process -- "$2" "${@:3}")
  else
    __primus_cmd=("$PRIMUS_PYTHON" -I -S "$spawn" --parent "$$" -- "$@")
  fi
}

# primus_wait_run: wait for the workload; a trapped USR1/USR2 interrupts
# `wait`, so keep waiting while it runs. Sets PRIMUS_RUN_RC.
primus_wait_run() {
  primus_wait_pid "$PRIMUS_RUN_PID"
}

# primus_wait_pid PID: wait for the child PID; a notice trap that sets
# PRIMUS_TRAPPED=1 interrupts `wait` (status > 128), so keep waiting while it
# runs. Sets PRIMUS_RUN_RC to the child's own status.
primus_wait_pid() {
  local pid=$1 rc prev=0
  while :; do
    PRIMUS_TRAPPED=0
    rc=0
    # 2>/dev/null: bash's own "line N: PID Killed ..." for a child ended by a
    # signal; the closing line or the failure report says it in words.
    wait "$pid" 2>/dev/null || rc=$?
    if ((rc == 127 && prev != 0)); then
      rc=$prev  # already collected before the trap ran
      break
    fi
    ((PRIMUS_TRAPPED && rc > 128)) || break
    prev=$rc
  done
  PRIMUS_RUN_RC=$rc
}

# primus_run_prepare MODE LOG_FILE NPROC: see the header.
primus_run_prepare() {
  PRIMUS_RUN_MODE=$1 PRIMUS_RUN_LOG=$2 PRIMUS_RUN_NPROC=$3
  [[ $PRIMUS_RUN_MODE != single ]] || PRIMUS_RUN_NPROC=1
  PRIMUS_RC_DIR=$(mktemp -d "${TMPDIR:-/tmp}/primus-rc.XXXXXX")
  export PRIMUS_RC_DIR
  PRIMUS_RUN_ID=$$-${EPOCHREALTIME//[.,]/}-$RANDOM
  primus_watchdog_env "$PRIMUS_RUN_LOG" "$PRIMUS_RUN_MODE"
  # The monitor first: it writes the run's output, and it is the guard of a
  # launcher killed from here on.
  primus_watchdog_start "$PRIMUS_RUN_LOG" "$PRIMUS_RUN_ID"
}

# primus_run_workload CMD...: see the header.
primus_run_workload() {
  local __primus_log_file=$PRIMUS_RUN_LOG
  local -a __primus_run_cmd
  primus_spawn_command __primus_run_cmd "$@"
  trap 'primus_stop_run 15' TERM
  trap 'primus_stop_run 2' INT
  trap 'primus_stop_run 1' HUP
  trap 'primus_forward_notice USR1' USR1
  trap 'primus_forward_notice USR2' USR2
  # A trap runs between two commands: one that comes after the fork but before
  # PRIMUS_RUN_PID is set is kept and handled right after (primus_run_pending).
  PRIMUS_RUN_STARTING=1
  # PRIMUS_PTRACER_PID: each rank lets this shell's descendants (the run monitor
  # and its py-spy) read its stacks under Yama (runner/helpers/pystartup/sitecustomize.py).
  # The workload gets neither the monitor's pipe nor the read ends of the
  # launcher's output pipes (runner/lib/launch_log.sh).
  if [[ -n ${PRIMUS_OUT_R:-} ]]; then
    PRIMUS_RUN_ID=$PRIMUS_RUN_ID PRIMUS_PTRACER_PID=$$ "${__primus_run_cmd[@]}" </dev/null {PRIMUS_HANG_FD}>&- \
      {PRIMUS_OUT_R}<&- {PRIMUS_ERR_R}<&- &
  else
    PRIMUS_RUN_ID=$PRIMUS_RUN_ID PRIMUS_PTRACER_PID=$$ "${__primus_run_cmd[@]}" </dev/null {PRIMUS_HANG_FD}>&- &
  fi
  PRIMUS_RUN_PID=$!
  primus_watchdog_tell "phase spawn $EPOCHREALTIME"  # the waterfall's spawn end (monitor/phases.py)
  PRIMUS_RUN_ARGS=(--mode "$PRIMUS_RUN_MODE" --run-pid "$PRIMUS_RUN_PID" --run-id "$PRIMUS_RUN_ID"
    --rc-dir "${PRIMUS_RC_DIR:-}")
  PRIMUS_RUN_STARTING=0
  primus_run_pending
  primus_wait_run
  # The run monitor could not start (runner/lib/watchdog.sh, primus_watchdog_give_up):
  # the stop, on the console (the monitor that wrote it is gone).
  if ((PRIMUS_HANG_GAVE_UP)); then
    exec 1>&3 2>&4
    primus_stop_run 15
  fi
  local rc=$PRIMUS_RUN_RC grace code
  # The run is over: a stop has nothing left to stop, and the helper below
  # (which shares the launcher's process group) must not be cut by Ctrl-C.
  trap '' TERM INT HUP
  primus_kill_grace grace
  local -a spool=()
  [[ -z $PRIMUS_LOG_SPOOL_LOST ]] || spool=(--spool-lost)
  code=$(primus_python supervise end "$rc" --log "$__primus_log_file" --requeue-code "$(primus_requeue_code)" \
    --grace "$grace" "${spool[@]}" "${PRIMUS_RUN_ARGS[@]}") || code=""
  if [[ ! $code =~ ^[0-9]+$ ]]; then
    LOG_ERROR "the end helper ('supervise end') gave no answer: no failure report; the workload's exit" \
      "code $rc stands; log: $__primus_log_file"
    code=$rc
  fi
  PRIMUS_RUN_PID=""
  primus_cleanup_run
  exit "$code"
}

# primus_early_notice_traps: before the workload starts, USR1/USR2 must not
# end the launcher (their default action); they are noted only, and so are
# those primus_notice_queue (runner/lib/launch_start.sh) queued meanwhile.
primus_early_notice_traps() {
  trap 'primus_forward_notice USR1' USR1
  trap 'primus_forward_notice USR2' USR2
  local sig
  while ((${#PRIMUS_NOTICE_QUEUE[@]} > 0)); do
    sig=${PRIMUS_NOTICE_QUEUE[0]}
    PRIMUS_NOTICE_QUEUE=("${PRIMUS_NOTICE_QUEUE[@]:1}")
    primus_forward_notice "$sig"
  done
}
