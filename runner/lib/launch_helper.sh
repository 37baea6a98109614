# shellcheck shell=bash
# shellcheck disable=SC2034 # PRIMUS_PREPARE_NOTE and PRIMUS_HELPER_IN are read by the launcher
# runner/lib/launch_helper.sh: the direct launcher's one Python process.
# Sourced by runner/primus-cli-direct.sh; defines only primus_* / PRIMUS_*
# names and never changes shell options.
#
# The launch helper (`python -m primus_runner launch serve`, a coprocess) first
# resolves config, ranks and device/NIC detection, then reads the experiment
# config while the launcher sources the layers, loads the variable registry
# while the launcher runs the hooks, and finally checks the final environment.
# One interpreter start instead of two, and the registry loads on the other
# core (docs/run-on-one-node.md "Launch overhead"). Its stdout carries NUL records kind\0key\0value\0.
#
#   primus_helper_start CONSOLE_FD CONFIG ACCELERATOR NUMA [WORKLOAD...]   start it
#       (NUMA: 1 --numa, 0 --no-numa, '' neither; the helper decides the
#       binding, python/primus_runner/launch/numa.py)
#   primus_helper_prepared
#       take its records up to `end`: config values (config.sh),
#       env records (exported), note records (PRIMUS_PREPARE_NOTE: why a value
#       is what it is, e.g. GPUS_PER_NODE, PRIMUS_NUMA_BIND), cli records
#       (config direct.env and PRIMUS_CLI_ENV_ARGS, the raw --env arguments,
#       resolved by the helper: exported and added to PRIMUS_CLI_ENV)
#   primus_helper_hook_inputs   its records up to `hooks` (what the hooks need);
#   primus_helper_hook_inputs_here    the same, read by the hook runner
#   primus_helper_layer WHICH HANDLER
#                               a shell layer's values (neuron.sh: WHICH neuron,
#                               neuron-slices; python/primus_runner/launch/
#                               neuron_layer.py decides) for the exported
#                               environment: HANDLER KIND NAME VALUE per record;
#                               status 1 when no helper runs (a layer sourced by hand)
#   primus_helper_env_check     the registry's checks of the final environment;
#                               errors exit with the helper's code (2); with
#                               PRIMUS_VERDICT (env check) it always exits with it
#   primus_helper_stop          never leave it waiting (exit paths)
# A helper that ends before the record awaited ends the launch with its
# status (3 when it exited 0).

if [[ -n ${__PRIMUS_LAUNCH_HELPER_SH:-} ]]; then
  return 0
fi
__PRIMUS_LAUNCH_HELPER_SH=1

PRIMUS_HELPER_PID="" PRIMUS_HELPER_IN="" PRIMUS_HELPER_OUT="" __PRIMUS_HELPER_HOOKS_READ=0
# The raw --env arguments (KEY=VALUE, FILE or NAME); env check's options for
# the helper's verdict (PRIMUS_VERDICT, comma list; empty for a launch).
PRIMUS_CLI_ENV_ARGS=() PRIMUS_VERDICT=""
# note records: where a value came from (KEY), and the value it had then (KEY=).
declare -gA PRIMUS_PREPARE_NOTE=()
# `python -m primus_runner` without runpy (whose imports cost ms of every launch),
# started with -S: the site step (~5 ms) runs only when PyYAML or psutil is
# needed (python/primus_runner/sitepaths.py).
# The package next to this file, not $PRIMUS_ROOT/python: an inherited
# PRIMUS_ROOT may name another tree, and without the site step (-S) no
# installed copy of the package stands in.
__PRIMUS_HELPER_PACKAGE_DIR=""
primus_abs_path __PRIMUS_HELPER_PACKAGE_DIR "${BASH_SOURCE[0]%/*}/../../python"
readonly __PRIMUS_HELPER_PACKAGE_DIR
readonly __PRIMUS_HELPER_MAIN='import sys; from primus_runner.cli import main; sys.exit(main(sys.argv[1:]))'

