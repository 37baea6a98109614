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
#                           primus/cli/main.py; missing -> exit 1, nothing runs)
#   --module NAME           run `python -m NAME` instead of a script (direct.module);
#                           the built-in CPU workload is --module primus_runner
#   --python PATH           the workload's interpreter (default: PRIMUS_WORKLOAD_PYTHON,
#                           config direct.python, else python3 on PATH: an activated
#                           venv or conda env); torchrun is `PATH -m torch.distributed.run`
#   --env KEY=VALUE|FILE|NAME
#                           export KEY=VALUE for the job (repeatable; beats every
#                           other source). FILE: KEY=VALUE lines, '#' comments;
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
#   --silent                workload output only to the log file, not the console
#   --accelerator A         auto|rocm|cuda|neuron|cpu (sets PRIMUS_ACCELERATOR)
#   -h, --help              this help
#
# Everything after `--` reaches the workload verbatim, whatever it starts with.
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
# shellcheck source=runner/lib/supervise.sh
source "$RUNNER_DIR/lib/supervise.sh"
# shellcheck source=runner/lib/workload.sh
source "$RUNNER_DIR/lib/workload.sh"

# ----------------------------------------------------------------- arguments

OPT_CONFIG="" OPT_DEBUG=0 OPT_DRY_RUN=0 OPT_SINGLE="" OPT_SCRIPT="" OPT_LOG_FILE=""
OPT_NUMA="" OPT_SILENT=0 OPT_ACCELERATOR="" OPT_ALL_RANKS="" OPT_NEURON_CORES=""
OPT_MODULE="" OPT_PYTHON=""
CLI_ENV=()      # KEY=VALUE items from --env, in order
CLI_PATCHES=()  # --patch files
WORKLOAD=()     # everything after the options

usage() {
  primus_usage "${BASH_SOURCE[0]}"
}

bad_usage() {
  primus_bad_usage "primus-cli direct" "$1"
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
      --env) need_value "$1" $#; add_cli_env "$2"; shift 2 ;;
      --patch) need_value "$1" $#; CLI_PATCHES+=("$2"); shift 2 ;;
      --log_file | --log-file) need_value "$1" $#; OPT_LOG_FILE=$2; shift 2 ;;
      --log-all-ranks) OPT_ALL_RANKS=1; shift ;;
      --numa) OPT_NUMA=1; shift ;;
      --no-numa) OPT_NUMA=0; shift ;;
      --neuron-cores-per-proc) need_value "$1" $#; OPT_NEURON_CORES=$2; shift 2 ;;
      --silent) OPT_SILENT=1; shift ;;
      --accelerator) need_value "$1" $#; OPT_ACCELERATOR=$2; shift 2 ;;
      --) shift; WORKLOAD=("$@"); return ;;
      -*) bad_usage "unknown option '$1' for 'primus-cli direct'; options go before '--', workload arguments after it." ;;
      *) WORKLOAD=("$@"); return ;;
    esac
  done
}

# add_cli_env ITEM: ITEM is KEY=VALUE, or a file of KEY=VALUE lines, or NAME.
add_cli_env() {
  local item=$1
  if [[ $item != *=* ]]; then
    if [[ -f $item ]]; then
      read_env_file "$item"
    elif [[ $item =~ ^[A-Za-z_][A-Za-z0-9_]*$ && -n ${!item+set} ]]; then
      # --env NAME: the value NAME has in the environment (how primus-cli
      # container hands values in without putting them on an argv).
      CLI_ENV+=("$item=${!item}")
    else
      bad_usage "--env '$item' is neither KEY=VALUE, an existing file, nor a variable set in the environment; write --env KEY=VALUE or --env path/to/file.env."
    fi
    return
  fi
  check_env_item "$item" "--env"
  CLI_ENV+=("$item")
}

