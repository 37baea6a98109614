#!/usr/bin/env bash
# Usage: primus-cli direct [options] [--] <workload args...>
# Summary: launch on this host with torchrun
#
# Launch training on this host: resolve the distributed environment, load the environment
# layers, run hooks and patches, apply --env, validate everything, then start the workload
# with its own interpreter (torchrun, or one process per node in run mode single), logged.
#
# Options:
#   --config FILE           config file (over ~/.primus.yaml and runner/.primus.yaml)
#   --debug                 debug logging (PRIMUS_LOG_LEVEL=DEBUG)
#   --dry-run               print the configuration and the final command; run
#                           nothing and write nothing (hooks get PRIMUS_DRY_RUN=1);
#                           a missing interpreter, torch or script is a note (the
#                           node checks it when the launch starts), not a failure
#   --single                run mode single: one process per node, no torchrun
#                           (same as direct.run_mode: single; a hook's env.RUN_MODE wins)
#   --script FILE           training script (default: config direct.script,
#                           primus/cli/main.py; missing or unreadable -> exit 1)
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
# SIGTERM/SIGINT/SIGHUP stop the ranks (PRIMUS_KILL_GRACE, then SIGKILL), exit 128+N.
# PRIMUS_ON_FAILURE=restart (config direct.on_failure) restarts a hung, killed or
# stopped run within PRIMUS_RESTART_MAX; stop ends a hang with 86 (docs/restart-on-failure.md).
# Run mode: env RUN_MODE > --single > direct.run_mode > node_smoke -> single, else torchrun.
#
# Exit codes: 0 ok; 1 missing file or dependency; 2 invalid option, variable or
# configuration; 3 hook or patch failed; else the workload's own, or 128+N (signal N).
set -euo pipefail
PRIMUS_PHASE_MARKS="start=$EPOCHREALTIME"  # + each phase's end (primus_phase_mark, runner/lib/common.sh)

