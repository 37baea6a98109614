#!/usr/bin/env bash
# Usage: primus-cli slurm [OPTIONS] [srun|sbatch] [SLURM FLAGS] -- [direct|container]
#                         [MODE OPTIONS] [-- WORKLOAD ARGS]
# Summary: build and run srun/sbatch for all nodes; its doctor and stacks run on every node
#
# Build and run the Slurm call that starts runner/primus-cli-slurm-entry.sh on
# every node of the allocation, one task per node (docs/run-under-slurm.md "The `slurm` mode").
#   srun (default)  srun SLURM FLAGS ... primus-cli-slurm-entry.sh MODE ...
#   sbatch          sbatch SLURM FLAGS with a batch script (given on stdin, so
#                   Slurm spools its own copy) whose body runs
#                   srun ... primus-cli-slurm-entry.sh MODE ... on every node
#
# Options (before `--`; anywhere among the Slurm flags):
#   --dry-run        print the exact srun/sbatch call (and the batch script),
#                    then the command node 0 would run (the entry in dry-run
#                    with the Slurm variables of node 0 simulated); run nothing
#   --debug          debug logging here and on the nodes
#   --config FILE    configuration file (also handed to every node)
#   --srun-native    several tasks per node: one worker per Slurm task, no
#                    torchrun (config slurm.srun_native); give --ntasks-per-node=N
#   --spare-nodes N  sbatch: N nodes more than -N asks for; the job's steps
#                    use -N nodes, and with PRIMUS_ON_FAILURE=restart a step
#                    restarted without a failed node takes a spare one
#                    (docs/restart-on-failure.md)
#   -h, --help       this text
# `primus-cli slurm stacks JOBID`: the stacks of every rank of a running job
# (runner/primus-cli-slurm-stacks.sh --help).
#
# Slurm flags are passed through unchanged. The configuration (`slurm:` in
# runner/.primus.yaml, ~/.primus.yaml, --config FILE) fills only what the flags
# do not give, whatever their spelling (-N 4, -N4, --nodes 4, --nodes=4):
#   slurm.nodes -> --nodes, slurm.time -> --time (-t), slurm.partition ->
#   --partition (-p), slurm.gpus_per_node -> --gpus-per-node,
#   slurm.mode -> the mode when none is named after `--` (direct|container;
#   default container, as upstream; `-- preflight` = `-- container -- preflight`),
#   slurm.signal -> --signal (e.g. USR1@120: SIGUSR1 to every step 120 s
#   before the time limit; the launcher passes it on to every rank),
#   slurm.requeue: true -> --requeue (sbatch only; the entry then also requeues
#   after a preemption notice followed by a clean exit).
# Added unless given: --ntasks-per-node=1 (not when --ntasks/-n is given) and,
# for srun, --kill-on-bad-exit=1 (one failing node ends the step instead of
# leaving the others waiting at the rendezvous).
# srun runs as a child of runner/helpers/srun_parent.sh, which this script
# becomes: SIGTERM/SIGHUP to it reach every task of the step as that signal
# (scancel --signal), so the ranks get the stop grace (srun itself would
# SIGKILL them); SIGINT/SIGUSR1/SIGUSR2 are passed to srun. After a stop it
# says srun's exit status and exits with it.
# PRIMUS_RUNNER_DIR (this runner/ directory, absolute) is exported and written
# into the batch script, so the spooled copy finds the runner.
#
# `primus-cli slurm doctor ...` checks every node instead (slurm doctor --help).
# Examples:
#   primus-cli slurm srun -N 2 -- direct -- preflight
#   primus-cli slurm sbatch --nodes=4 -t 01:00:00 -o train-%j.out -- direct \
#       --env NCCL_DEBUG=INFO -- train pretrain --config exp.yaml
#
# Exit codes: 0 ok; 1 srun/sbatch or a runner file missing; 2 invalid
# arguments or configuration; otherwise the status of the node whose launcher
# ended first (docs/exit-codes.md "Exit codes": 2 refused, 3 a hook failed, the workload's
# own code...), not srun's highest, which is that of the nodes srun's
# --kill-on-bad-exit ended after it (137); srun's or sbatch's own status when
# no node reported one (143 after a SIGTERM that stopped the ranks).
set -euo pipefail