# check_env_item KEY=VALUE WHERE: the key must be a valid variable name.
check_env_item() {
  local key=${1%%=*}
  [[ $key =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] ||
    bad_usage "$2 '$key' is not a valid variable name; accepted: letters, digits and '_', not starting with a digit."
}

# read_env_file FILE: the KEY=VALUE items of an env file, as the one parser
# (python/primus_runner/envfile.py: '#' comments, optional 'export ', literal
# values) reads them; a bad file is exit 2 naming the line, as every mode.
read_env_file() {
  local item rc=0
  local -a items=()
  primus_pick_python
  mapfile -d '' -t items < <(PYTHONPATH="$PRIMUS_ROOT/python" "$PRIMUS_PYTHON" -m primus_runner.envfile "$1")
  wait "$!" || rc=$?
  if ((rc != 0)); then
    # A parser that did not run must not read as an empty file.
    LOG_ERROR "--env file $1: the parser ($PRIMUS_PYTHON -m primus_runner.envfile) failed with exit $rc; nothing was started."
    exit "$PRIMUS_EXIT_MISSING"
  fi
  if [[ ${items[0]:-} =~ ^!([0-9]+)\ (.*)$ ]]; then
    LOG_ERROR "${BASH_REMATCH[2]}"
    exit "${BASH_REMATCH[1]}"
  fi
  for item in "${items[@]}"; do
    CLI_ENV+=("$item")
  done
}

# ------------------------------------------------------------ prepare (Python)

declare -A PREPARE_NOTE=()  # note records: where a value came from, for the summary

# on_prepare_record KIND KEY VALUE: handler for non-config records.
# shellcheck disable=SC2329  # called by primus_config_read_records
on_prepare_record() {
  case $1 in
    env)
      printf -v "$2" '%s' "$3"
      export "${2?}"
      ;;
    note) PREPARE_NOTE[$2]=$3 PREPARE_NOTE[$2=]=${!2-} ;;
    *) LOG_WARN "ignoring unknown record kind '$1' from launch prepare" ;;
  esac
}

# The launch helper: ONE Python process (`launch serve`, a coprocess) first
# resolves config, ranks and device/NIC detection, then reads the experiment
# config while this shell sources the layers (read_hook_inputs), loads the
# variable registry while this shell runs the hooks, and finally
# checks the final environment (run_env_check). One interpreter start instead
# of two, and the registry loads on the other core (SPEC section 10).
HELPER_PID=""
# `python -m primus_runner` without runpy (whose imports cost ms of every launch).
readonly HELPER_MAIN='import sys; from primus_runner.cli import main; sys.exit(main(sys.argv[1:]))'

