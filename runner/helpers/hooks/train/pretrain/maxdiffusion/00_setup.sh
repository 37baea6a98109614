#!/usr/bin/env bash
# maxdiffusion step 00 (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/train/pretrain/): runs
# <repo>/examples/maxdiffusion/setup_maxdiffusion_env.sh (missing: exit 66).
# PRIMUS_SKIP_PIP=1 skips it. Under PRIMUS_DRY_RUN=1 it is only shown.
set -euo pipefail
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/../../../_lib.sh"

repo=""
while (($#)); do
  case $1 in
    --primus_path) repo=${2-}; shift $(($# >= 2 ? 2 : 1)) ;;
    *) shift ;;
  esac
done
if [[ ${PRIMUS_SKIP_PIP:-0} == 1 ]]; then
  hook_info "PRIMUS_SKIP_PIP=1: not running setup_maxdiffusion_env.sh"
  exit 0
fi
setup=$repo/examples/maxdiffusion/setup_maxdiffusion_env.sh
[[ -f $setup ]] || hook_missing "maxdiffusion needs $setup; add it, or set PRIMUS_SKIP_PIP=1 when the image is set up."
hook_run bash "$setup" >&2 || hook_missing "$setup failed (see its output above)."
