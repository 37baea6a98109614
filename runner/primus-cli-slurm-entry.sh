#!/usr/bin/env bash
# runner/primus-cli-slurm-entry.sh: the per-node entry of a Slurm job step.
# Summary: the entry srun starts on every node of a Slurm job (primus-cli slurm builds that call)
#
# Usage (on every node, one task per node):
#   srun --ntasks-per-node=1 runner/primus-cli-slurm-entry.sh [ENTRY OPTIONS] \
#        [--] [direct|container] [MODE OPTIONS] [-- WORKLOAD ARGS]
#   (`primus-cli slurm ...` builds this call for you.)
#
# Entry options (before the mode word):
#   --dry-run        print what this node would run (passed on to the mode)
#   --debug          PRIMUS_LOG_LEVEL=DEBUG (passed on to the mode)
#   --config FILE    configuration file (passed on to the mode)
#   --srun-native    with several tasks per node, run one worker per Slurm task
#                    (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE from Slurm,
#                    workload started by `direct --single`, no torchrun); also
#                    PRIMUS_SLURM_SRUN_NATIVE=1 or config `slurm.srun_native: true`
#   --no-srun-native several tasks per node are refused (the default), without
#                    reading the configuration
#   -h, --help       this text
# The mode word is `direct` or `container` (one `--` before it is dropped, the
# upstream Primus call form); everything after it goes to
# runner/primus-cli-direct.sh or runner/primus-cli-container.sh unchanged. No
# mode word: config `slurm.mode`, default `container` as upstream; a first word
# that is not an option then starts the workload (`-- preflight --quick` runs
# `container -- preflight --quick`).
#
# What it does on each node (docs/run-under-slurm.md "The `slurm` mode", "Detection and rank mapping"):
# - asks python/primus_runner/scheduler/step.py once (one python3 start, which
#   reads the configuration only when the mode or srun-native must come from
#   it; runner/lib/slurm_step.sh applies the answer) for: the step's shape,
#   step-level variables first so a smaller srun inside a larger allocation
#   maps only its own nodes: SLURM_STEP_NUM_NODES > SLURM_NNODES >
#   SLURM_JOB_NUM_NODES; SLURM_STEP_NODELIST > SLURM_NODELIST >
#   SLURM_JOB_NODELIST; node index SLURM_NODEID, else the node of task
#   SLURM_PROCID; a refusal (exit 2) when run in the batch script of a
#   multi-node job without srun (only one node would start; the others would
#   never join); for more than one task per node, exit 2 with the fix
#   (`--ntasks-per-node=1`) unless srun-native is asked for: never several
#   torchruns per node;
# - exports PRIMUS_SLURM_FIRST_HOST (the first host of the step's node list)
#   when `scontrol show hostnames` answers; otherwise the rank mapping of the
#   launch (python3 -m primus_runner ranks, run once by the direct launcher)
#   expands the list itself. NNODES, NODE_RANK, MASTER_ADDR (and the check that
#   a user MASTER_ADDR names the first node) are mapped there. Works without
#   any Slurm client installed;
# - logs the node list as Slurm gives it (compressed), never one name per node;
# - runs the mode's launcher in a session of its own and reports its exit
#   status, saying so when the job was cancelled (scancel, time limit) or
#   requeued (scontrol requeue: a WARN "requeued" line, not a cancel);
# - signals (runner/lib/slurm_stop.sh): SIGTERM/SIGINT/SIGHUP/SIGUSR1/SIGUSR2
#   sent to this entry alone are passed on to the launcher; one that Slurm sent
#   to every process of the step (scancel --signal, --signal=SIG@T, a cancel)
#   already reached the ranks and is not sent again. PRIMUS_KILL_GRACE defaults
#   to a few seconds less than the cluster's KillWait (read here, decided and
#   said by the launcher: python/primus_runner/scheduler/stop_grace.py). After a stop signal sent
#   to the step alone (the job still RUNNING), a task of a multi-task step exits
#   only once the grace has passed since the signal (srun --kill-on-bad-exit
#   would otherwise kill the nodes still stopping);
# - requeue: task 0 runs `scontrol requeue $SLURM_JOB_ID` once when a rank
#   exits with PRIMUS_REQUEUE_EXIT_CODE (default 85), or, with slurm.requeue:
#   true, after a preemption notice (USR1/USR2) and a clean exit. The step
#   summary shows SLURM_RESTART_COUNT as "restart N".
#
# Exit codes: 0 ok; 1 a launcher script is missing; 2 invalid arguments or an
# impossible Slurm layout; 3 runtime failure; otherwise the launcher's own
# status (128+N after signal N).
set -euo pipefail

