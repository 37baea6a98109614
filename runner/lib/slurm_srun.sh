# shellcheck shell=bash
# runner/lib/slurm_srun.sh: how `primus-cli slurm srun` runs srun: as a
# child of runner/helpers/srun_parent.sh (which primus-cli-slurm.sh becomes),
# in a session of its own, so that a stop reaches the ranks as a stop.
# Sourced by that helper after common.sh, processes.sh and slurm_stop.sh;
# defines only primus_* names, never changes shell options.
# docs/stopping-and-requeue.md "Stopping, preemption and requeue".
#
# Facts: srun(1) (Slurm 22.05, "SIGNALS AND ESCAPE SEQUENCES"): signals sent to
# srun are forwarded to its tasks "with a few exceptions". SIGTERM and SIGHUP
# are such exceptions: srun answers them with "forcing job termination" and
# SIGKILL to every task (Slurm source, src/srun/libsrun/srun_job.c,
# _srun_signal_mgr: `case SIGTERM: case SIGHUP: ... launch_g_fwd_signal(SIGKILL)`;
# seen on the 22.05 test cluster: the ranks got no SIGTERM and no grace).
# scancel(1) --signal sends a signal to the processes of a step and leaves the
# job state alone; `scontrol show step` names each step's srun as
# SrunHost:Pid=HOST:PID (seen on 22.05).
#
# So the wrapper sends SIGTERM/SIGHUP itself to every task of its srun's step
# (`scancel --signal=SIG JOB.STEP`): each node's entry and launcher stop the
# ranks with the stop grace, the tasks end, srun exits with their status, and
# the wrapper reports it and exits with it. srun gets the signal itself (and
# kills every task) only when no step of it is found (the allocation is still
# pending), when scancel fails, on a second SIGTERM/SIGHUP, or when srun still
# runs PRIMUS_SRUN_STOP_MARGIN (10) s after the grace. SIGINT (srun's own
# Ctrl-C: a status, twice within a second SIGINT to the tasks), SIGUSR1 and
# SIGUSR2 are passed to srun, which forwards them to the tasks as before.
# srun's own session keeps a signal to the caller's process group (timeout(1),
# a closed terminal, kill -- -PGID) from reaching srun directly.

PRIMUS_SRUN_PID=""       # srun's pid while it runs
PRIMUS_SRUN_STOP=""      # TERM or HUP once a stop began
PRIMUS_SRUN_STEPS=""     # the steps the stop signal was sent to
PRIMUS_SRUN_DEADLINE=""  # SECONDS at which srun itself gets the stop signal
PRIMUS_SRUN_TRAPPED=0    # a trap ran while `wait` waited
PRIMUS_SRUN_PENDING=()   # stop:SIG / pass:SIG trapped before srun's pid was known
PRIMUS_SRUN_STOP_MARGIN=10

# primus_srun_steps VAR PID: VAR = the steps (JOB.STEP) whose srun is PID on
# this host, from `scontrol show step -o`; empty when none or no answer.
primus_srun_steps() {
  local -n __primus_steps=$1
  local pid=$2 host="" line id
  __primus_steps=()
  { primus_read host </proc/sys/kernel/hostname; } 2>/dev/null || host=${HOSTNAME:-}
  local -a cmd
  primus_slurm_client_cmd cmd scontrol show step -o || return 0
  while primus_read line; do
    [[ $line =~ (^|[[:space:]])StepId=([^[:space:]]+) ]] || continue
    id=${BASH_REMATCH[2]}
    [[ $line =~ (^|[[:space:]])SrunHost:Pid=([^[:space:]]+):([0-9]+)([[:space:]]|$) ]] || continue
    [[ ${BASH_REMATCH[3]} == "$pid" && ${BASH_REMATCH[2]%%.*} == "${host%%.*}" ]] || continue
    __primus_steps+=("$id")
  done < <("${cmd[@]}" 2>/dev/null)
}

# primus_srun_pass SIG: the INT/USR1/USR2 trap: srun gets SIG as if it were
# the foreground process.
primus_srun_pass() {
  PRIMUS_SRUN_TRAPPED=1
  if [[ -z $PRIMUS_SRUN_PID ]]; then
    PRIMUS_SRUN_PENDING+=("pass:$1")
    return 0
  fi
  kill "-$1" "$PRIMUS_SRUN_PID" 2>/dev/null || true
}

# primus_srun_force SIG WHY: srun itself gets SIG (it kills every task).
primus_srun_force() {
  LOG_WARN "SIG$1 $2: passing it to srun, which ends the step with SIGKILL to every task."
  PRIMUS_SRUN_DEADLINE=""
  kill "-$1" "$PRIMUS_SRUN_PID" 2>/dev/null || true
}

