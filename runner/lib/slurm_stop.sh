# shellcheck shell=bash
# runner/lib/slurm_stop.sh: the Slurm side of stopping, for slurm-entry: the
# cluster's KillWait read for the stop grace (Python decides the grace), the
# signals the entry receives, and requeue (also the grace and the bounded Slurm
# client calls of runner/lib/slurm_srun.sh). Sourced after common.sh (and supervise.sh in the
# entry); defines only primus_* names, never changes shell options.
# docs/stopping-and-requeue.md "What each signal does".
#
# Facts (Debian 12 slurm-wlm 22.05 man pages): slurm.conf(5) KillWait is "the
# interval, in seconds, given to a job's processes between the SIGTERM and
# SIGKILL signals", default 30 s; scancel --signal, sbatch/srun --signal=SIG@T
# and a cancel's SIGTERM reach every process of each step (the step's process
# tracking signals the whole container; seen on the test cluster too), so the
# ranks get them from Slurm directly; scontrol(1) `requeue` puts a running batch
# job back to pending, and sbatch(1): SLURM_RESTART_COUNT counts the restarts.

if [[ -n ${__PRIMUS_SLURM_STOP_SH:-} ]]; then
  return 0
fi
__PRIMUS_SLURM_STOP_SH=1

PRIMUS_ENTRY_NOTICE=""   # USR1/USR2 seen by the entry (a preemption notice)
PRIMUS_ENTRY_SIGNAL=""   # TERM/INT/HUP seen by the entry
PRIMUS_ENTRY_SIGNAL_AT="" # when the first of them came (microseconds)
PRIMUS_ENTRY_CHILD=""    # the launcher's pid
PRIMUS_ENTRY_PENDING=()  # "SIG TIME_US" trapped before that pid was known

# primus_slurm_client_cmd VAR WORDS...: VAR = the Slurm client call WORDS,
# bounded by PRIMUS_SLURM_SCONTROL_TIMEOUT seconds (default 3) when timeout(1)
# exists; false when the client is missing or SLURM_CONF names a missing file
# (scontrol then retries for 60 s).
primus_slurm_client_cmd() {
  local -n __primus_cmd=$1
  shift
  command -v "$1" >/dev/null 2>&1 || return 1
  [[ -z ${SLURM_CONF:-} || -r ${SLURM_CONF:-} ]] || return 1
  __primus_cmd=("$@")
  if command -v timeout >/dev/null 2>&1; then
    __primus_cmd=(timeout "${PRIMUS_SLURM_SCONTROL_TIMEOUT:-${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_SLURM_SCONTROL_TIMEOUT]}}" "$@")
  fi
  return 0
}

# primus_slurm_read_killwait: export PRIMUS_SLURM_KILLWAIT, the text after
# `KillWait =` in `scontrol show config` ('' when it does not answer), unless
# PRIMUS_KILL_GRACE is set. The stop grace it gives is decided in Python
# (python/primus_runner/scheduler/stop_grace.py): by the launch helper and the
# container plan for a launch, by `slurm-grace` for the stop paths below.
primus_slurm_read_killwait() {
  [[ -z ${PRIMUS_KILL_GRACE:-} ]] || return 0
  local -a cmd
  local line value=""
  if primus_slurm_client_cmd cmd scontrol show config; then
    while primus_read line; do
      if [[ $line == KillWait[[:space:]=]* ]]; then
        value=${line#*=}
        break
      fi
    done < <("${cmd[@]}" 2>/dev/null)
  fi
  export PRIMUS_SLURM_KILLWAIT=$value
}

# primus_slurm_grace GRACE_VAR WHY_VAR: the stop grace in whole seconds and
# why, for a stop path that runs no launcher (srun's parent); one Python start.
primus_slurm_grace() {
  local -n __primus_grace=$1 __primus_grace_why=$2
  local __primus_line
  primus_slurm_read_killwait
  __primus_line=$(primus_python slurm-grace) || __primus_line=""
  __primus_grace=${__primus_line%%$'\t'*} __primus_grace_why=${__primus_line#*$'\t'}
}

# primus_entry_signal SIG: the entry's trap. A signal the launcher received
# too (within the window) was Slurm's step-wide delivery: it already reached
# every process, nothing is sent again. Otherwise (someone signalled this entry
# alone) it is passed on to the launcher, marked as forwarded.
primus_entry_signal() {
  local sig=$1 at
  at=$(primus_signal_note entry "$sig")
  case $sig in
    USR1 | USR2) PRIMUS_ENTRY_NOTICE=$sig ;;
    *)
      if [[ -z $PRIMUS_ENTRY_SIGNAL ]]; then
        PRIMUS_ENTRY_SIGNAL_AT=$at
        primus_entry_on_cancel "$sig"
      fi
      PRIMUS_ENTRY_SIGNAL=$sig
      ;;
  esac
  if [[ -z $PRIMUS_ENTRY_CHILD ]]; then
    # Forked but its pid not known yet: passed on right after (primus_entry_run).
    PRIMUS_ENTRY_PENDING+=("$sig $at")
    return 0
  fi
  primus_entry_pass "$sig" "$at"
}