PRIMUS_CLI_DIR=${BASH_SOURCE[0]%/*}
[[ $PRIMUS_CLI_DIR != "${BASH_SOURCE[0]}" ]] || PRIMUS_CLI_DIR=.
# shellcheck source=runner/lib/common.sh
source "$PRIMUS_CLI_DIR/lib/common.sh"
primus_abs_path PRIMUS_CLI_DIR "$PRIMUS_CLI_DIR"
# shellcheck source=runner/lib/config.sh
source "$PRIMUS_CLI_DIR/lib/config.sh"
# shellcheck source=runner/lib/launch_start.sh
source "$PRIMUS_CLI_DIR/lib/launch_start.sh"
# shellcheck source=runner/lib/launch_helper.sh
source "$PRIMUS_CLI_DIR/lib/launch_helper.sh"
# shellcheck source=runner/lib/launch_log.sh
source "$PRIMUS_CLI_DIR/lib/launch_log.sh"
# shellcheck source=runner/lib/launch_env.sh
source "$PRIMUS_CLI_DIR/lib/launch_env.sh"
# shellcheck source=runner/lib/restart_loop.sh
source "$PRIMUS_CLI_DIR/lib/restart_loop.sh"
# Libraries needed once the helper answered: read while it starts (end of file).
# Started with SIGINT ignored (`cmd &` in a script): again, at its default.
primus_default_sigint "${BASH_SOURCE[0]}" "$@"

# ----------------------------------------------------------------- arguments

# PRIMUS_ globals only: a user's exported CONFIG or MODE keeps its value (README).
PRIMUS_OPT_CONFIG="" PRIMUS_OPT_DEBUG=0 PRIMUS_OPT_DRY_RUN=0 PRIMUS_OPT_SINGLE="" PRIMUS_OPT_SCRIPT=""
PRIMUS_OPT_LOG_FILE="" PRIMUS_OPT_NUMA="" PRIMUS_OPT_SILENT=0 PRIMUS_OPT_ACCELERATOR=""
PRIMUS_OPT_ALL_RANKS="" PRIMUS_OPT_NEURON_CORES="" PRIMUS_OPT_MODULE="" PRIMUS_OPT_PYTHON=""
PRIMUS_CLI_PATCHES=()    # --patch files
PRIMUS_WORKLOAD_ARGS=()  # everything after the options

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
      --config) need_value "$1" $#; PRIMUS_OPT_CONFIG=$2; shift 2 ;;
      --config=*) PRIMUS_OPT_CONFIG=${1#*=}; shift ;;
      --debug) PRIMUS_OPT_DEBUG=1; shift ;;
      --dry-run) PRIMUS_OPT_DRY_RUN=1; shift ;;
      --single) PRIMUS_OPT_SINGLE=1; shift ;;
      --script) need_value "$1" $#; PRIMUS_OPT_SCRIPT=$2; shift 2 ;;
      --module) need_value "$1" $#; PRIMUS_OPT_MODULE=$2; shift 2 ;;
      --python) need_value "$1" $#; PRIMUS_OPT_PYTHON=$2; shift 2 ;;
      --env) need_value "$1" $#; PRIMUS_CLI_ENV_ARGS+=("$2"); shift 2 ;;
      --verdict) need_value "$1" $#; PRIMUS_VERDICT=$2; PRIMUS_OPT_DRY_RUN=1; shift 2 ;;
      --patch) need_value "$1" $#; PRIMUS_CLI_PATCHES+=("$2"); shift 2 ;;
      --log_file | --log-file) need_value "$1" $#; PRIMUS_OPT_LOG_FILE=$2; shift 2 ;;
      --log-all-ranks) PRIMUS_OPT_ALL_RANKS=1; shift ;;
      --numa) PRIMUS_OPT_NUMA=1; shift ;;
      --no-numa) PRIMUS_OPT_NUMA=0; shift ;;
      --neuron-cores-per-proc) need_value "$1" $#; PRIMUS_OPT_NEURON_CORES=$2; shift 2 ;;
      --silent) PRIMUS_OPT_SILENT=1; shift ;;
      --accelerator) need_value "$1" $#; PRIMUS_OPT_ACCELERATOR=$2; shift 2 ;;
      --) shift; PRIMUS_WORKLOAD_ARGS=("$@"); return ;;
      -*) unknown_option "$1" ;;
      *) PRIMUS_WORKLOAD_ARGS=("$@"); return ;;
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
  local all
  [[ $PRIMUS_OPT_DEBUG != 1 ]] || export PRIMUS_LOG_LEVEL=DEBUG  # PRIMUS_NUMA_BIND: the helper's (launch/numa.py)
  setting all "$PRIMUS_OPT_ALL_RANKS" direct.log_all_ranks 0
  PRIMUS_LAUNCH_ALL_RANKS=$all
  setting PRIMUS_LAUNCH_LOG "$PRIMUS_OPT_LOG_FILE" direct.log_file ""
  if [[ -n $PRIMUS_LAUNCH_LOG && (-d $PRIMUS_LAUNCH_LOG || $PRIMUS_LAUNCH_LOG == */) ]]; then
    bad_usage "log file '$PRIMUS_LAUNCH_LOG' (--log_file / config direct.log_file) is a directory; accepted: a file path. Fix: --log_file ${PRIMUS_LAUNCH_LOG%/}/train.log, or leave it out for <workspace>/logs/primus-<UTC>-node<R>.log."
  fi
  PRIMUS_LAUNCH_WORKSPACE=${PRIMUS_WORKSPACE:-}
  [[ -n $PRIMUS_LAUNCH_WORKSPACE ]] || primus_config_get_into PRIMUS_LAUNCH_WORKSPACE direct.workspace ./output
  export PRIMUS_WORKSPACE=$PRIMUS_LAUNCH_WORKSPACE
  # config direct.env and --env came from the helper, already merged (cli records).
  local -a cfg_patch
  primus_config_get_list direct.patch cfg_patch
  PRIMUS_CLI_PATCHES=("${cfg_patch[@]}" "${PRIMUS_CLI_PATCHES[@]}")
  [[ -z $PRIMUS_OPT_ACCELERATOR ]] || export PRIMUS_ACCELERATOR=$PRIMUS_OPT_ACCELERATOR
  ((PRIMUS_OPT_DRY_RUN == 0)) || export PRIMUS_DRY_RUN=1
}

