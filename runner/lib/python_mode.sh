# shellcheck shell=bash disable=SC2034
# runner/lib/python_mode.sh: what the modes that run a Python command (env, config,
# doctor, stacks) share: the global options runner/primus-cli hands them before their
# own arguments, and the interpreter with the package on its path. Such a mode's file
# sources this one (which sources runner/lib/common.sh) and ends in one call:
#   primus_python_exec MODULE WORD ARGS...   (doctor, stacks)
#   primus_python_main FUNC ARGS...          (config, env: FUNC is the file's own)
# A library: it only defines the functions.
#   primus_python_mode ARGS...   reads leading --debug, --dry-run and --config FILE
#       (also accepted right after the mode, as the launch modes accept them) and sets
#       PRIMUS_MODE_DRY_RUN (0|1), PRIMUS_MODE_CONFIG (the file or ''),
#       PRIMUS_MODE_GLOBAL (the options as given), PRIMUS_MODE_ARGS (the rest);
#       then picks PRIMUS_PYTHON (exit 1 without one) and puts python/ on PYTHONPATH.
#   primus_python_main FUNC ARGS...   primus_python_mode ARGS, then FUNC with the rest
#   primus_python_exec MODULE WORD ARGS...
#       primus_python_mode ARGS, then exec `$PRIMUS_PYTHON -m MODULE WORD` with the rest

# shellcheck source=runner/lib/common.sh
source "${BASH_SOURCE[0]%/*}/common.sh"

primus_python_mode() {
  PRIMUS_MODE_DRY_RUN=0
  PRIMUS_MODE_CONFIG=""
  PRIMUS_MODE_GLOBAL=()
  while (($# > 0)); do
    case $1 in
      --debug) PRIMUS_MODE_GLOBAL+=("$1"); shift ;;
      --dry-run) PRIMUS_MODE_DRY_RUN=1; PRIMUS_MODE_GLOBAL+=("$1"); shift ;;
      --config)
        (($# >= 2)) || primus_bad_usage primus-cli "option --config needs a file."
        PRIMUS_MODE_CONFIG=$2; PRIMUS_MODE_GLOBAL+=(--config "$2"); shift 2 ;;
      *) break ;;
    esac
  done
  PRIMUS_MODE_ARGS=("$@")
  primus_require_python || exit
  export PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
}

primus_python_main() {
  local func=$1
  shift
  primus_python_mode "$@"
  "$func" "${PRIMUS_MODE_ARGS[@]}"
}

primus_python_exec() {
  local module=$1 word=$2
  shift 2
  primus_python_mode "$@"
  exec "$PRIMUS_PYTHON" -m "$module" "$word" "${PRIMUS_MODE_ARGS[@]}"
}