# experiment_config VAR: VAR = the FILE of `train pretrain ... --config FILE`
# (the last one, as the hook reads it), '' for other workloads. The helper
# finds out whether that config names a framework at all (launch.py).
experiment_config() {
  local -n __primus_exp=$1
  __primus_exp=""
  [[ ${WORKLOAD[0]:-} == train && ${WORKLOAD[1]:-} == pretrain ]] || return 0
  local i word
  for ((i = 2; i < ${#WORKLOAD[@]}; i++)); do
    word=${WORKLOAD[i]}
    case $word in
      --config=*) __primus_exp=${word#--config=} ;;
      --config) __primus_exp=${WORKLOAD[i + 1]:-}; i=$((i + 1)) ;;
    esac
  done
}

start_launch_helper() {
  local -a args=(launch serve --console-fd "$CONSOLE_FD")
  [[ -n $OPT_CONFIG ]] && args+=(--config "$OPT_CONFIG")
  [[ -n $OPT_ACCELERATOR ]] && args+=(--accelerator "$OPT_ACCELERATOR")
  local experiment
  experiment_config experiment
  # Only this launch's helper says so (never an inherited value).
  unset PRIMUS_EXPERIMENT_NO_FRAMEWORK PRIMUS_EXPERIMENT_REQUIRED
  # exec: the coprocess IS the helper, so stopping it (an early exit) stops
  # Python too, which would otherwise hold the spooled console open.
  coproc LAUNCH_HELPER {
    PRIMUS_EXPERIMENT_CONFIG=$experiment PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
      exec "$PRIMUS_PYTHON" -c "$HELPER_MAIN" "${args[@]}"
  }
  HELPER_PID=$LAUNCH_HELPER_PID
  HELPER_IN=${LAUNCH_HELPER[1]} HELPER_OUT=${LAUNCH_HELPER[0]}
}

# stop_launch_helper: never leave the helper waiting (exit paths, errors).
# shellcheck disable=SC2329  # installed as the EXIT trap
stop_launch_helper() {
  [[ -n $HELPER_PID ]] || return 0
  kill "$HELPER_PID" 2>/dev/null || true
  HELPER_PID=""
}

# finish_launch_helper: the helper has exited; its status is the step's.
finish_launch_helper() {
  local rc=0
  wait "$HELPER_PID" 2>/dev/null || rc=$?
  HELPER_PID=""
  return "$rc"
}

# read_helper_records UNTIL HANDLER: hand the helper's kind/key/value records
# to HANDLER up to its UNTIL record; a helper that ends before it ends the launch
# with its status (3 when it exited 0).
read_helper_records() {
  local until=$1 handler=$2 kind key value
  while IFS= read -r -d '' kind <&"$HELPER_OUT" && IFS= read -r -d '' key <&"$HELPER_OUT" &&
    IFS= read -r -d '' value <&"$HELPER_OUT"; do
    [[ $kind != "$until" ]] || return 0
    "$handler" "$kind" "$key" "$value"
  done
  local rc=0
  finish_launch_helper || rc=$?
  exit "$((rc == 0 ? PRIMUS_EXIT_RUNTIME : rc))"
}

# store_prepare_record KIND KEY VALUE: a config value, else an env/note record.
# shellcheck disable=SC2329  # called through read_helper_records
store_prepare_record() {
  primus_config_store "$1" "$2" "$3" || on_prepare_record "$1" "$2" "$3"
}

# run_prepare: read the helper's records up to its `end` record.
run_prepare() {
  start_launch_helper
  declare -gA __PRIMUS_CONFIG_FILL=()
  read_helper_records end store_prepare_record
}

# read_hook_inputs: the helper's records the hooks need (the experiment
# config's framework), up to its `hooks` record; it wrote them while this
# shell sourced the layers.
read_hook_inputs() {
  read_helper_records hooks on_prepare_record
}

# ------------------------------------------------------------------ settings

# setting VAR CLI_VALUE CONFIG_KEY DEFAULT: CLI flag > config > DEFAULT.
setting() {
  local value=$2
  [[ -n $value ]] || primus_config_get_into value "$3" "$4"
  printf -v "$1" '%s' "$value"
}

resolve_settings() {
  local dry numa all
  primus_config_get_into dry main.dry_run 0
  ((OPT_DRY_RUN == 1)) || [[ $dry != 1 ]] || OPT_DRY_RUN=1
  [[ $OPT_DEBUG == 1 || ${PRIMUS_CONFIG[main.debug]:-0} == 1 ]] && export PRIMUS_LOG_LEVEL=DEBUG
  # --numa/--no-numa > config direct.numa (when set to true) > ENABLE_NUMA_BINDING.
  setting numa "$OPT_NUMA" direct.numa 0
  if [[ -z $OPT_NUMA && $numa != 1 && ${ENABLE_NUMA_BINDING:-0} == 1 ]]; then
    numa=1
  fi
  setting all "$OPT_ALL_RANKS" direct.log_all_ranks 0
  ALL_RANKS=$all
  if [[ $numa == 1 ]]; then
    export PRIMUS_NUMA_BIND=1
  else
    export PRIMUS_NUMA_BIND=0  # --no-numa also overrides an inherited value
  fi
  check_kill_grace
  setting LOG_FILE "$OPT_LOG_FILE" direct.log_file ""
  if [[ -n $LOG_FILE && (-d $LOG_FILE || $LOG_FILE == */) ]]; then
    bad_usage "log file '$LOG_FILE' (--log_file / config direct.log_file) is a directory; accepted: a file path. Fix: --log_file ${LOG_FILE%/}/train.log, or leave it out for <workspace>/logs/primus-<UTC>-node<R>.log."
  fi
  WORKSPACE=${PRIMUS_WORKSPACE:-}
  [[ -n $WORKSPACE ]] || primus_config_get_into WORKSPACE direct.workspace ./output
  export PRIMUS_WORKSPACE=$WORKSPACE
  local -a cfg_env cfg_patch
  primus_config_get_list direct.env cfg_env
  primus_config_get_list direct.patch cfg_patch
  local item
  for item in "${cfg_env[@]}"; do
    [[ $item == *=* ]] || bad_usage "config direct.env item '$item' has no '='; write KEY=VALUE."
    check_env_item "$item" "config direct.env"
  done
  # Config env first, so a --env of the same name wins.
  CLI_ENV=("${cfg_env[@]}" "${CLI_ENV[@]}")
  CLI_PATCHES=("${cfg_patch[@]}" "${CLI_PATCHES[@]}")
  [[ -z $OPT_ACCELERATOR ]] || export PRIMUS_ACCELERATOR=$OPT_ACCELERATOR
  ((OPT_DRY_RUN == 0)) || export PRIMUS_DRY_RUN=1
  resolve_neuron_cores
}

# check_kill_grace: PRIMUS_KILL_GRACE reaches shell arithmetic; only digits pass.
check_kill_grace() {
  [[ -z ${PRIMUS_KILL_GRACE:-} || $PRIMUS_KILL_GRACE =~ ^[0-9]{1,5}$ ]] ||
    bad_usage "PRIMUS_KILL_GRACE='$PRIMUS_KILL_GRACE' is not a whole number of seconds; accepted: 0 to 99999 (default 10)."
}

resolve_neuron_cores() {
  [[ -n $OPT_NEURON_CORES ]] || return 0
  if [[ ! $OPT_NEURON_CORES =~ ^[0-9]+$ ]] || ((10#$OPT_NEURON_CORES < 1)); then
    bad_usage "--neuron-cores-per-proc '$OPT_NEURON_CORES' is not a positive whole number; accepted: 1 or more logical NeuronCores per process."
  fi
  export PRIMUS_NEURON_CORES_PER_PROC=$((10#$OPT_NEURON_CORES))
}

# apply_cli_env: export every --env / direct.env item (values are data).
apply_cli_env() {
  local item
  for item in "${CLI_ENV[@]}"; do
    printf -v "${item%%=*}" '%s' "${item#*=}"
    export "${item%%=*}"
    [[ ${item%%=*} != XLA_FLAGS ]] || export PRIMUS_XLA_FLAGS_OWNED=1
  done
}

# note_cli_origins: tell env show where the --env values came from.
note_cli_origins() {
  local item
  for item in "${CLI_ENV[@]}"; do
    primus_env_note_origin "${item%%=*}" cli
  done
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
  note_cli_origins
  if declare -F primus_xla_apply_append >/dev/null; then
    primus_xla_apply_append
  fi
  if declare -F primus_neuron_slices >/dev/null; then
    primus_neuron_slices  # the Neuron checks are env check's (run_env_check)
  fi
}

# ------------------------------------------------------------ hooks, patches

EXTRA_ARGS=()

# on_hook_record KIND NAME VALUE: env -> export, extra -> --name value.
on_hook_record() {
  case $1 in
    env)
      printf -v "$2" '%s' "$3"
      export "${2?}"
      primus_env_note_origin "$2" hook
      ;;
    extra) EXTRA_ARGS+=("--$2" "$3") ;;
    *) LOG_WARN "ignoring unknown hook record kind '$1'" ;;
  esac
}

# read_hook_records: NUL records kind\0name\0value\0 on stdin.
read_hook_records() {
  local kind name value
  while IFS= read -r -d '' kind && IFS= read -r -d '' name && IFS= read -r -d '' value; do
    on_hook_record "$kind" "$name" "$value"
  done
}

# run_protocol_script SCRIPT ARGS...: run a hook/patch runner, apply its records.
run_protocol_script() {
  local -a cmd=("$@")
  ((OPT_DRY_RUN == 0)) || cmd=("$1" --dry-run "${@:2}")
  read_hook_records < <("${cmd[@]}")
  local rc=0
  wait "$!" || rc=$?
  ((rc == 0)) || exit "$rc"
}

run_hooks() {
  local runner=$RUNNER_DIR/helpers/execute_hooks.sh
  primus_require_file "$runner" "hook runner"
  # group and name are the first two workload words (with fewer, empty ones:
  # only the global hooks run), handed over as option values; the workload
  # words follow `--` as data, whatever they start with.
  run_protocol_script "$runner" --group "${WORKLOAD[0]-}" --name "${WORKLOAD[1]-}" -- "${WORKLOAD[@]:2}"
}

run_patches() {
  ((${#CLI_PATCHES[@]} > 0)) || return 0
  local runner=$RUNNER_DIR/helpers/execute_patches.sh patch
  primus_require_file "$runner" "patch runner"
  for patch in "${CLI_PATCHES[@]}"; do
    primus_require_file "$patch" "patch (--patch / direct.patch)"
  done
  run_protocol_script "$runner" "${CLI_PATCHES[@]}"
}

# ----------------------------------------------------------------- validation

# run_env_check: hand the final environment to the launch helper for the
# registry's checks (env check); errors stop the launch with exit 2.
run_env_check() {
  if [[ ${PRIMUS_SKIP_VALIDATION:-0} == 1 ]]; then
    printf 'skip\0' >&"$HELPER_IN"
    finish_launch_helper || true
    LOG_WARN "PRIMUS_SKIP_VALIDATION=1: environment checks skipped; the launch may fail on the nodes instead of here."
    return 0
  fi
  {
    printf 'check\0%s\0' "${PRIMUS_ACCELERATOR:-}"
    command -p env -0
    printf '\0'
  } >&"$HELPER_IN"
  local kind="" value="" rc=0
  IFS= read -r -d '' kind <&"$HELPER_OUT" && IFS= read -r -d '' value <&"$HELPER_OUT" || true
  finish_launch_helper || rc=$?
  if [[ $kind == rc && $value =~ ^[0-9]+$ ]]; then
    rc=$value
  elif ((rc == 0)); then
    rc=$PRIMUS_EXIT_RUNTIME
  fi
  if ((rc != 0)); then
    LOG_ERROR "environment check failed (exit $rc): nothing was started. Fix the variables named above, or set PRIMUS_SKIP_VALIDATION=1 to launch anyway."
    exit "$rc"
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

# torchrun_command: PRIMUS_TORCHRUN, else the workload interpreter's own torchrun.
torchrun_command() {
  if [[ -n ${PRIMUS_TORCHRUN:-} ]]; then
    TORCHRUN_CMD=("$PRIMUS_TORCHRUN")
  else
    # torchrun_quiet.py runs torch.distributed.run unchanged, minus the
    # SignalException traceback torchrun prints on every stop.
    TORCHRUN_CMD=("$PRIMUS_WL_EXE" "$RUNNER_DIR/helpers/torchrun_quiet.py")
  fi
}

# console_filter: the local ranks whose output reaches the console.
console_filter() {
  local last=$((GPUS_PER_NODE - 1)) ranks=()
  ((NODE_RANK == 0)) && ranks+=(0)
  ((NODE_RANK == NNODES - 1)) && ((last != 0 || NODE_RANK != 0)) && ranks+=("$last")
  local IFS=,
  printf '%s' "${ranks[*]}"
}

build_command() {
  local -a script_cmd=("$PRIMUS_WL_EXE" "${PRIMUS_WL_ENTRY[@]}")
  if [[ $PRIMUS_WL_RUN_MODE == single ]]; then
    LAUNCH_CMD=("${script_cmd[@]}" "${WORKLOAD[@]}" "${EXTRA_ARGS[@]}")
    if [[ ${PRIMUS_NUMA_BIND:-0} == 1 ]]; then
      LAUNCH_CMD=("$RUNNER_DIR/helpers/numa_bind.sh" "${LOCAL_RANK:-0}" -- "${LAUNCH_CMD[@]}")
    fi
    return
  fi
  torchrun_command
  LAUNCH_CMD=("${TORCHRUN_CMD[@]}" --nproc_per_node "$GPUS_PER_NODE" --nnodes "$NNODES"
    --node_rank "$NODE_RANK" --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT")
  # Every rank's output is kept under <log>.ranks/ (run_worker.sh links it as
  # rank-<RANK>.log); torchrun's tee echoes it with a [default<N>]: prefix.
  RANK_LOG_DIR=${LOG_FILE%.log}.ranks
  LAUNCH_CMD+=(--log-dir "$RANK_LOG_DIR")
  if [[ $ALL_RANKS == 1 || $OPT_SILENT == 1 ]]; then
    LAUNCH_CMD+=(--tee 3)  # --silent: the launcher's stdout is the log file
  else
    local filter
    filter=$(console_filter)
    if [[ -n $filter ]]; then
      LAUNCH_CMD+=(--tee 3 --local-ranks-filter "$filter")
    else
      LAUNCH_CMD+=(--redirects 3)
    fi
  fi
  LAUNCH_CMD+=(--no-python "$RUNNER_DIR/helpers/run_worker.sh" "${script_cmd[@]}"
    "${WORKLOAD[@]}" "${EXTRA_ARGS[@]}")
}

# --------------------------------------------------------------------- logs

# default_log_file: <workspace>/logs/primus-<UTC>-node<R>.log
default_log_file() {
  local stamp
  TZ=UTC printf -v stamp '%(%Y%m%dT%H%M%SZ)T' -1
  LOG_FILE=$WORKSPACE/logs/primus-$stamp-node$NODE_RANK.log
}

# claim_log_file: create LOG_FILE without overwriting anything; when the name
# is taken, use name-1.log, name-2.log, ...
claim_log_file() {
  local base=${LOG_FILE%.log} candidate=$LOG_FILE n=0
  local log_dir
  primus_dir_of log_dir "$LOG_FILE"
  mkdir -p -- "$log_dir" ||
    primus_die "$PRIMUS_EXIT_INVALID" "cannot create the log directory for '$LOG_FILE'; pass --log_file with a writable path."
  until (set -o noclobber && : >"$candidate") 2>/dev/null; do
    [[ -e $candidate ]] || primus_die "$PRIMUS_EXIT_INVALID" "cannot create log file '$candidate'; pass --log_file with a writable path."
    n=$((n + 1))
    candidate=$base-$n.log
  done
  [[ $candidate == "$LOG_FILE" ]] || LOG_WARN "log file $LOG_FILE exists; writing to $candidate instead (nothing is overwritten)."
  LOG_FILE=$candidate
}

# tee_launcher_output: from now on, everything also goes to LOG_FILE. The
# tees ignore the signals that stop a run: a SIGTERM to the launcher's process
# group (timeout, kill -- -PGID) must not cut the stop's own lines; they end
# when the last writer closes.
tee_launcher_output() {
  exec 3>&1 4>&2
  if [[ $OPT_SILENT == 1 ]]; then
    # shellcheck disable=SC2094  # both only append to the log
    exec >>"$LOG_FILE" 2> >(trap '' INT TERM HUP USR1 USR2; exec tee -a "$LOG_FILE" >&4)
  else
    exec > >(trap '' INT TERM HUP USR1 USR2; exec tee -a "$LOG_FILE" >&3) \
      2> >(trap '' INT TERM HUP USR1 USR2; exec tee -a "$LOG_FILE" >&4)
  fi
  TEE_PID=$!
}

# flush_launcher_output: close the tees so every line is written before exit.
# shellcheck disable=SC2329  # run by primus_cleanup_run (PRIMUS_SUPERVISE_CLEANUP)
flush_launcher_output() {
  [[ -n ${TEE_PID:-} ]] || return 0
  exec 1>&3 2>&4
  wait "$TEE_PID" 2>/dev/null || true
  TEE_PID=""
}

# claim_early_log_file: claim_log_file for the exit path: false instead of dying.
# shellcheck disable=SC2329  # used by on_launcher_exit (the EXIT trap)
claim_early_log_file() {
  local base=${LOG_FILE%.log} candidate=$LOG_FILE n=0
  local log_dir
  primus_dir_of log_dir "$LOG_FILE"
  mkdir -p -- "$log_dir" 2>/dev/null || return 1
  until (set -o noclobber && : >"$candidate") 2>/dev/null; do
    [[ -e $candidate ]] || return 1
    n=$((n + 1))
    candidate=$base-$n.log
  done
  LOG_FILE=$candidate
}

# on_launcher_exit: the EXIT trap. Stops the helper; a launch that ends before
# its log file was claimed (an early error, a failing hook, a signal) still
# leaves a log with everything the console showed, and one closing line.
# shellcheck disable=SC2329  # installed as the EXIT trap
on_launcher_exit() {
  local rc=$?
  stop_launch_helper
  # The helper's console descriptor is a copy of the spooled stdout.
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
  if ! claim_early_log_file; then
    primus_log_spool_drop
    LOG_ERROR "launch $why (exit code $rc); no log: '$LOG_FILE' cannot be created."
    return 0
  fi
  primus_log_spool_into "$LOG_FILE"
  local line
  if ((rc == 0)); then
    line="launch ended before the workload (exit code 0); log: $LOG_FILE"
    LOG_INFO "$line"
    LOG_INFO "$line" >>"$LOG_FILE"
  else
    line="launch $why (exit code $rc); log: $LOG_FILE"
    LOG_ERROR "$line"
    LOG_ERROR "$line" 2>>"$LOG_FILE"
  fi
}

# ------------------------------------------------------------------- summary

# print_summary [LINE...]: the launch configuration and the command, plus any
# extra lines, in one log call (one masking pass).
print_summary() {
  # Where the process count came from, while nothing changed it since prepare.
  local count_from=""
  if [[ -n ${PREPARE_NOTE[GPUS_PER_NODE]-} && ${PREPARE_NOTE[GPUS_PER_NODE=]-} == "$GPUS_PER_NODE" ]]; then
    count_from=" (${PREPARE_NOTE[GPUS_PER_NODE]})"
  fi
  local -a lines=("launch configuration:"
    "  NNODES=$NNODES NODE_RANK=$NODE_RANK GPUS_PER_NODE=$GPUS_PER_NODE MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT"
    "  processes per node: $GPUS_PER_NODE$count_from"
    "  accelerator=${PRIMUS_ACCELERATOR:-auto} gpu_model=${PRIMUS_GPU_MODEL:-none} run_mode=$PRIMUS_WL_RUN_MODE ($PRIMUS_WL_RUN_MODE_ORIGIN)"
    "  python=$PRIMUS_WL_EXE ($PRIMUS_WL_PYTHON_ORIGIN) torch=${PRIMUS_WL_TORCH_VERSION:-none}${PRIMUS_WL_TORCH_PATH:+ ($PRIMUS_WL_TORCH_PATH)}"
    "  workspace=$WORKSPACE log_file=$LOG_FILE")
  local item shown
  for item in "${CLI_ENV[@]}"; do
    shown=$(primus_mask_value "${item%%=*}" "${item#*=}")
    # A newline or other control character is shown quoted ($'a\nb'): a raw
    # second line would look like a log line of its own.
    [[ $shown != *[[:cntrl:]]* ]] || printf -v shown '%q' "$shown"
    lines+=("  env ${item%%=*}=$shown")
  done
  local quoted
  printf -v quoted '%q ' "${LAUNCH_CMD[@]}"
  lines+=("command: ${quoted% }" "$@")
  local IFS=$'\n'
  LOG_INFO "${lines[*]}"
}

# ------------------------------------------------------------------- running

# run_workload: start LAUNCH_CMD and supervise it (runner/lib/supervise.sh);
# exits with the workload's code, or 128+N when stopped by signal N.
run_workload() {
  PRIMUS_SUPERVISE_CLEANUP=flush_launcher_output
  local nproc=$GPUS_PER_NODE
  [[ $PRIMUS_WL_RUN_MODE != single ]] || nproc=1
  [[ -z ${RANK_LOG_DIR:-} ]] || export PRIMUS_RANK_LOG_DIR=$RANK_LOG_DIR
  primus_run_workload "$PRIMUS_WL_RUN_MODE" "$LOG_FILE" "$nproc" "${LAUNCH_CMD[@]}"
}

# ---------------------------------------------------------------------- main

main() {
  primus_early_notice_traps
  parse_args "$@"
  # A secret given as --env NAME=VALUE leaves this process's argv: start again
  # with --env NAME and the value in the environment (SPEC section 3).
  local -a secret_free
  if primus_secret_env_args secret_free $(($# - ${#WORKLOAD[@]})) "$@"; then
    exec "$BASH" "${BASH_SOURCE[0]}" "${secret_free[@]}"
  fi
  primus_require_python
  # Until the log file is known, the console is copied to a spool (not in a
  # dry run, which writes nothing); every exit path leaves the log.
  ((OPT_DRY_RUN == 1)) || primus_log_spool_start
  trap on_launcher_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  exec {CONSOLE_FD}>&1  # the helper's findings reach the console and the log
  run_prepare
  primus_workload_python_pick "$OPT_PYTHON"
  primus_workload_probe_start
  resolve_settings
  primus_workload_entry "$OPT_SCRIPT" "$OPT_MODULE"
  apply_cli_env
  load_layers
  apply_cli_env
  read_hook_inputs
  run_hooks
  run_patches
  apply_cli_env
  finish_layers
  resolve_workload
  if [[ ${PRIMUS_SKIP_MAIN_LAUNCH:-0} == 1 ]]; then
    LOG_INFO "PRIMUS_SKIP_MAIN_LAUNCH=1 (set by a hook): stopping after hooks, nothing launched."
    exit 0
  fi
  run_env_check
  exec {CONSOLE_FD}>&-
  CONSOLE_FD=""
  local need_torch=0
  [[ $PRIMUS_WL_RUN_MODE != torchrun ]] || need_torch=1
  primus_workload_probe_finish "$need_torch"
  [[ -n $LOG_FILE ]] || default_log_file
  build_command
  if ((OPT_DRY_RUN == 1)); then
    print_summary "dry run: nothing was started and nothing was written."
    exit 0
  fi
  claim_log_file
  [[ -z ${RANK_LOG_DIR:-} ]] || build_command
  primus_log_spool_into "$LOG_FILE"
  tee_launcher_output
  print_summary
  run_workload
}

main "$@"
