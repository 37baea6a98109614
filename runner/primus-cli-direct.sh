#!/usr/bin/env bash
# Usage: primus-cli direct [options] [--] <workload args...>
#
# Launch training on this host: resolve the distributed environment, load the
# environment layers, run hooks and patches, apply --env, validate everything,
# then start the workload with its own interpreter (torchrun, or one process per
# node in run mode single), teeing output to a log file.
#
# Options:
#   --config FILE           config file (over ~/.primus.yaml and runner/.primus.yaml)
#   --debug                 debug logging (PRIMUS_LOG_LEVEL=DEBUG)
#   --dry-run               print the configuration and the final command; run
#                           nothing and write nothing (hooks get PRIMUS_DRY_RUN=1)
#   --single                run mode single: one process per node, no torchrun
#                           (same as direct.run_mode: single; a hook's env.RUN_MODE wins)
#   --script FILE           training script (default: config direct.script,
#                           primus/cli/main.py; missing or unreadable -> exit 1,
#                           nothing runs)
#   --module NAME           run `python -m NAME` instead of a script (direct.module);
#                           the built-in CPU workload is --module primus_runner
#   --python PATH           the workload's interpreter (default: PRIMUS_WORKLOAD_PYTHON,
#                           config direct.python, else python3 on PATH: an activated
#                           venv or conda env); torchrun is `PATH runner/helpers/
#                           torchrun_quiet.py` (torch.distributed.run without its
#                           traceback on a stop; PRIMUS_TORCHRUN replaces it)
#   --env KEY=VALUE|FILE|NAME
#                           export KEY=VALUE for the job (repeatable; beats every
#                           other source). FILE: shell-style KEY=VALUE lines
#                           ($VAR, ${VAR:-x} expanded, quotes stripped, '#'
#                           comments; $(...) and backticks refused, never run);
#                           NAME: the value NAME has in the environment. A
#                           secret NAME=VALUE (*_TOKEN, *_API_KEY, ...) is moved
#                           off the command line: the launcher restarts itself
#                           with --env NAME and the value in its environment
#   --patch FILE            run a patch script after the hooks (repeatable)
#   --log_file PATH         log file (default <workspace>/logs/primus-<UTC>-node<R>.log);
#                           an existing file is never overwritten
#   --log-all-ranks         every local rank echoes to the console (default: only
#                           node 0's first and the last node's last local rank);
#                           either way every rank's output is kept at
#                           <log file without .log>.ranks/rank-<RANK>.log
#   --numa | --no-numa      bind each local rank to its device's NUMA node (or not)
#   --neuron-cores-per-proc K
#                           give each local process its own NEURON_RT_VISIBLE_CORES
#                           slice of K logical NeuronCores (K > 1: SPMD workloads
#                           only, XLA_USE_SPMD=1 or PRIMUS_NEURON_SPMD=1)
#   --silent                the workload's and the launcher's output only to the
#                           log file; warnings and errors still on stderr
#   --accelerator A         auto|rocm|cuda|neuron|cpu (sets PRIMUS_ACCELERATOR)
#   -h, --help              this help
#
# Everything after `--` reaches the workload verbatim, whatever it starts with.
# SIGTERM/SIGINT/SIGHUP stop the ranks (PRIMUS_KILL_GRACE, then SIGKILL), exit
# 128+N; SIGINT works even when the launcher started with it ignored (`cmd &`).
# Run mode: env RUN_MODE > --single > direct.run_mode > node_smoke -> single,
# else torchrun.
#
# Exit codes: 0 ok; 1 missing file or dependency; 2 invalid option, variable or
# configuration; 3 hook or patch failed; otherwise the workload's own code;
# 128+N when the launcher was stopped by signal N.
set -euo pipefail