# primus_entry_pass SIG TIME_US: SIG to the launcher, unless it got it too.
primus_entry_pass() {
  local sig=$1 origin __primus_entry_sender
  # shellcheck disable=SC2034  # the sender text: the launcher's line says it
  primus_signal_origin origin __primus_entry_sender entry "$sig" "$2"
  [[ $origin != step ]] || return 0
  { : >"$PRIMUS_SIGNAL_DIR/forwarded.$sig"; } 2>/dev/null || true
  kill "-$sig" "$PRIMUS_ENTRY_CHILD" 2>/dev/null || true
  return 0
}

# primus_entry_on_cancel SIG: overridden by the entry (its announcement).
primus_entry_on_cancel() { :; }

# primus_entry_run CMD...: run the launcher in a session of its own (a signal
# to the entry's process group reaches only the entry, which passes it on),
# with the traps above; returns the launcher's status.
primus_entry_run() {
  # __primus_ locals: the launcher inherits this environment.
  PRIMUS_SIGNAL_DIR=$(mktemp -d "${TMPDIR:-/tmp}/primus-signals.XXXXXX")
  export PRIMUS_SIGNAL_DIR
  local __primus_sig
  for __primus_sig in TERM INT HUP USR1 USR2; do
    # shellcheck disable=SC2064 # the signal name is fixed now, on purpose
    trap "primus_entry_signal $__primus_sig" "$__primus_sig"
  done
  # SIGINT at its default (bash starts `cmd &` with it ignored), so the INT
  # passed on above stops the launch; the launcher needs no restart for it.
  { trap - INT; exec setsid "$@"; } &
  PRIMUS_ENTRY_CHILD=$!
  local __primus_rc __primus_item
  for __primus_item in "${PRIMUS_ENTRY_PENDING[@]}"; do
    primus_entry_pass "${__primus_item% *}" "${__primus_item#* }"
  done
  PRIMUS_ENTRY_PENDING=()
  while :; do
    __primus_rc=0
    wait "$PRIMUS_ENTRY_CHILD" || __primus_rc=$?
    # A trapped signal interrupts wait; keep waiting while the launcher lives.
    ((__primus_rc > 128)) && primus_any_alive "$PRIMUS_ENTRY_CHILD" && continue
    break
  done
  return "$__primus_rc"
}

# primus_entry_note_exit RC: when this task's launcher ended non-zero on its
# own (no stop reached the entry), its status and end time for the caller of
# srun (PRIMUS_STEP_EXITS: runner/helpers/step_exit.sh, where the task that
# ended first decides the step's status).
primus_entry_note_exit() {
  local __primus_dir=${PRIMUS_STEP_EXITS:-}
  (($1 != 0)) && [[ -z $PRIMUS_ENTRY_SIGNAL && -n $__primus_dir && -d $__primus_dir ]] || return 0
  { printf '%s %s %s %s\n' "${EPOCHREALTIME//[.,]/}" "$1" "${SLURM_NODEID:-?}" "${HOSTNAME:-?}" \
    >"$__primus_dir/task-${SLURM_PROCID:-0}"; } 2>/dev/null || true
}