# primus_helper_experiment VAR WORKLOAD...: VAR = the FILE of `train pretrain
# ... --config FILE` (the last one, as the hook reads it), '' for other
# workloads. The helper finds out whether that config names a framework.
primus_helper_experiment() {
  local -n __primus_exp=$1
  shift
  __primus_exp=""
  [[ ${1:-} == train && ${2:-} == pretrain ]] || return 0
  shift 2
  while (($# > 0)); do
    case $1 in
      --config=*) __primus_exp=${1#--config=} ;;
      --config) __primus_exp=${2:-}; (($# < 2)) || shift ;;
    esac
    shift
  done
}

# primus_helper_start CONSOLE_FD CONFIG ACCELERATOR NUMA [WORKLOAD...]
primus_helper_start() {
  # __primus_ locals: the helper reads the user's names (--env NAME) from its
  # environment, where a local of the same name would replace them.
  local -a __primus_args=(launch serve --console-fd "$1")
  [[ -z $2 ]] || __primus_args+=(--config "$2")
  [[ -z $3 ]] || __primus_args+=(--accelerator "$3")
  [[ -z $4 ]] || __primus_args+=(--numa "$4")
  # --env arguments reach the precedence step on stdin (never argv: secrets).
  local __primus_n_env=${#PRIMUS_CLI_ENV_ARGS[@]}
  ((__primus_n_env == 0)) || __primus_args+=(--cli-env-count "$__primus_n_env")
  [[ -z ${PRIMUS_VERDICT:-} ]] || __primus_args+=(--verdict "$PRIMUS_VERDICT")
  shift 4
  local __primus_experiment
  primus_helper_experiment __primus_experiment "$@"
  # Only this launch's helper says so (never an inherited value).
  unset PRIMUS_EXPERIMENT_NO_FRAMEWORK PRIMUS_EXPERIMENT_REQUIRED
  # exec: the coprocess IS the helper, so stopping it (an early exit) stops
  # Python too, which would otherwise hold the spooled console open.
  coproc PRIMUS_LAUNCH_HELPER {
    PRIMUS_EXPERIMENT_CONFIG=$__primus_experiment PYTHONPATH="$__PRIMUS_HELPER_PACKAGE_DIR${PYTHONPATH:+:$PYTHONPATH}" \
      exec "$PRIMUS_PYTHON" -S -c "$__PRIMUS_HELPER_MAIN" "${__primus_args[@]}"
  }
  # shellcheck disable=SC2154  # set by coproc
  PRIMUS_HELPER_PID=$PRIMUS_LAUNCH_HELPER_PID
  PRIMUS_HELPER_IN=${PRIMUS_LAUNCH_HELPER[1]} PRIMUS_HELPER_OUT=${PRIMUS_LAUNCH_HELPER[0]}
  if ((__primus_n_env > 0)); then
    # A helper that died already is reported by the record reader, not by SIGPIPE here.
    trap '' PIPE
    { printf '%s\0' "${PRIMUS_CLI_ENV_ARGS[@]}" "" >&"$PRIMUS_HELPER_IN"; } 2>/dev/null || true
    trap - PIPE
  fi
}

# primus_helper_stop: never leave the helper waiting (exit paths, errors).
primus_helper_stop() {
  [[ -n $PRIMUS_HELPER_PID ]] || return 0
  kill "$PRIMUS_HELPER_PID" 2>/dev/null || true
  PRIMUS_HELPER_PID=""
}

# primus_helper_finish: the helper has exited; its status is the step's.
primus_helper_finish() {
  local rc=0
  wait "$PRIMUS_HELPER_PID" 2>/dev/null || rc=$?
  PRIMUS_HELPER_PID=""
  return "$rc"
}

# primus_helper_read_records UNTIL HANDLER: hand the helper's records to
# HANDLER KIND KEY VALUE up to its UNTIL record; a helper that ends before it
# ends the launch with its status (3 when it exited 0, or when this is a
# subshell, which cannot wait for it).
primus_helper_read_records() {
  # __primus_ locals: a record may set any name (--env handler=x).
  local __primus_until=$1 __primus_handler=$2
  local -a __primus_rec
  # A helper that already ended (it said why on stderr) took its descriptors
  # with it: no "Bad file descriptor" after its message. mapfile, not read -d '':
  # in a UTF-8 locale bash's read takes a byte that is not UTF-8 and the NUL
  # after it as one character, and the records shift (bash 5.2).
  while { mapfile -n 3 -d '' -t __primus_rec <&"$PRIMUS_HELPER_OUT"; } 2>/dev/null && ((${#__primus_rec[@]} == 3)); do
    [[ ${__primus_rec[0]} != "$__primus_until" ]] || return 0
    "$__primus_handler" "${__primus_rec[@]}"
  done
  local __primus_rc=0
  if [[ $BASHPID == "$$" ]]; then
    primus_helper_finish || __primus_rc=$?
  else
    LOG_ERROR "the launch helper ended before its '$__primus_until' record (its message, if any, is above); nothing was started."
  fi
  exit "$((__primus_rc == 0 ? PRIMUS_EXIT_RUNTIME : __primus_rc))"
}

# primus_helper_on_record KIND KEY VALUE: env -> export, note -> PRIMUS_PREPARE_NOTE.
primus_helper_on_record() {
  case $1 in
    env)
      printf -v "$2" '%s' "$3"
      export "${2?}"
      primus_secret_note "$2"
      ;;
    note) PRIMUS_PREPARE_NOTE[$2]=$3 PRIMUS_PREPARE_NOTE[$2=]=${!2-} ;;
    cli)
      # config direct.env / --env, as the precedence step read them
      # (env/inputs.py): exported now, kept above layers and hooks.
      PRIMUS_CLI_ENV+=("$2=$3")
      printf -v "$2" '%s' "$3"
      export "${2?}"
      primus_secret_note "$2"
      ;;
    secret-names) primus_secret_known "$2" "$3" ;;
    *) LOG_WARN "ignoring unknown record kind '$1' from launch prepare" ;;
  esac
}

# primus_helper_store_record KIND KEY VALUE: a config value, else env/note.
primus_helper_store_record() {
  primus_config_store "$1" "$2" "$3" || primus_helper_on_record "$1" "$2" "$3"
}

# primus_helper_prepared: read the started helper's records up to its `end`
# record (the launcher reads its later libraries between the two steps, while
# Python starts).
primus_helper_prepared() {
  declare -gA __PRIMUS_CONFIG_FILL=()
  primus_helper_read_records end primus_helper_store_record
}

# primus_helper_hook_inputs: the records the hooks need (the experiment
# config's framework), up to the `hooks` record; the helper wrote them while
# the launcher sourced the layers.
primus_helper_hook_inputs() {
  ((__PRIMUS_HELPER_HOOKS_READ == 0)) || return 0
  primus_helper_read_records hooks primus_helper_on_record
  __PRIMUS_HELPER_HOOKS_READ=1
}

# primus_helper_hook_inputs_here: the same, in the hook runner's subshell just
# before the first hook of the workload's group (the helper parses the
# experiment config, PyYAML's import included, while the global hooks run):
# exported there for the hooks, and passed on to the launcher as `helper-env`
# records, then `helper hooks-read`. A helper that ended first stops the run.
primus_helper_hook_inputs_here() {
  ((__PRIMUS_HELPER_HOOKS_READ == 0)) || return 0
  primus_helper_read_records hooks __primus_helper_forward_record
  __PRIMUS_HELPER_HOOKS_READ=1
  printf 'helper\0hooks-read\0\0'
}

# __primus_helper_forward_record KIND KEY VALUE: apply a record here and pass an
# env record on to the launcher (the hook runner's stdout).
__primus_helper_forward_record() {
  primus_helper_on_record "$@"
  [[ $1 != env ]] || printf 'helper-env\0%s\0%s\0' "$2" "$3"
}

# primus_helper_send ENTRY...: write NUL-ended entries, then `env -0` and an
# empty entry, to the helper; a helper that died already is reported by the
# record reader, not by SIGPIPE here.
primus_helper_send() {
  trap '' PIPE
  { { printf '%s\0' "$@"; command -p env -0; printf '\0'; } >&"$PRIMUS_HELPER_IN"; } 2>/dev/null || true
  trap - PIPE
}

# primus_helper_layer WHICH HANDLER: the helper's decision for a shell layer,
# from the exported environment; the hook records it wrote before are taken
# first. Status 1 without a helper (the caller then asks Python itself).
primus_helper_layer() {
  [[ -n $PRIMUS_HELPER_PID ]] || return 1
  primus_helper_send layer "$1"
  primus_helper_hook_inputs
  primus_helper_read_records layer-end "$2"
}

# primus_helper_env_check: hand the final environment to the helper for the
# registry's checks (env check); errors stop the launch with exit 2.
primus_helper_env_check() {
  if [[ ${PRIMUS_SKIP_VALIDATION:-0} == 1 && -z $PRIMUS_VERDICT ]]; then
    printf 'skip\0' >&"$PRIMUS_HELPER_IN"
    primus_helper_finish || true
    LOG_WARN "PRIMUS_SKIP_VALIDATION=1: environment checks skipped; the launch may fail on the nodes instead of here."
    return 0
  fi
  primus_helper_send check "${PRIMUS_ACCELERATOR:-}"
  local kind="" value="" rc=0
  primus_read -d '' kind <&"$PRIMUS_HELPER_OUT" && primus_read -d '' value <&"$PRIMUS_HELPER_OUT" || true
  primus_helper_finish || rc=$?
  if [[ $kind == rc && $value =~ ^[0-9]+$ ]]; then
    rc=$value
  elif ((rc == 0)); then
    rc=$PRIMUS_EXIT_RUNTIME
  fi
  # env check (runner/primus-cli-env-check.sh): the verdict is the answer.
  [[ -z $PRIMUS_VERDICT ]] || exit "$rc"
  if ((rc != 0)); then
    LOG_ERROR "environment check failed (exit $rc): nothing was started. Fix the variables named above, or set PRIMUS_SKIP_VALIDATION=1 to launch anyway."
    exit "$rc"
  fi
}