RUNNER_DIR=${BASH_SOURCE[0]%/*}
[[ $RUNNER_DIR != "${BASH_SOURCE[0]}" ]] || RUNNER_DIR=.
# shellcheck source=runner/lib/common.sh
source "$RUNNER_DIR/lib/common.sh"
primus_abs_path RUNNER_DIR "$RUNNER_DIR"
# shellcheck source=runner/lib/config.sh
source "$RUNNER_DIR/lib/config.sh"
# shellcheck source=runner/lib/launch_start.sh
source "$RUNNER_DIR/lib/launch_start.sh"
# shellcheck source=runner/lib/launch_helper.sh
source "$RUNNER_DIR/lib/launch_helper.sh"
# shellcheck source=runner/lib/launch_log.sh
source "$RUNNER_DIR/lib/launch_log.sh"
# shellcheck source=runner/lib/launch_env.sh
source "$RUNNER_DIR/lib/launch_env.sh"
# Libraries needed once the helper answered: read while it starts (end of file).
# Started with SIGINT ignored (`cmd &` in a script): again, at its default.
primus_default_sigint "${BASH_SOURCE[0]}" "$@"

# ----------------------------------------------------------------- arguments

OPT_CONFIG="" OPT_DEBUG=0 OPT_DRY_RUN=0 OPT_SINGLE="" OPT_SCRIPT="" OPT_LOG_FILE=""
OPT_NUMA="" OPT_SILENT=0 OPT_ACCELERATOR="" OPT_ALL_RANKS="" OPT_NEURON_CORES=""
OPT_MODULE="" OPT_PYTHON=""
CLI_PATCHES=()  # --patch files
WORKLOAD=()     # everything after the options

usage() {
  primus_usage "${BASH_SOURCE[0]}"
}

bad_usage() {
  primus_bad_usage "primus-cli direct" "$1"
}

# unknown_option WORD: exit 2 naming WORD, with the closest option of --help.
unknown_option() {
  local -a known
  local hint
  primus_help_options known "${BASH_SOURCE[0]}"
  primus_did_you_mean hint "${1%%=*}" "${known[@]}"
  bad_usage "unknown option '$1' for 'primus-cli direct'${hint:-;} options go before '--', workload arguments after it."
}

# need_value OPTION COUNT: OPTION takes a value; COUNT is how many args remain.
need_value() {
  primus_need_value "primus-cli direct" "$1" "$2"
}

parse_args() {
  while (($# > 0)); do
    case $1 in
      -h | --help) usage; exit 0 ;;
      --config) need_value "$1" $#; OPT_CONFIG=$2; shift 2 ;;
      --config=*) OPT_CONFIG=${1#*=}; shift ;;
      --debug) OPT_DEBUG=1; shift ;;
      --dry-run) OPT_DRY_RUN=1; shift ;;
      --single) OPT_SINGLE=1; shift ;;
      --script) need_value "$1" $#; OPT_SCRIPT=$2; shift 2 ;;
      --module) need_value "$1" $#; OPT_MODULE=$2; shift 2 ;;
      --python) need_value "$1" $#; OPT_PYTHON=$2; shift 2 ;;
      --env) need_value "$1" $#; PRIMUS_CLI_ENV_ARGS+=("$2"); shift 2 ;;
      --verdict) need_value "$1" $#; PRIMUS_VERDICT=$2; OPT_DRY_RUN=1; shift 2 ;;
      --patch) need_value "$1" $#; CLI_PATCHES+=("$2"); shift 2 ;;
      --log_file | --log-file) need_value "$1" $#; OPT_LOG_FILE=$2; shift 2 ;;
      --log-all-ranks) OPT_ALL_RANKS=1; shift ;;
      --numa) OPT_NUMA=1; shift ;;
      --no-numa) OPT_NUMA=0; shift ;;
      --neuron-cores-per-proc) need_value "$1" $#; OPT_NEURON_CORES=$2; shift 2 ;;
      --silent) OPT_SILENT=1; shift ;;
      --accelerator) need_value "$1" $#; OPT_ACCELERATOR=$2; shift 2 ;;
      --) shift; WORKLOAD=("$@"); return ;;
      -*) unknown_option "$1" ;;
      *) WORKLOAD=("$@"); return ;;
    esac
  done
}

# ------------------------------------------------------------------ settings

# setting VAR CLI_VALUE CONFIG_KEY DEFAULT: CLI flag > config > DEFAULT.
setting() {
  local value=$2
  [[ -n $value ]] || primus_config_get_into value "$3" "$4"
  printf -v "$1" '%s' "$value"
}

resolve_settings() {
  local numa all
  primus_mode_config_flags direct OPT_DRY_RUN OPT_DEBUG  # main./direct.dry_run, debug
  [[ $OPT_DEBUG != 1 ]] || export PRIMUS_LOG_LEVEL=DEBUG
  primus_config_get_into numa direct.numa ""
  primus_numa_decide "$OPT_NUMA" "$numa"  # runner/lib/numa_decision.sh
  setting all "$OPT_ALL_RANKS" direct.log_all_ranks 0
  ALL_RANKS=$all
  setting LOG_FILE "$OPT_LOG_FILE" direct.log_file ""
  if [[ -n $LOG_FILE && (-d $LOG_FILE || $LOG_FILE == */) ]]; then
    bad_usage "log file '$LOG_FILE' (--log_file / config direct.log_file) is a directory; accepted: a file path. Fix: --log_file ${LOG_FILE%/}/train.log, or leave it out for <workspace>/logs/primus-<UTC>-node<R>.log."
  fi
  WORKSPACE=${PRIMUS_WORKSPACE:-}
  [[ -n $WORKSPACE ]] || primus_config_get_into WORKSPACE direct.workspace ./output
  export PRIMUS_WORKSPACE=$WORKSPACE
  # config direct.env and --env came from the helper, already merged (cli records).
  local -a cfg_patch
  primus_config_get_list direct.patch cfg_patch
  CLI_PATCHES=("${cfg_patch[@]}" "${CLI_PATCHES[@]}")
  [[ -z $OPT_ACCELERATOR ]] || export PRIMUS_ACCELERATOR=$OPT_ACCELERATOR
  ((OPT_DRY_RUN == 0)) || export PRIMUS_DRY_RUN=1
}