# This script's directory without a fork (srun runs it by absolute path).
PRIMUS_ENTRY_RUNNER_DIR=${BASH_SOURCE[0]%/*}
[[ $PRIMUS_ENTRY_RUNNER_DIR == "${BASH_SOURCE[0]}" ]] && PRIMUS_ENTRY_RUNNER_DIR=.
[[ $PRIMUS_ENTRY_RUNNER_DIR == /* ]] || PRIMUS_ENTRY_RUNNER_DIR=$(cd "$PRIMUS_ENTRY_RUNNER_DIR" && pwd)
PRIMUS_RUNNER_DIR=${PRIMUS_RUNNER_DIR:-$PRIMUS_ENTRY_RUNNER_DIR}
# shellcheck source=runner/lib/common.sh
source "$PRIMUS_RUNNER_DIR/lib/common.sh"
# shellcheck source=runner/lib/supervise.sh
source "$PRIMUS_RUNNER_DIR/lib/supervise.sh"
# shellcheck source=runner/lib/slurm_stop.sh
source "$PRIMUS_RUNNER_DIR/lib/slurm_stop.sh"
# shellcheck source=runner/lib/mode_words.sh
source "$PRIMUS_RUNNER_DIR/lib/mode_words.sh"
# shellcheck source=runner/lib/slurm_step.sh
source "$PRIMUS_RUNNER_DIR/lib/slurm_step.sh"

PRIMUS_ENTRY_DRY_RUN=0
PRIMUS_ENTRY_CONFIG=""
PRIMUS_ENTRY_DEBUG=0
PRIMUS_ENTRY_SRUN_NATIVE=""
PRIMUS_ENTRY_MODE=""
PRIMUS_ENTRY_MODE_ARGS=()
PRIMUS_STEP_NODES=""
PRIMUS_STEP_NODELIST=""
PRIMUS_STEP_NODE_ID=""
PRIMUS_STEP_TASKS=""
PRIMUS_ENTRY_REQUEUED=""  # the next run's restart number once the job is requeued
PRIMUS_ENTRY_STEP_SIGNAL=0 # the stop signal came to the step alone; the job goes on

usage() {
  primus_usage "${BASH_SOURCE[0]}"
}

# entry_log LEVEL MESSAGE: log with this node's index in the prefix.
entry_log() {
  local level=$1
  shift
  NODE_RANK=${PRIMUS_STEP_NODE_ID:-${NODE_RANK:-0}} "LOG_$level" "slurm-entry: $*"
}

entry_die() {
  local code=$1
  shift
  entry_log ERROR "$@"
  exit "$code"
}

parse_args() {
  while (($#)); do
    case $1 in
      -h | --help)
        usage
        exit 0
        ;;
      --dry-run) PRIMUS_ENTRY_DRY_RUN=1 ;;
      --debug) PRIMUS_ENTRY_DEBUG=1 ;;
      --srun-native) PRIMUS_ENTRY_SRUN_NATIVE=1 ;;
      --no-srun-native) PRIMUS_ENTRY_SRUN_NATIVE=0 ;;
      --config)
        (($# >= 2)) || entry_die "$PRIMUS_EXIT_INVALID" "--config needs a FILE argument, e.g. --config exp.yaml."
        PRIMUS_ENTRY_CONFIG=$2
        shift
        ;;
      --config=*) PRIMUS_ENTRY_CONFIG=${1#--config=} ;;
      -- | [!-]*)
        # Upstream's call form `-- <mode> ...`; no mode word: slurm.mode
        # (default container). runner/lib/mode_words.sh owns the rule.
        primus_mode_words_split "$@"
        PRIMUS_ENTRY_MODE=$PRIMUS_MODE_WORD
        PRIMUS_ENTRY_MODE_ARGS=("${PRIMUS_MODE_ARGS[@]}")
        return 0
        ;;
      *)
        entry_die "$PRIMUS_EXIT_INVALID" "unknown argument '$1' before the mode; accepted:" \
          "--dry-run --debug --config FILE --srun-native, then direct|container" \
          "[mode options] [-- workload args]. Example: $0 direct -- preflight"
        ;;
    esac
    shift
  done
}

# mode_args_have OPTION: true when OPTION appears among the mode's own options
# (before its `--`).
mode_args_have() {
  local arg
  for arg in "${PRIMUS_ENTRY_MODE_ARGS[@]}"; do
    [[ $arg == -- ]] && return 1
    [[ $arg == "$1" ]] && return 0
  done
  return 1
}

# find_first_host: PRIMUS_SLURM_FIRST_HOST from `scontrol show hostnames`,
# only when scontrol exists and answers with a name. scontrol retries for 60 s
# when SLURM_CONF names a missing file, and a config-less client may wait on
# DNS: such a SLURM_CONF is skipped and the call is bounded by
# PRIMUS_SLURM_SCONTROL_TIMEOUT seconds (default 3).
find_first_host() {
  [[ -n ${PRIMUS_SLURM_FIRST_HOST:-} ]] && return 0
  local -a cmd
  primus_slurm_client_cmd cmd scontrol show hostnames "$PRIMUS_STEP_NODELIST" || return 0
  local names
  names=$("${cmd[@]}" 2>/dev/null) || return 0
  names=${names%%$'\n'*}
  [[ -n $names && $names != *[[:space:]]* ]] || return 0
  export PRIMUS_SLURM_FIRST_HOST=$names
}

log_step() {
  local first=${PRIMUS_SLURM_FIRST_HOST:-(expanded by the rank mapping)}
  # The node list as Slurm gives it (compressed), cut to 160 characters.
  local nodes_shown=$PRIMUS_STEP_NODELIST
  ((${#nodes_shown} <= 160)) || nodes_shown="${nodes_shown:0:160}... (${#PRIMUS_STEP_NODELIST} characters)"
  entry_log INFO "job ${SLURM_JOB_ID} step ${SLURM_STEP_ID:-${SLURM_STEPID:-batch}}:" \
    "$PRIMUS_STEP_NODES node(s) $nodes_shown, this is node $PRIMUS_STEP_NODE_ID" \
    "(${SLURMD_NODENAME:-${HOSTNAME:-?}}), $PRIMUS_STEP_TASKS task(s), first host $first, mode $PRIMUS_ENTRY_MODE," \
    "restart ${SLURM_RESTART_COUNT:-0}"
}

# build_command: the mode launcher and its arguments into PRIMUS_LAUNCH_CMD.
build_command() {
  local script
  case $PRIMUS_ENTRY_MODE in
    direct) script=$PRIMUS_RUNNER_DIR/primus-cli-direct.sh ;;
    container) script=$PRIMUS_RUNNER_DIR/primus-cli-container.sh ;;
  esac
  [[ -f $script ]] ||
    entry_die "$PRIMUS_EXIT_MISSING" "launcher '$script' for mode '$PRIMUS_ENTRY_MODE' not found;" \
      "PRIMUS_RUNNER_DIR='$PRIMUS_RUNNER_DIR' must be the runner/ directory of primus-runner" \
      "on every node (a shared file system)."
  PRIMUS_LAUNCH_CMD=(bash "$script")
  ((PRIMUS_ENTRY_DRY_RUN)) && ! mode_args_have --dry-run && PRIMUS_LAUNCH_CMD+=(--dry-run)
  ((PRIMUS_ENTRY_DEBUG)) && ! mode_args_have --debug && PRIMUS_LAUNCH_CMD+=(--debug)
  [[ -n $PRIMUS_ENTRY_CONFIG ]] && ! mode_args_have --config && PRIMUS_LAUNCH_CMD+=(--config "$PRIMUS_ENTRY_CONFIG")
  PRIMUS_LAUNCH_CMD+=("${PRIMUS_ENTRY_MODE_ARGS[@]}")
}

# announce_cancel SIG: said at once, because Slurm kills the whole step
# KillWait seconds after its SIGTERM and the launcher may still be stopping.
# A requeue (scontrol requeue, a preemption that requeues) is said as such:
# the job is not cancelled, it runs again (runner/lib/slurm_stop.sh).
# shellcheck disable=SC2329 # called through primus_entry_on_cancel
announce_cancel() {
  local step="job ${SLURM_JOB_ID} step ${SLURM_STEP_ID:-${SLURM_STEPID:-?}}"
  local status=$((128 + $(signal_number "$1")))
  local state
  primus_slurm_job_now state PRIMUS_ENTRY_REQUEUED
  # Only the step was signalled: the job goes on (hold_exit).
  [[ $state != RUNNING ]] || PRIMUS_ENTRY_STEP_SIGNAL=1
  if [[ -n $PRIMUS_ENTRY_REQUEUED ]]; then
    entry_log WARN "$step requeued (scontrol requeue, or a preemption that requeues): SIG$1" \
      "received on this node; stopping the launcher (exit status will be $status); the job" \
      "runs again as restart $PRIMUS_ENTRY_REQUEUED."
    return 0
  elif ((PRIMUS_ENTRY_STEP_SIGNAL)); then
    entry_log WARN "$step: SIG$1 sent to the step, not a cancel of the job (scancel --signal," \
      "or 'primus-cli slurm srun' passing on its SIG$1); stopping the launcher (exit status" \
      "will be $status)."
    return 0
  fi
  entry_log ERROR "$step CANCELLED on this node: SIG$1 received (scancel, time limit," \
    "preemption, Ctrl-C, or a failed node ending the step); stopping the launcher" \
    "(exit status will be $status)."
}

# shellcheck disable=SC2329 # called from primus_entry_signal
primus_entry_on_cancel() { announce_cancel "$1"; }

signal_number() {
  case $1 in
    HUP) echo 1 ;;
    INT) echo 2 ;;
    *) echo 15 ;;
  esac
}

# run_launcher: run PRIMUS_LAUNCH_CMD (runner/lib/slurm_stop.sh), report how it ended.
run_launcher() {
  # The launcher decides the stop grace from the cluster's KillWait and says it
  # (python/primus_runner/scheduler/stop_grace.py).
  primus_slurm_read_killwait
  local __primus_rc=0
  # The entry's lines so far become the first lines of the launcher's log.
  primus_log_spool_hand_over
  primus_entry_run "${PRIMUS_LAUNCH_CMD[@]}" || __primus_rc=$?
  # The launcher has ended: its status is this task's. A stop that reaches the
  # step now (srun --kill-on-bad-exit after another node exited first) changes
  # nothing, and must not kill the steps below (a command substitution killed
  # by it would end this script with 143 under set -e).
  trap '' TERM HUP INT
  primus_entry_note_exit "$__primus_rc"
  primus_log_prelude_remove
  report_exit "$__primus_rc"
}

report_exit() {
  local rc=$1 closing
  primus_entry_closing closing
  primus_entry_cleanup
  if [[ -n $PRIMUS_ENTRY_SIGNAL ]]; then
    local own=$rc
    rc=$((128 + $(signal_number "$PRIMUS_ENTRY_SIGNAL")))
    # The launcher's closing line is this node's; say more only without it.
    if [[ -z $closing && -n $PRIMUS_ENTRY_REQUEUED ]]; then
      entry_log WARN "job ${SLURM_JOB_ID} requeued (SIG$PRIMUS_ENTRY_SIGNAL): the launcher stopped" \
        "(its status $own); exit status $rc; the job runs again as restart $PRIMUS_ENTRY_REQUEUED."
    elif [[ -z $closing ]] && ((PRIMUS_ENTRY_STEP_SIGNAL)); then
      entry_log WARN "job ${SLURM_JOB_ID} step stopped (SIG$PRIMUS_ENTRY_SIGNAL): the launcher" \
        "stopped (its status $own); exit status $rc."
    elif [[ -z $closing ]]; then
      entry_log ERROR "job ${SLURM_JOB_ID} CANCELLED (SIG$PRIMUS_ENTRY_SIGNAL): the launcher stopped" \
        "(its status $own); exit status $rc."
    fi
    # srun ends the step when another node exits with the requeue code.
    [[ -n $PRIMUS_ENTRY_REQUEUED ]] || requeue_if_asked "$own"
    hold_exit
    exit "$rc"
  elif ((rc == 0)); then
    entry_log INFO "launcher finished: exit status 0."
  elif ((rc > 128)); then
    entry_log ERROR "launcher killed by signal $((rc - 128)): exit status $rc."
  else
    entry_log ERROR "launcher failed: exit status $rc."
  fi
  requeue_if_asked "$rc"
  exit "$rc"
}

# hold_exit: a stopped task of a multi-task step whose job goes on waits out
# the stop grace before it exits, so that srun --kill-on-bad-exit does not kill
# a node still stopping (runner/lib/slurm_stop.sh primus_entry_hold_left).
hold_exit() {
  ((PRIMUS_ENTRY_STEP_SIGNAL && 10#$PRIMUS_STEP_TASKS > 1)) || return 0
  local grace left
  primus_entry_hold_left grace left
  [[ -n $left ]] || return 0
  entry_log INFO "the job goes on (only its step was signalled): this task exits when the" \
    "$grace s stop grace has passed on every node, in $left s (srun" \
    "--kill-on-bad-exit would kill the nodes still stopping)."
  sleep "$left"
}

# requeue_if_asked RC: task 0 requeues the job once when asked (slurm_stop.sh).
requeue_if_asked() {
  local reason said text
  primus_requeue_reason reason said "$1"
  [[ -n $reason ]] || return 0
  entry_log WARN "$said"
  text=$(primus_requeue_job "$reason") || entry_log ERROR "$text"
}

# fix_hostname: HOSTNAME exported by the submitting shell reaches every node
# of the job unchanged; take this node's own name (UTS namespace aware, no fork).
fix_hostname() {
  local name=""
  { read -r name </proc/sys/kernel/hostname; } 2>/dev/null || name=$(hostname 2>/dev/null) || name=""
  [[ -n $name ]] || return 0
  HOSTNAME=$name
}

main() {
  fix_hostname
  parse_args "$@"
  ((PRIMUS_ENTRY_DEBUG)) && export PRIMUS_LOG_LEVEL=DEBUG
  [[ ${PRIMUS_DRY_RUN:-0} == 1 ]] && PRIMUS_ENTRY_DRY_RUN=1
  mode_args_have --dry-run && PRIMUS_ENTRY_DRY_RUN=1
  # Until the launcher's log file exists, the console is copied to a spool
  # (a dry run writes nothing).
  if ((PRIMUS_ENTRY_DRY_RUN == 0)); then
    primus_log_spool_start
    # An entry that stops before any launcher ran leaves no spool behind.
    trap 'primus_log_spool_drop; primus_log_prelude_remove' EXIT
  fi
  primus_step_plan
  find_first_host
  log_step
  # The mode honours config slurm.dry_run / slurm.debug (runner/lib/mode_config.sh).
  export PRIMUS_RUNNER_DIR PRIMUS_VIA_SLURM_ENTRY=1
  build_command
  if ((PRIMUS_ENTRY_DRY_RUN)); then
    exec "${PRIMUS_LAUNCH_CMD[@]}"
  fi
  run_launcher
}

main "$@"