# --------------------------------------------------------------------- layers
load_layers() {
  local loader=$PRIMUS_CLI_DIR/helpers/envs/primus-env.sh
  primus_require_file "$loader" "environment layer loader"
  # The launcher validates the final environment itself (after hooks and --env).
  export PRIMUS_ENV_DEFER_VALIDATION=1
  local rc=0
  # shellcheck source=runner/helpers/envs/primus-env.sh
  source "$loader" -- "${PRIMUS_WORKLOAD_ARGS[@]}" || rc=$?
  ((rc == 0)) || exit "$rc"
}

# finish_layers: after the last --env, the steps that must see final values.
finish_layers() {
  primus_cli_env_note_origins
  ! declare -F primus_xla_apply_append >/dev/null || primus_xla_apply_append
  # The Neuron checks are env check's (primus_helper_env_check).
  ! declare -F primus_neuron_slices >/dev/null || primus_neuron_slices
}

# ------------------------------------------------------------------- command
# resolve_workload: after hooks and patches (a hook may emit env.RUN_MODE):
# the run mode, its environment, and the probe's answer about the interpreter.
resolve_workload() {
  primus_workload_run_mode "$PRIMUS_OPT_SINGLE" "${PRIMUS_WORKLOAD_ARGS[0]-}"
  [[ $PRIMUS_WL_RUN_MODE != single ]] || primus_workload_single_env
  primus_workload_jax_coordinator
}

# --------------------------------------------------------------------- logs
# default_log_file: <workspace>/logs/primus-<UTC>-node<R>.log
default_log_file() {
  primus_launch_log_default PRIMUS_LAUNCH_LOG "$PRIMUS_LAUNCH_WORKSPACE" "$NODE_RANK"
}

# claim_log_file: create PRIMUS_LAUNCH_LOG without overwriting anything, on a disk with
# space left (runner/lib/launch_log.sh).
claim_log_file() {
  local wanted=$PRIMUS_LAUNCH_LOG rc=0 full
  primus_launch_log_space full "$PRIMUS_LAUNCH_LOG" "$PRIMUS_LAUNCH_WORKSPACE" || primus_die "$PRIMUS_EXIT_INVALID" "$full"
  primus_launch_log_claim PRIMUS_LAUNCH_LOG || rc=$?
  case $rc in
    0) ;;
    1) primus_die "$PRIMUS_EXIT_INVALID" "cannot create the log directory '$PRIMUS_LAUNCH_LOG' for '$wanted'; pass --log_file with a writable path." ;;
    *) primus_die "$PRIMUS_EXIT_INVALID" "cannot create log file '$PRIMUS_LAUNCH_LOG'; pass --log_file with a writable path." ;;
  esac
  [[ $PRIMUS_LAUNCH_LOG == "$wanted" ]] || LOG_WARN "log file $wanted exists; writing to $PRIMUS_LAUNCH_LOG instead (nothing is overwritten)."
}

