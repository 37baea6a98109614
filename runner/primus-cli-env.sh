#!/usr/bin/env bash
# Usage: primus-cli env list|explain|check|show|docs [args...]
# Summary: variables: list, explain, check, show, docs
#
# The variable registry's commands: `check` is the launch's verdict without the
# launch (runner/primus-cli-env-check.sh), `show` what a launch would export
# (runner/helpers/envs/env-show.sh); list, explain and docs (and --help) are
# `python3 -m primus_runner env`. With the global --dry-run, `env docs --out`
# says what it would write instead of writing it.
set -euo pipefail

# env_main ARGS...: the mode's own arguments, the global options read.
env_main() {
  case ${1:-} in
    check) exec "$BASH" "$PRIMUS_MODE_DIR/primus-cli-env-check.sh" "${PRIMUS_MODE_GLOBAL[@]}" "${@:2}" --say-ok ;;
    show) exec "$PRIMUS_MODE_DIR/helpers/envs/env-show.sh" "${PRIMUS_MODE_GLOBAL[@]}" "${@:2}" ;;
  esac
  ((PRIMUS_MODE_DRY_RUN == 0)) || export PRIMUS_DRY_RUN=1
  exec "$PRIMUS_PYTHON" -m primus_runner env "$@"
}

PRIMUS_MODE_DIR=${BASH_SOURCE[0]%/*}
[[ $PRIMUS_MODE_DIR != "${BASH_SOURCE[0]}" ]] || PRIMUS_MODE_DIR=.
# shellcheck source=runner/lib/python_mode.sh
source "$PRIMUS_MODE_DIR/lib/python_mode.sh"
primus_python_main env_main "$@"
