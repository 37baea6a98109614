#!/usr/bin/env bash
# Usage: primus-cli config show|render [args...]
# Summary: configuration: show, render FILE
#
# The merged configuration (`show`, with the global --config FILE on top of
# ~/.primus.yaml and runner/.primus.yaml) and ${VAR} templates (`render FILE`):
# `python3 -m primus_runner config`, whose --help lists the options. It only reads;
# with the global --dry-run it says so.
set -euo pipefail

# config_main ARGS...: the mode's own arguments, the global options read.
config_main() {
  ((PRIMUS_MODE_DRY_RUN == 0)) || export PRIMUS_DRY_RUN=1
  if [[ -n $PRIMUS_MODE_CONFIG && ${1:-} == show ]]; then
    exec "$PRIMUS_PYTHON" -m primus_runner config show --config "$PRIMUS_MODE_CONFIG" "${@:2}"
  fi
  exec "$PRIMUS_PYTHON" -m primus_runner config "$@"
}

PRIMUS_MODE_DIR=${BASH_SOURCE[0]%/*}
[[ $PRIMUS_MODE_DIR != "${BASH_SOURCE[0]}" ]] || PRIMUS_MODE_DIR=.
# shellcheck source=runner/lib/python_mode.sh
source "$PRIMUS_MODE_DIR/lib/python_mode.sh"
primus_python_main config_main "$@"