PRIMUS_SLURM_RUNNER_DIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
export PRIMUS_RUNNER_DIR=$PRIMUS_SLURM_RUNNER_DIR
# shellcheck source=runner/lib/common.sh
source "$PRIMUS_SLURM_RUNNER_DIR/lib/common.sh"
# shellcheck source=runner/lib/config.sh
source "$PRIMUS_SLURM_RUNNER_DIR/lib/config.sh"
# shellcheck source=runner/lib/mode_words.sh
source "$PRIMUS_SLURM_RUNNER_DIR/lib/mode_words.sh"
# shellcheck source=runner/lib/mode_config.sh
source "$PRIMUS_SLURM_RUNNER_DIR/lib/mode_config.sh"
# shellcheck source=runner/lib/slurm_commands.sh
source "$PRIMUS_SLURM_RUNNER_DIR/lib/slurm_commands.sh"
# shellcheck source=runner/lib/slurm_dry_run.sh
source "$PRIMUS_SLURM_RUNNER_DIR/lib/slurm_dry_run.sh"

PRIMUS_OPT_DRY_RUN=0
PRIMUS_OPT_DEBUG=0
PRIMUS_OPT_CONFIG=""
PRIMUS_OPT_SRUN_NATIVE=""
PRIMUS_LAUNCHER=srun
PRIMUS_SLURM_FLAGS=()    # the user's Slurm flags, unchanged
PRIMUS_ADDED_FLAGS=()    # flags filled from the configuration or defaults
PRIMUS_AFTER=()          # everything after the first `--`
PRIMUS_SLURM_MODE=""
PRIMUS_SLURM_MODE_ARGS=()      # mode options and `-- workload args`
# shellcheck disable=SC2034 # read by runner/lib/slurm_commands.sh and slurm_dry_run.sh
PRIMUS_SLURM_INNER=()    # the batch script's own srun flags
PRIMUS_REQUEUE=0         # the job is submitted requeueable on purpose (slurm.requeue)
PRIMUS_SPARE_NODES=0     # --spare-nodes: nodes more than the steps use (the restart loop's)
# Node 0's simulated step for --dry-run (runner/lib/slurm_dry_run.sh).
# shellcheck disable=SC2034
PRIMUS_SIM_NODES="" PRIMUS_SIM_NODELIST="" PRIMUS_SIM_TPN="" PRIMUS_SIM_TASKS="" PRIMUS_SIM_PLACEHOLDER=0
PRIMUS_SIM_ERROR=()      # why the step cannot be simulated, and the usage message

usage() {
  primus_usage "${BASH_SOURCE[0]}"
}

bad_usage() {
  LOG_ERROR "$*"
  echo "Run 'primus-cli slurm --help' for usage." >&2
  exit "$PRIMUS_EXIT_INVALID"
}

# ---------------------------------------------------------------- arguments

