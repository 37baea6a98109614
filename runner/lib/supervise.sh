# shellcheck shell=bash
# runner/lib/supervise.sh: start the workload, forward signals to it, stop it.
# Sourced by the launch modes; defines only primus_* names, never changes shell
# options. README "Stopping, preemption and requeue" is the user's view.
#
#   primus_run_prepare MODE LOG_FILE NPROC
#       MODE single|torchrun; NPROC the processes per node (single: 1). The
#       run's id and exit-code directory, and the run monitor
#       (runner/lib/watchdog.sh: the writer of the run's output, and the
#       parent-death guard that SIGKILLs what is left after the grace).
#   primus_run_workload CMD...
#       after primus_run_prepare: runs CMD through python/primus_runner/launch/spawn.py
#       (a session of its own, SIGTERM when the launcher dies; torchrun runs
#       in-process there with SIGUSR1/SIGUSR2 caught), waits, and exits with the workload's
#       code (torchrun: the failing worker's own code, recorded by
#       run_worker.sh in PRIMUS_RC_DIR), or 128+N when stopped by signal N.
#   USR1/USR2 -> primus_forward_notice: sent once to every rank process of this
#       node (torchrun does not forward them), the launcher keeps waiting.
#   TERM/INT/HUP -> primus_stop_run: delivered once to every rank (torchrun
#       mode: to torchrun, which sends it to each worker's process group;
#       single: to the workload's process group), then PRIMUS_KILL_GRACE
#       seconds, then SIGKILL to whatever of the run is left; one closing line.
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
PRIMUS_SUPERVISE_CLEANUP=${PRIMUS_SUPERVISE_CLEANUP:-}
primus_dir_of PRIMUS_SUPERVISE_DIR "${BASH_SOURCE[0]}"
primus_abs_path PRIMUS_SUPERVISE_DIR "$PRIMUS_SUPERVISE_DIR/.."
# shellcheck source=runner/lib/launch_start.sh
source "$PRIMUS_SUPERVISE_DIR/lib/launch_start.sh"
# shellcheck source=runner/lib/processes.sh
source "$PRIMUS_SUPERVISE_DIR/lib/processes.sh"
# shellcheck source=runner/lib/signal_origin.sh
source "$PRIMUS_SUPERVISE_DIR/lib/signal_origin.sh"
# shellcheck source=runner/lib/stop_ranks.sh
source "$PRIMUS_SUPERVISE_DIR/lib/stop_ranks.sh"
# shellcheck source=runner/lib/stop_orphans.sh
source "$PRIMUS_SUPERVISE_DIR/lib/stop_orphans.sh"
# shellcheck source=runner/lib/watchdog.sh
source "$PRIMUS_SUPERVISE_DIR/lib/watchdog.sh"
# shellcheck source=runner/lib/torchrun_log.sh
source "$PRIMUS_SUPERVISE_DIR/lib/torchrun_log.sh"

# primus_kill_grace VAR: the stop grace in seconds (PRIMUS_KILL_GRACE, checked
# by the launch helper; its default from the registry through facts.sh;
# slurm-entry sets it from KillWait).
primus_kill_grace() {
  local __primus_grace=${PRIMUS_KILL_GRACE:-}
  [[ $__primus_grace =~ ^[0-9]{1,5}$ ]] || __primus_grace=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_KILL_GRACE]}
  printf -v "$1" '%s' "$((10#$__primus_grace))"
}

# ------------------------------------------------------------ rank processes