# primus_srun_on_stop SIG: the TERM/HUP trap (see the header).
primus_srun_on_stop() {
  local sig=$1
  PRIMUS_SRUN_TRAPPED=1
  if [[ -z $PRIMUS_SRUN_PID ]]; then
    PRIMUS_SRUN_PENDING+=("stop:$sig")
    return 0
  fi
  if [[ -n $PRIMUS_SRUN_STOP ]]; then
    primus_srun_force "$sig" "received again while the ranks stop"
    return 0
  fi
  PRIMUS_SRUN_STOP=$sig
  local -a steps cmd
  primus_srun_steps steps "$PRIMUS_SRUN_PID"
  if ((${#steps[@]} == 0)); then
    primus_srun_force "$sig" "received before srun had a running step (scontrol show step names none)"
    return 0
  fi
  if ! primus_slurm_client_cmd cmd scancel "--signal=$sig" "${steps[@]}" || ! "${cmd[@]}" >/dev/null 2>&1; then
    primus_srun_force "$sig" "received, and 'scancel --signal=$sig ${steps[*]}' failed"
    return 0
  fi
  local grace text
  primus_slurm_grace grace text
  [[ -n $grace ]] || grace=27 text="stop grace 27 s (the grace could not be decided)"
  local wait=$((10#$grace + PRIMUS_SRUN_STOP_MARGIN))
  PRIMUS_SRUN_DEADLINE=$((SECONDS + wait))
  PRIMUS_SRUN_STEPS=${steps[*]}
  LOG_WARN "SIG$sig received: sent to every task of step ${steps[*]} (scancel --signal=$sig)," \
    "not to srun (srun would SIGKILL them); the launchers stop the ranks, $text; srun itself" \
    "gets SIG$sig if it still runs in $wait s."
}

# primus_srun_wait_stop: during a stop, wait for srun until the deadline, then
# pass the stop signal to srun.
primus_srun_wait_stop() {
  while [[ -n $PRIMUS_SRUN_DEADLINE ]] && primus_any_alive "$PRIMUS_SRUN_PID"; do
    if ((SECONDS >= PRIMUS_SRUN_DEADLINE)); then
      primus_srun_force "$PRIMUS_SRUN_STOP" "sent to the step $PRIMUS_SRUN_STOP_MARGIN s past the stop grace, and srun still runs"
      return 0
    fi
    sleep 0.2
  done
}

# primus_srun_run CMD...: run srun (CMD) in a session of its own with stdin
# kept, the traps above; returns srun's status and reports it after a stop.
primus_srun_run() {
  # __primus_ locals: srun hands this environment to every task.
  local __primus_sig __primus_rc __primus_prev=0
  for __primus_sig in TERM HUP; do
    # shellcheck disable=SC2064 # the signal name is fixed now, on purpose
    trap "primus_srun_on_stop $__primus_sig" "$__primus_sig"
  done
  for __primus_sig in INT USR1 USR2; do
    # shellcheck disable=SC2064
    trap "primus_srun_pass $__primus_sig" "$__primus_sig"
  done
  # The tasks' own exit statuses (runner/helpers/step_exit.sh): srun's is the
  # highest, that of the tasks --kill-on-bad-exit ended after the first failure.
  local __primus_exits="" __primus_decided
  __primus_exits=$("$PRIMUS_ROOT/runner/helpers/step_exit.sh" start 2>/dev/null) || __primus_exits=""
  [[ -z $__primus_exits ]] || export PRIMUS_STEP_EXITS=$__primus_exits
  setsid "$@" <&0 &
  PRIMUS_SRUN_PID=$!
  # Signals trapped between the fork and now (a trap runs between commands).
  local __primus_item
  for __primus_item in "${PRIMUS_SRUN_PENDING[@]}"; do
    case $__primus_item in
      stop:*) primus_srun_on_stop "${__primus_item#stop:}" ;;
      pass:*) primus_srun_pass "${__primus_item#pass:}" ;;
    esac
  done
  PRIMUS_SRUN_PENDING=()
  while :; do
    PRIMUS_SRUN_TRAPPED=0
    __primus_rc=0
    wait "$PRIMUS_SRUN_PID" 2>/dev/null || __primus_rc=$?
    if ((__primus_rc == 127 && __primus_prev != 0)); then
      __primus_rc=$__primus_prev # srun's status was collected before the trap ran
      break
    fi
    ((PRIMUS_SRUN_TRAPPED && __primus_rc > 128)) || break
    __primus_prev=$__primus_rc
    primus_srun_wait_stop
  done
  trap - TERM HUP INT USR1 USR2
  PRIMUS_SRUN_PID=""
  if [[ -n $PRIMUS_SRUN_STOP ]]; then
    LOG_WARN "srun${PRIMUS_SRUN_STEPS:+ (step $PRIMUS_SRUN_STEPS)} ended after SIG$PRIMUS_SRUN_STOP:" \
      "exit status $__primus_rc."
    [[ -z $__primus_exits ]] || rm -rf -- "$__primus_exits"  # a stop: srun's status says it
  elif [[ -n $__primus_exits ]]; then
    __primus_decided=$("$PRIMUS_ROOT/runner/helpers/step_exit.sh" end "$__primus_exits" "$__primus_rc") || __primus_decided=""
    [[ ! $__primus_decided =~ ^[0-9]+$ ]] || __primus_rc=$__primus_decided
  fi
  return "$__primus_rc"
}