parse_args() {
  local seen_launcher=0
  while (($#)); do
    case $1 in
      -h | --help)
        usage
        exit 0
        ;;
      --dry-run) PRIMUS_OPT_DRY_RUN=1 ;;
      --debug) PRIMUS_OPT_DEBUG=1 ;;
      --srun-native) PRIMUS_OPT_SRUN_NATIVE=1 ;;
      --spare-nodes)
        (($# >= 2)) || bad_usage "option --spare-nodes needs a node count, e.g. --spare-nodes 1."
        export PRIMUS_SLURM_SPARE_NODES=$2
        shift
        ;;
      --spare-nodes=*) export PRIMUS_SLURM_SPARE_NODES=${1#--spare-nodes=} ;;
      --config)
        (($# >= 2)) || bad_usage "option --config needs a FILE, e.g. --config exp.yaml."
        PRIMUS_OPT_CONFIG=$2
        shift
        ;;
      --config=*) PRIMUS_OPT_CONFIG=${1#--config=} ;;
      srun | sbatch)
        if ((seen_launcher || ${#PRIMUS_SLURM_FLAGS[@]})); then
          bad_usage "'$1' must come first, before the Slurm flags: primus-cli slurm $1 ${PRIMUS_SLURM_FLAGS[*]} -- ..."
        fi
        PRIMUS_LAUNCHER=$1
        seen_launcher=1
        ;;
      --)
        shift
        PRIMUS_AFTER=("$@")
        return 0
        ;;
      *)
        PRIMUS_SLURM_FLAGS+=("$1")
        ;;
    esac
    shift
  done
  bad_usage "missing '--' and the mode; e.g. primus-cli slurm $PRIMUS_LAUNCHER -N 2 -- direct -- preflight"
}

# split_after: PRIMUS_AFTER = [direct|container] [mode options] [-- workload args];
# no mode word: slurm.mode (default container), and a first word that is not
# an option starts the workload (runner/lib/mode_words.sh, upstream's forms).
split_after() {
  ((${#PRIMUS_AFTER[@]})) || bad_usage "nothing after '--'; e.g. primus-cli slurm $PRIMUS_LAUNCHER -N 2 -- direct -- preflight"
  # A word close to a mode name is a mistyped mode (upstream Primus would run it
  # as the container's workload); any other word starts the workload.
  local hint="" first=${PRIMUS_AFTER[0]-}
  if [[ -n $first && $first != -* ]] && ! primus_is_one_of "$first" "${PRIMUS_NODE_MODES[@]}"; then
    primus_did_you_mean hint "$first" "${PRIMUS_NODE_MODES[@]}"
  fi
  local accepted
  printf -v accepted '%s or ' "${PRIMUS_NODE_MODES[@]}"
  [[ -z $hint ]] || bad_usage "'$first' after '--' is not a mode; accepted: ${accepted% or }$hint"
  primus_mode_words_split "${PRIMUS_AFTER[@]}"
  PRIMUS_SLURM_MODE=$PRIMUS_MODE_WORD
  PRIMUS_SLURM_MODE_ARGS=("${PRIMUS_MODE_ARGS[@]}")
}

# ----------------------------------------------------------- configuration

# plan: one Python step (python/primus_runner/launch/slurm_submit.py) reads
# the configuration and decides what the user's Slurm flags leave to it: the
# flags it adds (config slurm.* for what the flags do not give, then
# --ntasks-per-node=1 and, for srun, --kill-on-bad-exit=1), the batch script's
# srun flags, the mode, srun-native, requeue and node 0's simulated step.
plan() {
  if [[ -n $PRIMUS_OPT_CONFIG ]]; then
    [[ -f $PRIMUS_OPT_CONFIG ]] || primus_die "$PRIMUS_EXIT_MISSING" "config file '$PRIMUS_OPT_CONFIG' (--config) not found."
    PRIMUS_OPT_CONFIG=$(cd "$(dirname -- "$PRIMUS_OPT_CONFIG")" && printf '%s/%s' "$(pwd)" "$(basename -- "$PRIMUS_OPT_CONFIG")")
  fi
  primus_config_read_records on_plan_record < <(primus_python slurm-plan "$PRIMUS_LAUNCHER" "$PRIMUS_OPT_CONFIG" \
    "$PRIMUS_SLURM_MODE" "$PRIMUS_OPT_SRUN_NATIVE" -- "${PRIMUS_SLURM_FLAGS[@]}")
  # bash >= 5.1: $! is the process substitution; wait returns its status.
  local rc=0
  wait "$!" || rc=$?
  [[ $rc == 0 ]] || primus_die "$rc" "could not load the configuration (see the error above)."
}

# on_plan_record KIND KEY VALUE: one of the plan's records (its header says which).
on_plan_record() {
  case $1 in
    added) PRIMUS_ADDED_FLAGS+=("$2") ;;
    inner) PRIMUS_SLURM_INNER+=("$2") ;;
    set | sim) printf -v "$2" '%s' "$3" ;;
    sim-error) PRIMUS_SIM_ERROR=("$2" "$3") ;;
    warn) LOG_WARN "$2" ;;
    usage-error) bad_usage "$2" ;;
    *) LOG_WARN "ignoring unknown record kind '$1' from slurm-plan" ;;
  esac
}