# --------------------------------------------------------------------- layers

load_layers() {
  local loader=$RUNNER_DIR/helpers/envs/primus-env.sh
  primus_require_file "$loader" "environment layer loader"
  # The launcher validates the final environment itself (after hooks and --env).
  export PRIMUS_ENV_DEFER_VALIDATION=1
  local rc=0
  # shellcheck source=runner/helpers/envs/primus-env.sh
  source "$loader" -- "${WORKLOAD[@]}" || rc=$?
  ((rc == 0)) || exit "$rc"
}

# finish_layers: after the last --env, the steps that must see final values.
finish_layers() {
  primus_cli_env_note_origins
  if declare -F primus_xla_apply_append >/dev/null; then
    primus_xla_apply_append
  fi
  if declare -F primus_neuron_slices >/dev/null; then
    primus_neuron_slices  # the Neuron checks are env check's (primus_helper_env_check)
  fi
}

# ------------------------------------------------------------------- command

# resolve_workload: after hooks and patches (a hook may emit env.RUN_MODE):
# the run mode, its environment, and the probe's answer about the interpreter.
resolve_workload() {
  primus_workload_run_mode "$OPT_SINGLE" "${WORKLOAD[0]-}"
  if [[ $PRIMUS_WL_RUN_MODE == single ]]; then
    primus_workload_single_env
  fi
  primus_workload_jax_coordinator
}

# --------------------------------------------------------------------- logs

# default_log_file: <workspace>/logs/primus-<UTC>-node<R>.log
default_log_file() {
  primus_launch_log_default LOG_FILE "$WORKSPACE" "$NODE_RANK"
}

# claim_log_file: create LOG_FILE without overwriting anything, on a disk with
# space left (runner/lib/launch_log.sh; issue 27 item 6).
claim_log_file() {
  local wanted=$LOG_FILE rc=0 full
  primus_launch_log_space full "$LOG_FILE" "$WORKSPACE" || primus_die "$PRIMUS_EXIT_INVALID" "$full"
  primus_launch_log_claim LOG_FILE || rc=$?
  case $rc in
    0) ;;
    1) primus_die "$PRIMUS_EXIT_INVALID" "cannot create the log directory '$LOG_FILE' for '$wanted'; pass --log_file with a writable path." ;;
    *) primus_die "$PRIMUS_EXIT_INVALID" "cannot create log file '$LOG_FILE'; pass --log_file with a writable path." ;;
  esac
  [[ $LOG_FILE == "$wanted" ]] || LOG_WARN "log file $wanted exists; writing to $LOG_FILE instead (nothing is overwritten)."
}

