#!/usr/bin/env bash
# hooks/train/posttrain/dispatch_framework.sh: framework steps for
# `train posttrain` (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/train/posttrain/).
#
# No --config: nothing. Framework = post_trainer.framework of the config; none,
# or no hooks/train/posttrain/<framework>/ folder: nothing. Otherwise its *.sh /
# *.py steps run sorted with the unchanged arguments and their env./extra. lines
# are forwarded once (the reference launcher delivers each line twice, so its
# extra options repeat). A failing step stops with its exit code.
set -euo pipefail

has_config=0
for arg in "$@"; do
  case $arg in --config | --config=*) has_config=1 ;; esac
done
((has_config)) || exit 0
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/../../_lib.sh"
primus_pick_python
PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" exec "$PRIMUS_PYTHON" -m primus_runner.config.experiment posttrain \
  --hooks-dir "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" "$@"