# hide_secrets: a secret given to the mode as --env NAME=VALUE must not be on
# srun's argv nor in the spooled batch script: its value travels in srun's /
# sbatch's environment (their --export, default ALL; sbatch(1)) and the entry
# gets --env NAME. A --export list gets the names added; --export=NONE cannot
# carry them.
PRIMUS_MOVED_ENV_NAMES=()
hide_secrets() {
  # direct: its options end at the first `--`; container: its options, `--`,
  # the inner direct's options, then `--` and the workload.
  local count=${#PRIMUS_SLURM_MODE_ARGS[@]} i seen=0 wanted=1
  [[ $PRIMUS_SLURM_MODE != container ]] || wanted=2
  for ((i = 0; i < ${#PRIMUS_SLURM_MODE_ARGS[@]}; i++)); do
    [[ ${PRIMUS_SLURM_MODE_ARGS[i]} == -- ]] || continue
    seen=$((seen + 1))
    if ((seen == wanted)); then
      count=$i
      break
    fi
  done
  local -a clean
  primus_secret_env_args clean "$count" "${PRIMUS_SLURM_MODE_ARGS[@]}" || return 0
  PRIMUS_SLURM_MODE_ARGS=("${clean[@]}")
  PRIMUS_MOVED_ENV_NAMES=("${PRIMUS_SECRET_MOVED[@]}")
  local flag value names
  names=$(IFS=,; printf '%s' "${PRIMUS_MOVED_ENV_NAMES[*]}")
  for ((i = 0; i < ${#PRIMUS_SLURM_FLAGS[@]}; i++)); do
    flag=${PRIMUS_SLURM_FLAGS[i]}
    case $flag in
      --export=*) value=${flag#--export=} ;;
      --export) value=${PRIMUS_SLURM_FLAGS[i + 1]-} ;;
      *) continue ;;
    esac
    case ${value^^} in
      ALL | ALL,*) ;;
      NONE | NIL)
        bad_usage "--export=$value cannot carry ${names//,/, } (given with --env): Slurm takes no variables with NONE." \
          "Fix: --export=ALL, or list them: --export=$names,..., or export them and drop --env." ;;
      *)
        if [[ $flag == --export ]]; then
          PRIMUS_SLURM_FLAGS[i + 1]=$value,$names
        else
          PRIMUS_SLURM_FLAGS[i]=--export=$value,$names
        fi ;;
    esac
  done
}

# The srun/sbatch calls: runner/lib/slurm_commands.sh; the dry run:
# runner/lib/slurm_dry_run.sh.

# ------------------------------------------------------------------- main

main() {
  # `primus-cli slurm stacks JOBID`: runner/primus-cli-slurm-stacks.sh.
  [[ ${1:-} != stacks ]] || exec "$BASH" "$PRIMUS_SLURM_RUNNER_DIR/primus-cli-slurm-stacks.sh" "${@:2}"
  local __primus_w # `slurm doctor`: its own entry
  for __primus_w in "$@"; do case $__primus_w in --debug | --dry-run) ;; doctor) exec "$BASH" "$PRIMUS_SLURM_RUNNER_DIR/primus-cli-slurm-doctor.sh" "$@" ;; *) break ;; esac; done
  parse_args "$@"
  [[ ${PRIMUS_DRY_RUN:-0} == 1 ]] && PRIMUS_OPT_DRY_RUN=1
  ((PRIMUS_OPT_DEBUG)) && export PRIMUS_LOG_LEVEL=DEBUG
  split_after
  plan
  primus_mode_config_flags slurm PRIMUS_OPT_DRY_RUN PRIMUS_OPT_DEBUG  # main./slurm.dry_run, debug
  ((PRIMUS_OPT_DEBUG == 0)) || export PRIMUS_LOG_LEVEL=DEBUG
  hide_secrets
  if [[ $PRIMUS_LAUNCHER == sbatch ]]; then
    primus_slurm_build_sbatch
  else
    primus_slurm_build_srun
  fi
  if ((PRIMUS_OPT_DRY_RUN)); then
    primus_slurm_print_dry_run
    exit 0
  fi
  primus_require_command "$PRIMUS_LAUNCHER" "Install the Slurm client (Debian: apt-get install slurm-client) or run on a Slurm login node."
  local __primus_quoted
  primus_slurm_secrets_note
  primus_slurm_shown_words __primus_quoted "${PRIMUS_SLURM_CMD[@]}"
  LOG_INFO "running: $__primus_quoted"
  if [[ $PRIMUS_LAUNCHER == sbatch ]]; then
    exec "${PRIMUS_SLURM_CMD[@]}" <<<"$PRIMUS_BATCH_SCRIPT"
  fi
  # srun stays a child of runner/helpers/srun_parent.sh (srun's words on its
  # command line): a SIGTERM must reach the ranks as one (runner/lib/slurm_srun.sh).
  exec "$BASH" "$PRIMUS_SLURM_RUNNER_DIR/helpers/srun_parent.sh" "${PRIMUS_SLURM_CMD[@]}"
}

main "$@"