# on_launcher_exit: the EXIT trap. Stops the helper; a launch that ends before
# its log file was claimed (an early error, a failing hook, a signal) still
# leaves a log with everything the console showed, and one closing line.
# shellcheck disable=SC2329  # installed as the EXIT trap
on_launcher_exit() {
  local rc=$?
  primus_helper_stop
  # The helper's console descriptor is a copy of the spooled stderr.
  if [[ -n ${CONSOLE_FD:-} ]]; then
    exec {CONSOLE_FD}>&-
    CONSOLE_FD=""
  fi
  primus_log_spool_active || return 0
  if ((OPT_DRY_RUN == 1)); then
    primus_log_spool_drop
    return 0
  fi
  if [[ -z ${LOG_FILE:-} || -d ${LOG_FILE:-} || ${LOG_FILE:-} == */ ]]; then
    WORKSPACE=${WORKSPACE:-${PRIMUS_WORKSPACE:-./output}}
    NODE_RANK=${NODE_RANK:-0}
    default_log_file
  fi
  local why="stopped before the workload started"
  ((rc <= 128)) || why="interrupted by signal $((rc - 128)) before the workload started"
  if ! primus_launch_log_claim LOG_FILE; then
    primus_log_spool_drop
    LOG_ERROR "launch $why (exit code $rc); no log: '$LOG_FILE' cannot be created."
    return 0
  fi
  if ! primus_log_spool_into "$LOG_FILE"; then
    [[ -s $LOG_FILE ]] || rm -f -- "$LOG_FILE"  # claimed just now, empty: a full disk
    LOG_ERROR "launch $why (exit code $rc); no log: '$LOG_FILE' cannot be written (no space left on device?)."
    return 0
  fi
  local line
  if ((rc == 0)); then
    line="launch ended before the workload (exit code 0); log: $LOG_FILE"
    LOG_INFO "$line"
    LOG_INFO "$line" 2>>"$LOG_FILE" || true
  else
    line="launch $why (exit code $rc); log: $LOG_FILE"
    LOG_ERROR "$line"
    LOG_ERROR "$line" 2>>"$LOG_FILE" || true
  fi
}

# The summary: runner/lib/launch_summary.sh.

# ------------------------------------------------------------------- running

# run_workload: start LAUNCH_CMD and supervise it (runner/lib/supervise.sh);
# exits with the workload's code, or 128+N when stopped by signal N.
run_workload() {
  PRIMUS_SUPERVISE_CLEANUP=primus_launch_log_flush
  local nproc=$GPUS_PER_NODE
  [[ $PRIMUS_WL_RUN_MODE != single ]] || nproc=1
  [[ -z ${RANK_LOG_DIR:-} ]] || export PRIMUS_RANK_LOG_DIR=$RANK_LOG_DIR
  primus_run_workload "$PRIMUS_WL_RUN_MODE" "$LOG_FILE" "$nproc" "${LAUNCH_CMD[@]}"
}

# ---------------------------------------------------------------------- main