# primus_entry_closing VAR: the launcher's closing line of a stop, if any.
primus_entry_closing() {
  local -n __primus_closing=$1
  __primus_closing=""
  { read -r __primus_closing <"$PRIMUS_SIGNAL_DIR/closing"; } 2>/dev/null || true
}

# primus_entry_cleanup: remove this node's signal notes.
primus_entry_cleanup() {
  [[ -z ${PRIMUS_SIGNAL_DIR:-} ]] || rm -rf -- "$PRIMUS_SIGNAL_DIR"
}

# ---------------------------------------------------------------- requeue

# primus_requeue_reason REASON_VAR SAID_VAR RC: why this job should be
# requeued (empty: not) and the line to say first, decided by
# python/primus_runner/scheduler/requeue.py (one Python start as the task ends:
# task 0 decides, another task only leaves a marker for it in the workspace).
primus_requeue_reason() {
  local -n __primus_reason=$1 __primus_said=$2
  local -a __primus_lines=()
  mapfile -t __primus_lines < <(primus_python slurm-requeue reason --rc "$3" --code "$(primus_requeue_code)" \
    --notice "$PRIMUS_ENTRY_NOTICE")
  __primus_reason=${__primus_lines[0]-} __primus_said=${__primus_lines[1]-}
}

# primus_slurm_job_now STATE_VAR NEXT_VAR: this job's JobState now (STATE_VAR;
# empty when scontrol does not answer) and, when the job was requeued while
# this run went on (`scontrol requeue`, a preemption that requeues), the
# restart number of its next run (NEXT_VAR, else empty): `scontrol show job`
# asked here, its line read by python/primus_runner/scheduler/requeue.py.
primus_slurm_job_now() {
  local -n __primus_state=$1 __primus_next=$2
  __primus_state="" __primus_next=""
  [[ -n ${SLURM_JOB_ID:-} ]] || return 0
  local -a cmd
  primus_slurm_client_cmd cmd scontrol show job -o "$SLURM_JOB_ID" || return 0
  local line
  line=$("${cmd[@]}" 2>/dev/null) || return 0
  line=$(primus_python slurm-requeue job-now <<<"$line") || return 0
  __primus_state=${line%%$'\t'*} __primus_next=${line#*$'\t'}
}

# primus_entry_hold_left GRACE_VAR LEFT_VAR: after a stop by a signal to the
# step alone (the job goes on: scancel --signal, `primus-cli slurm srun` on
# SIGTERM), LEFT_VAR = the seconds (decimal) until the stop grace (GRACE_VAR) has
# passed since the signal; empty when it has (python/primus_runner/scheduler/
# stop_grace.py, one Python start on this stop path). A task of a multi-task
# step waits that long before it exits: srun --kill-on-bad-exit ends the step at
# the first task that exits non-zero, and that ending kills the tasks still
# stopping about a second later (seen on the test cluster: rank 0's 3 s
# checkpoint on node1 was killed once node2 was done). When the job itself ends
# (scancel, time limit, requeue) Slurm's own KillWait sequence governs and a
# slower node finishes (seen too): no wait.
primus_entry_hold_left() {
  local -n __primus_hold_grace=$1 __primus_left=$2
  local __primus_line
  __primus_hold_grace="" __primus_left=""
  [[ -n $PRIMUS_ENTRY_SIGNAL_AT && $PRIMUS_ENTRY_SIGNAL_AT != *[!0-9]* ]] || return 0
  __primus_line=$(primus_python slurm-grace --hold "$PRIMUS_ENTRY_SIGNAL_AT") || return 0
  __primus_hold_grace=${__primus_line%%$'\t'*} __primus_left=${__primus_line#*$'\t'}
}

# primus_requeue_job REASON: scontrol requeue this job, once. Prints nothing on
# success; on failure, why and the fix.
primus_requeue_job() {
  local out rc=0
  out=$(scontrol requeue "$SLURM_JOB_ID" 2>&1) || rc=$?
  ((rc != 0)) || return 0
  echo "requeue: 'scontrol requeue $SLURM_JOB_ID' failed (exit $rc: ${out:-no output}): $1," \
    "so the job is not requeued. Submit it with sbatch (srun allocations cannot be requeued)" \
    "and slurm.requeue: true (sbatch --requeue)."
  return 1
}