# on_launcher_exit: the EXIT trap. Stops the helper; once the log is known, lets
# the run monitor copy the output's last lines; a launch that ends before its log file
# was claimed (an early error, a failing hook, a signal) still leaves a log with
# everything the console showed, and one closing line.
# shellcheck disable=SC2329  # installed as the EXIT trap
on_launcher_exit() {
  local rc=$?
  primus_helper_stop
  [[ -z ${PRIMUS_OUT_R:-} ]] || { primus_watchdog_stop; primus_launch_log_flush; }
  # The helper's console descriptor is a copy of the spooled stderr.
  if [[ -n ${PRIMUS_CONSOLE_FD:-} ]]; then
    exec {PRIMUS_CONSOLE_FD}>&-
    PRIMUS_CONSOLE_FD=""
  fi
  primus_log_spool_active || return 0
  if ((PRIMUS_OPT_DRY_RUN == 1)); then
    primus_log_spool_drop
    return 0
  fi
  if [[ -z ${PRIMUS_LAUNCH_LOG:-} || -d ${PRIMUS_LAUNCH_LOG:-} || ${PRIMUS_LAUNCH_LOG:-} == */ ]]; then
    PRIMUS_LAUNCH_WORKSPACE=${PRIMUS_LAUNCH_WORKSPACE:-${PRIMUS_WORKSPACE:-./output}}
    NODE_RANK=${NODE_RANK:-0}
    default_log_file
  fi
  local why="stopped before the workload started"
  ((rc <= 128)) || why="interrupted by signal $((rc - 128)) before the workload started"
  if ! primus_launch_log_claim PRIMUS_LAUNCH_LOG; then
    primus_log_spool_drop
    LOG_ERROR "launch $why (exit code $rc); no log: '$PRIMUS_LAUNCH_LOG' cannot be created."
    return 0
  fi
  if ! primus_log_spool_into "$PRIMUS_LAUNCH_LOG"; then
    [[ -s $PRIMUS_LAUNCH_LOG ]] || rm -f -- "$PRIMUS_LAUNCH_LOG"  # claimed just now, empty: a full disk
    LOG_ERROR "launch $why (exit code $rc); no log: '$PRIMUS_LAUNCH_LOG' cannot be written (no space left on device?)."
    return 0
  fi
  local line
  if ((rc == 0)); then
    line="launch ended before the workload (exit code 0); log: $PRIMUS_LAUNCH_LOG"
    LOG_INFO "$line"
    LOG_INFO "$line" 2>>"$PRIMUS_LAUNCH_LOG" || true
  else
    line="launch $why (exit code $rc); log: $PRIMUS_LAUNCH_LOG"
    LOG_ERROR "$line"
    LOG_ERROR "$line" 2>>"$PRIMUS_LAUNCH_LOG" || true
  fi
}

# ------------------------------------------------------------------- running

# run_workload SUMMARY...: the run monitor (it copies the output from now on), the summary,
# PRIMUS_LAUNCH_CMD supervised (runner/lib/supervise.sh): exits with its code, or 128+N.
run_workload() {
  primus_run_prepare "$PRIMUS_WL_RUN_MODE" "$PRIMUS_LAUNCH_LOG" "$GPUS_PER_NODE"
  primus_launch_print_summary "$@"
  [[ -z ${PRIMUS_LAUNCH_RANK_DIR:-} ]] || export PRIMUS_RANK_LOG_DIR=$PRIMUS_LAUNCH_RANK_DIR
  primus_run_workload "${PRIMUS_LAUNCH_CMD[@]}"
}

# ---------------------------------------------------------------------- main