# main ARGS...: the options, the log spool and the traps; starts the helper.
main() {
  primus_notice_queue  # USR1/USR2 until supervise.sh's traps (after main)
  if [[ -n ${PRIMUS_CONTAINER_BYTES:-} ]]; then
    # Inside `primus-cli container`: bytes the runtime's JSON would have changed.
    local -a restored
    primus_container_bytes_restore restored "$@"
    set -- "${restored[@]}"
  fi
  parse_args "$@"
  # A secret given as --env NAME=VALUE leaves this process's argv: start again
  # with --env NAME and the value in the environment (SPEC section 3).
  local -a argv_clean
  if primus_secret_env_args argv_clean $(($# - ${#WORKLOAD[@]})) "$@"; then
    exec "$BASH" "${BASH_SOURCE[0]}" "${argv_clean[@]}"
  fi
  primus_require_python
  # Until the log file is known, the console is copied to a spool (not in a
  # dry run, which writes nothing); every exit path leaves the log.
  # --silent, as upstream Primus: the launcher's own stdout too goes only to
  # the log; warnings and errors stay on stderr (a dry run still prints).
  ((OPT_SILENT == 0 || OPT_DRY_RUN == 1)) || exec >/dev/null
  ((OPT_DRY_RUN == 1)) || primus_log_spool_start
  trap on_launcher_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  # The helper's findings reach the console and the log: stderr, as every
  # launcher line; env check's report is the command's own output (stdout).
  if [[ -n $PRIMUS_VERDICT ]]; then exec {CONSOLE_FD}>&1; else exec {CONSOLE_FD}>&2; fi
  # --neuron-cores-per-proc K is PRIMUS_NEURON_CORES_PER_PROC; the helper checks
  # it (with PRIMUS_KILL_GRACE and PRIMUS_HOOK_TIMEOUT) at its first step.
  [[ -z $OPT_NEURON_CORES ]] || export PRIMUS_NEURON_CORES_PER_PROC=$OPT_NEURON_CORES
  ((OPT_DRY_RUN == 0)) || export PRIMUS_DRY_RUN=1  # the helper loads less (no socket)
  primus_helper_start "$CONSOLE_FD" "$OPT_CONFIG" "$OPT_ACCELERATOR" "${WORKLOAD[@]}"
}

# launch: everything after the helper's start (main, then the later libraries).
launch() {
  primus_hook_runner_preload "${WORKLOAD[0]-}" "${WORKLOAD[1]-}"  # while Python starts
  primus_helper_prepared
  primus_venv_activate
  # Later values from user input come as records that note their names: the
  # secret names are the helper's list of the inherited ones and the noted
  # ones, or one listing after a VENV_ACTIVATE script ran (runner/lib/secrets.sh).
  if [[ -n ${VENV_ACTIVATE:-} ]]; then primus_secret_scan_freeze; else primus_secret_scan_freeze_known; fi
  # env check (--verdict, runner/primus-cli-env-check.sh) needs no workload.
  [[ -n $PRIMUS_VERDICT ]] || primus_workload_python_pick "$OPT_PYTHON"
  [[ -n $PRIMUS_VERDICT ]] || primus_workload_entry "$OPT_SCRIPT" "$OPT_MODULE"
  [[ -n $PRIMUS_VERDICT ]] || primus_workload_probe_start
  resolve_settings
  primus_cli_env_apply
  load_layers
  primus_cli_env_apply
  primus_hooks_run "$OPT_DRY_RUN" "${WORKLOAD[@]}"
  primus_helper_hook_inputs  # unless the hook runner read them (launch_hooks.sh)
  primus_hooks_run_patches "$OPT_DRY_RUN" "${CLI_PATCHES[@]}"
  primus_cli_env_apply
  finish_layers
  resolve_workload
  if [[ ${PRIMUS_SKIP_MAIN_LAUNCH:-0} == 1 ]]; then
    LOG_INFO "PRIMUS_SKIP_MAIN_LAUNCH=1 (set by a hook): stopping after hooks, nothing launched."
    exit 0
  fi
  primus_helper_env_check
  exec {CONSOLE_FD}>&-
  CONSOLE_FD=""
  local need_torch=0
  [[ $PRIMUS_WL_RUN_MODE != torchrun ]] || need_torch=1
  primus_workload_probe_finish "$need_torch"
  [[ -n $LOG_FILE ]] || default_log_file
  local recorder  # issue 25: PyTorch's flight recorder on ROCm/CUDA (runner/lib/flight_recorder.sh)
  primus_flight_recorder_env recorder "$LOG_FILE"
  primus_launch_build_command
  if ((OPT_DRY_RUN == 1)); then
    primus_launch_print_summary ${recorder:+"$recorder"} "dry run: nothing was started and nothing was written."
    exit 0
  fi
  claim_log_file
  primus_flight_recorder_env recorder "$LOG_FILE"
  [[ -z ${RANK_LOG_DIR:-} ]] || primus_launch_build_command
  primus_log_spool_into "$LOG_FILE" ||
    primus_die "$PRIMUS_EXIT_INVALID" "cannot write the log file '$LOG_FILE' (no space left on device, or not writable); nothing was started. Fix: free space there, or pass --log_file on another filesystem."
  primus_launch_log_tee "$LOG_FILE" "$OPT_SILENT"
  primus_launch_print_summary ${recorder:+"$recorder"}
  run_workload
}

main "$@"
# The later libraries: read while Python starts (the helper's first records are
# the longest wait), at the top level (a function would make `declare` local).
# shellcheck source=runner/lib/supervise.sh
source "$RUNNER_DIR/lib/supervise.sh"
primus_early_notice_traps
# shellcheck source=runner/lib/workload.sh
source "$RUNNER_DIR/lib/workload.sh"
# shellcheck source=runner/lib/launch_hooks.sh
source "$RUNNER_DIR/lib/launch_hooks.sh"
# shellcheck source=runner/lib/launch_command.sh
source "$RUNNER_DIR/lib/launch_command.sh"
# shellcheck source=runner/lib/launch_summary.sh
source "$RUNNER_DIR/lib/launch_summary.sh"
# shellcheck source=runner/lib/venv_activate.sh
source "$RUNNER_DIR/lib/venv_activate.sh"
# shellcheck source=runner/lib/numa_decision.sh
source "$RUNNER_DIR/lib/numa_decision.sh"
# shellcheck source=runner/lib/mode_config.sh
source "$RUNNER_DIR/lib/mode_config.sh"
launch
