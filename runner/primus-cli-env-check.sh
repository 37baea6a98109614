#!/usr/bin/env bash
# Usage: primus-cli env check [options]
#
# The launch's verdict without the launch: runs the direct launcher's own
# decision path (config, --env, the scheduler mapping, accelerator and NIC
# detection, the environment layers, the hooks in dry-run mode, then every
# rule of the registry) and stops where `primus-cli direct --dry-run` would
# print the command. Same inputs, same findings, same exit code.
#
# Options:
#   --config FILE           config file, as for direct (its direct.env counts)
#   --env KEY=VALUE|FILE|NAME
#                           as for direct (repeatable; beats every other source)
#   --env-file FILE         the same as --env FILE (older spelling)
#   --accelerator A         auto|rocm|cuda|neuron|cpu, as for direct (default:
#                           PRIMUS_ACCELERATOR, else detection)
#   --no-host-probes        skip the checks that touch the network (whether
#                           MASTER_ADDR resolves on a node other than 0); the
#                           output says they were skipped
#   --strict                warnings block too (exit 2)
#   --format text|json      findings as text lines (default) or one JSON object
#   --container             the launch is `primus-cli container`: the host's side
#                           of it, exactly what `primus-cli container --dry-run`
#                           checks (its plan: config, --env, the scheduler
#                           mapping, forwarding, then every rule in container
#                           context), with no image or runtime needed; the
#                           layers, hooks and workload checks run in the
#                           container, where its direct launch gives their verdict
#   -h, --help              this help
#
# Exit codes: 0 no error; 1 a missing file (--config, --env FILE); 2 an error
# (or a warning with --strict), or an invalid option.
set -euo pipefail

PRIMUS_CLI_DIR=${BASH_SOURCE[0]%/*}
[[ $PRIMUS_CLI_DIR != "${BASH_SOURCE[0]}" ]] || PRIMUS_CLI_DIR=.

# env_check_main ARGS...: translate env check's options into the direct
# launcher's (--verdict WORDS, --config, --env, --accelerator) and run it.
env_check_main() {
  local -a launch=() words=() outer=() inner=()
  local format=text container=0
  while (($# > 0)); do
    case $1 in
      -h | --help) usage_exit ;;
      --debug) launch+=(--debug); shift ;;
      --dry-run) shift ;;  # env check only reads anyway
      --config | --env | --env-file | --accelerator | --format)
        (($# >= 2)) || bad_usage "option $1 needs a value."
        case $1 in
          --env-file) launch+=(--env "$2"); outer+=(--env "$2") ;;
          --format) format=$2 ;;
          --accelerator) launch+=("$1" "$2"); inner=("$1" "$2") ;;
          *) launch+=("$1" "$2"); outer+=("$1" "$2") ;;
        esac
        shift 2 ;;
      --config=* | --env=* | --env-file=* | --accelerator=* | --format=*)
        set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
      --container) container=1; shift ;;
      --strict | --no-host-probes | --say-ok) words+=("${1#--}"); shift ;;
      *) bad_usage "unknown option '$1' for 'primus-cli env check'; accepted: --config FILE, --env KEY=VALUE|FILE|NAME, --env-file FILE, --accelerator A, --no-host-probes, --strict, --format text|json, --container." ;;
    esac
  done
  case $format in
    text) ;;
    json) words+=(json) ;;
    *) bad_usage "--format '$format' is not known; accepted: text, json." ;;
  esac
  local IFS=,
  # The launcher's own progress lines are not findings: warnings and errors only.
  export PRIMUS_LOG_LEVEL=${PRIMUS_LOG_LEVEL:-WARN}
  if ((container)); then
    # --config and --env mean the same to the container launcher; --accelerator
    # is the inner direct's, which the plan reads.
    exec "$BASH" "$PRIMUS_CLI_DIR/primus-cli-container.sh" --verdict "${words[*]:-text}" "${outer[@]}" -- "${inner[@]}"
  fi
  exec "$BASH" "$PRIMUS_CLI_DIR/primus-cli-direct.sh" --verdict "${words[*]:-text}" "${launch[@]}"
}

usage_exit() {
  # shellcheck source=runner/lib/usage.sh
  source "$PRIMUS_CLI_DIR/lib/usage.sh"
  primus_usage "${BASH_SOURCE[0]}"
  exit 0
}

bad_usage() {
  # shellcheck source=runner/lib/common.sh
  source "$PRIMUS_CLI_DIR/lib/common.sh"
  primus_bad_usage "primus-cli env check" "$1"
}

env_check_main "$@"