# primus_rank_pids VAR: the processes that are this node's ranks: single mode,
# the workload itself; torchrun mode, the child of each run_worker.sh (which
# registers its pid as $PRIMUS_RC_DIR/worker.<RANK>).
primus_rank_pids() {
  local -n __primus_ranks=$1
  __primus_ranks=()
  if [[ $PRIMUS_RUN_MODE == single ]]; then
    primus_any_alive "$PRIMUS_RUN_PID" && __primus_ranks=("$PRIMUS_RUN_PID")
    return 0
  fi
  local file wrapper pid
  local -A wrappers=()
  for file in "${PRIMUS_RC_DIR:-/nonexistent}"/worker.*; do
    [[ -f $file ]] || continue
    read -r wrapper <"$file" || continue
    [[ $wrapper =~ ^[0-9]+$ ]] && wrappers[$wrapper]=1
  done
  ((${#wrappers[@]})) || return 0
  primus_parent_table
  for pid in "${!__PRIMUS_PPID[@]}"; do
    [[ -n ${wrappers[${__PRIMUS_PPID[$pid]}]:-} ]] && __primus_ranks+=("$pid")
  done
  return 0
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
  local sig=$1 at origin
  at=$(primus_signal_note launcher "$sig")
  printf '%s\n' "$sig" >>"${PRIMUS_RC_DIR:-/nonexistent}/notices" 2>/dev/null || true
  if [[ -z $PRIMUS_RUN_PID ]]; then
    LOG_WARN "SIG$sig received before the workload started: noted, nothing to forward."
    return 0
  fi
  primus_signal_origin origin "$sig" "$at"
  if [[ $origin == step ]]; then
    LOG_INFO "SIG$sig: $(primus_sender_text step); every rank already has it, not sent again."
    return 0
  fi
  local -a ranks=()
  primus_rank_pids ranks
  ((${#ranks[@]} == 0)) || kill "-$sig" "${ranks[@]}" 2>/dev/null || true
  local text
  primus_describe_pids text "${ranks[@]}"
  LOG_INFO "SIG$sig ($(primus_sender_text "$origin")): forwarded once to ${#ranks[@]} of" \
    "$PRIMUS_RUN_NPROC local rank process(es)${text:+: $text}; the launcher keeps waiting."
}

# ---------------------------------------------------------------- stopping

# primus_stop_run SIGNAL_NUMBER: the TERM/INT/HUP trap: deliver the signal
# once to every rank, wait PRIMUS_KILL_GRACE seconds, SIGKILL what is left,
# print the closing line, exit 128+N.
primus_stop_run() {
  if ((PRIMUS_RUN_STARTING)); then
    PRIMUS_RUN_PENDING+=("stop:$1")
    return 0
  fi
  local num=$1 name at origin grace code
  # The console/log tees may be gone already: a write must not turn the exit
  # status into 141 (SIGPIPE), and a failed write must not end the stop.
  trap '' TERM INT HUP PIPE
  trap - CHLD
  set +e
  primus_signal_name name "$num"
  at=$(primus_signal_note launcher "$name")
  primus_kill_grace grace
  if [[ -n $PRIMUS_RUN_PID ]]; then
    primus_signal_origin origin "$name" "$at"
    local -a members=() running=()
    primus_running_ranks running "$PRIMUS_RUN_MODE" "$PRIMUS_RUN_PID"
    mapfile -t members < <(primus_run_members "$PRIMUS_RUN_ID" "$PRIMUS_RUN_PID")
    LOG_WARN "SIG$name received ($(primus_sender_text "$origin")): stopping the run" \
      "(${#members[@]} process(es)), SIGKILL after ${grace} s."
    if [[ $origin != step ]]; then
      if [[ $PRIMUS_RUN_MODE == single ]]; then
        kill "-$name" -- "-$PRIMUS_RUN_PID" 2>/dev/null
      else
        # torchrun sends the signal on to each worker's process group (once).
        kill "-$name" "$PRIMUS_RUN_PID" 2>/dev/null
      fi
    fi
    local total=${#members[@]} killed
    primus_kill_after_grace killed "$grace" "$PRIMUS_RUN_PID"
    wait "$PRIMUS_RUN_PID" 2>/dev/null
    primus_keep_torchrun_log "$PRIMUS_RUN_LOG"
    primus_watchdog_exit_code code $((128 + num))
    primus_closing_line "$name" "$origin" "$total" "$grace" "$killed" "$code" \
      "$(primus_running_ranks_text "${running[@]}")"
  fi
  primus_watchdog_exit_code code $((128 + num))
  primus_cleanup_run
  exit "$code"
}

# primus_closing_line SIG ORIGIN STOPPED GRACE KILLED EXIT RANKS: the one
# closing line of a stop on this node (also left in PRIMUS_SIGNAL_DIR for the
# entry): RANKS says which ranks were still running, and it ends with the log.
primus_closing_line() {
  local text sender
  sender=$(primus_sender_text "$2")
  text="stop: SIG$1, $sender; $7 at the stop; $3 process(es) stopped"
  if [[ -n $5 ]]; then
    text+=", killed after the $4 s grace: $5"
  else
    text+=" within the $4 s grace, none killed"
  fi
  text+="; exit status $6${PRIMUS_RUN_LOG:+; log: $PRIMUS_RUN_LOG}."
  LOG_WARN "$text"
  [[ -z ${PRIMUS_SIGNAL_DIR:-} || ! -d $PRIMUS_SIGNAL_DIR ]] ||
    printf '%s\n' "$text" >"$PRIMUS_SIGNAL_DIR/closing" 2>/dev/null || true
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

# primus_failure_report RC LOG_FILE: on a failed run, the report naming the
# rank that failed first (run mode single: the one process of the node;
# python/primus_runner/launch/report.py, on stderr) and, on stdout, the exit
# code of the launch: that rank's own code (PRIMUS_REQUEUE_EXIT_CODE wins),
# else torchrun's. A report that cannot run leaves RC.
primus_failure_report() {
  local rc=$1 log_file=$2 code
  ((rc != 0)) || { echo 0; return; }
  code=$(PYTHONPATH=$PRIMUS_ROOT/python "$PRIMUS_PYTHON" -m primus_runner.launch.report \
    --rc-dir "$PRIMUS_RC_DIR" --log "$log_file" --code "$rc" --requeue-code "$(primus_requeue_code)" \
    --mode "$PRIMUS_RUN_MODE") || code=""
  [[ $code =~ ^[0-9]+$ ]] || code=$rc
  echo "$code"
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
  PRIMUS_RUN_STARTING=0
  primus_run_pending
  primus_wait_run
  local rc=$PRIMUS_RUN_RC
  PRIMUS_RUN_ORPHANS=0
  ((rc == 0)) || primus_stop_orphans "$rc"
  trap - TERM INT HUP
  primus_keep_torchrun_log "$__primus_log_file"
  # One failure report for both run modes (launch/report.py --mode); a
  # requeue request of the one process in run mode single is no failure.
  # Ranks stopped by primus_stop_orphans did not fail first: the run's own
  # process did, and its code stays the launch's.
  if ((PRIMUS_RUN_ORPHANS)); then
    LOG_ERROR "the run was lost with $(primus_run_process_text), not by a rank: exit code $rc"
  elif ((rc != 0)) && [[ $PRIMUS_RUN_MODE != single || $rc != "$(primus_requeue_code)" ]]; then
    rc=$(primus_failure_report "$rc" "$__primus_log_file")
  fi
  if ((PRIMUS_RUN_ORPHANS)); then
    :
  elif ((rc == 0)) && [[ -n $PRIMUS_LOG_SPOOL_LOST ]]; then
    LOG_WARN "workload finished successfully (exit code 0), but the log lacks some of the" \
      "launcher's own lines from before the workload started (its copy to the log died;" \
      "they are on the console); log: $__primus_log_file"
  elif ((rc == 0)); then
    LOG_INFO "workload finished successfully; log: $__primus_log_file"
  elif [[ $rc == "$(primus_requeue_code)" ]]; then
    LOG_WARN "workload exited with the requeue code $rc (PRIMUS_REQUEUE_EXIT_CODE); log: $__primus_log_file"
  else
    LOG_ERROR "workload failed with exit code $rc; log: $__primus_log_file"
  fi
  PRIMUS_RUN_PID=""
  primus_cleanup_run
  exit "$rc"
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