# main ARGS...: the options, the log spool and the traps; starts the helper.
main() {
  primus_notice_queue  # USR1/USR2 until supervise.sh's traps (after main)
  if [[ -n ${PRIMUS_CONTAINER_BYTES:-} ]]; then
    # Inside `primus-cli container`: bytes the runtime's JSON would have changed.
    local -a __primus_restored
    primus_container_bytes_restore __primus_restored "$@"
    set -- "${__primus_restored[@]}"
  fi
  parse_args "$@"
  # A secret given as --env NAME=VALUE leaves this process's argv: start again
  # with --env NAME and the value in the environment (docs/configuration.md "Configuration").
  local -a __primus_argv_clean
  if primus_secret_env_args __primus_argv_clean $(($# - ${#PRIMUS_WORKLOAD_ARGS[@]})) "$@"; then
    exec "$BASH" "${BASH_SOURCE[0]}" "${__primus_argv_clean[@]}"
  fi
  primus_require_python
  primus_restart_loop_enter "$PRIMUS_OPT_DRY_RUN" "${BASH_SOURCE[0]}" "$@"  # PRIMUS_ON_FAILURE: the closed loop
  # Until the log file is known, the console is copied to a spool (not in a
  # dry run, which writes nothing); every exit path leaves the log.
  # --silent, as upstream Primus: the launcher's own stdout too goes only to
  # the log; warnings and errors stay on stderr (a dry run still prints).
  ((PRIMUS_OPT_SILENT == 0 || PRIMUS_OPT_DRY_RUN == 1)) || exec >/dev/null
  ((PRIMUS_OPT_DRY_RUN == 1)) || primus_log_spool_start
  trap on_launcher_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  # The helper's findings reach the console and the log: stderr, as every
  # launcher line; env check's report is the command's own output (stdout).
  if [[ -n $PRIMUS_VERDICT ]]; then exec {PRIMUS_CONSOLE_FD}>&1; else exec {PRIMUS_CONSOLE_FD}>&2; fi
  # --neuron-cores-per-proc K is PRIMUS_NEURON_CORES_PER_PROC; the helper checks
  # it (with PRIMUS_KILL_GRACE and PRIMUS_HOOK_TIMEOUT) at its first step.
  [[ -z $PRIMUS_OPT_NEURON_CORES ]] || export PRIMUS_NEURON_CORES_PER_PROC=$PRIMUS_OPT_NEURON_CORES
  ((PRIMUS_OPT_DRY_RUN == 0)) || export PRIMUS_DRY_RUN=1  # the helper loads less (no socket)
  primus_helper_start "$PRIMUS_CONSOLE_FD" "$PRIMUS_OPT_CONFIG" "$PRIMUS_OPT_ACCELERATOR" "$PRIMUS_OPT_NUMA" \
    "${PRIMUS_WORKLOAD_ARGS[@]}"
}

# launch: everything after the helper's start (main, then the later libraries).
launch() {
  primus_hook_runner_preload "${PRIMUS_WORKLOAD_ARGS[0]-}" "${PRIMUS_WORKLOAD_ARGS[1]-}"  # while Python starts
  primus_helper_prepared
  primus_mode_config_flags direct PRIMUS_OPT_DRY_RUN PRIMUS_OPT_DEBUG  # main./direct.dry_run, debug
  primus_restart_loop_config "$PRIMUS_OPT_DRY_RUN"  # direct.on_failure: the closed loop
  ((PRIMUS_OPT_DRY_RUN == 0)) || export PRIMUS_DRY_RUN=1  # before the workload checks: notes then
  # Under the Slurm entry: the stop grace and why (python/primus_runner/scheduler/stop_grace.py).
  [[ $PRIMUS_OPT_DRY_RUN == 1 || -z ${PRIMUS_PREPARE_NOTE[PRIMUS_KILL_GRACE]-} ]] ||
    LOG_INFO "${PRIMUS_PREPARE_NOTE[PRIMUS_KILL_GRACE]}"
  primus_venv_activate
  # Later values from user input come as records that note their names: the
  # secret names are the helper's list of the inherited ones and the noted
  # ones, or one listing after a VENV_ACTIVATE script ran (runner/lib/secrets.sh).
  if [[ -n ${VENV_ACTIVATE:-} ]]; then primus_secret_scan_freeze; else primus_secret_scan_freeze_known; fi
  # env check (--verdict, runner/primus-cli-env-check.sh) needs no workload.
  [[ -n $PRIMUS_VERDICT ]] || primus_workload_python_pick "$PRIMUS_OPT_PYTHON"
  [[ -n $PRIMUS_VERDICT ]] || primus_workload_entry "$PRIMUS_OPT_SCRIPT" "$PRIMUS_OPT_MODULE"
  [[ -n $PRIMUS_VERDICT ]] || primus_workload_probe_start
  resolve_settings
  primus_cli_env_apply
  primus_phase_mark plan
  load_layers
  primus_cli_env_apply
  primus_phase_mark layers
  primus_hooks_run "$PRIMUS_OPT_DRY_RUN" "${PRIMUS_WORKLOAD_ARGS[@]}"
  primus_helper_hook_inputs  # unless the hook runner read them (launch_hooks.sh)
  primus_hooks_run_patches "$PRIMUS_OPT_DRY_RUN" "${PRIMUS_CLI_PATCHES[@]}"
  primus_cli_env_apply
  primus_phase_mark hooks
  finish_layers
  resolve_workload
  if [[ ${PRIMUS_SKIP_MAIN_LAUNCH:-0} == 1 ]]; then
    LOG_INFO "PRIMUS_SKIP_MAIN_LAUNCH=1 (set by a hook): stopping after hooks, nothing launched."
    exit 0
  fi
  primus_helper_env_check
  primus_phase_mark verdict
  exec {PRIMUS_CONSOLE_FD}>&-
  PRIMUS_CONSOLE_FD=""
  local __primus_need_torch=0
  [[ $PRIMUS_WL_RUN_MODE != torchrun ]] || __primus_need_torch=1
  primus_workload_probe_finish "$__primus_need_torch"
  [[ -n $PRIMUS_LAUNCH_LOG ]] || default_log_file
  local __primus_recorder  # PyTorch's flight recorder on ROCm/CUDA (runner/lib/flight_recorder.sh)
  primus_flight_recorder_env __primus_recorder "$PRIMUS_LAUNCH_LOG"
  primus_launch_build_command
  if ((PRIMUS_OPT_DRY_RUN == 1)); then
    primus_launch_print_summary ${__primus_recorder:+"$__primus_recorder"} "dry run: nothing was started and nothing was written."
    exit 0
  fi
  claim_log_file
  primus_flight_recorder_env __primus_recorder "$PRIMUS_LAUNCH_LOG"
  [[ -z ${PRIMUS_LAUNCH_RANK_DIR:-} ]] || primus_launch_build_command
  primus_log_spool_into "$PRIMUS_LAUNCH_LOG" ||
    primus_die "$PRIMUS_EXIT_INVALID" "cannot write the log file '$PRIMUS_LAUNCH_LOG' (no space left on device, or not writable); nothing was started. Fix: free space there, or pass --log_file on another filesystem."
  primus_launch_log_tee "$PRIMUS_LAUNCH_LOG" "$PRIMUS_OPT_SILENT"
  run_workload ${__primus_recorder:+"$__primus_recorder"}
}

main "$@"
# The later libraries: read while Python starts (the helper's first records are
# the longest wait), at the top level (a function would make `declare` local).
# shellcheck source=runner/lib/supervise.sh
source "$PRIMUS_CLI_DIR/lib/supervise.sh"
primus_early_notice_traps
# shellcheck source=runner/lib/workload.sh
source "$PRIMUS_CLI_DIR/lib/workload.sh"
# shellcheck source=runner/lib/launch_hooks.sh
source "$PRIMUS_CLI_DIR/lib/launch_hooks.sh"
# shellcheck source=runner/lib/launch_command.sh
source "$PRIMUS_CLI_DIR/lib/launch_command.sh"
# shellcheck source=runner/lib/launch_summary.sh
source "$PRIMUS_CLI_DIR/lib/launch_summary.sh"
# shellcheck source=runner/lib/venv_activate.sh
source "$PRIMUS_CLI_DIR/lib/venv_activate.sh"
# shellcheck source=runner/lib/mode_config.sh
source "$PRIMUS_CLI_DIR/lib/mode_config.sh"
launch
