#!/usr/bin/env bash
# megatron step 00: Python packages Megatron pretraining needs on top of the
# image (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/train/pretrain/): flash-linear-attention==0.5.2 and
# causal-conv1d~=1.5, with PIP_CACHE_DIR (default <data_path>/pip_cache).
# PRIMUS_SKIP_PIP=1 skips it. Under PRIMUS_DRY_RUN=1 the pip call is only shown.
set -euo pipefail
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/../../../_lib.sh"

data_path=""
while (($#)); do
  case $1 in
    --data_path) data_path=${2-}; shift $(($# >= 2 ? 2 : 1)) ;;
    *) shift ;;
  esac
done
if [[ ${PRIMUS_SKIP_PIP:-0} == 1 ]]; then
  hook_info "PRIMUS_SKIP_PIP=1: not installing flash-linear-attention, causal-conv1d"
  exit 0
fi
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$data_path/pip_cache}
hook_pip install flash-linear-attention==0.5.2 'causal-conv1d~=1.5' ||
  hook_missing "pip could not install flash-linear-attention==0.5.2 / causal-conv1d~=1.5 (see pip's output above); set PRIMUS_SKIP_PIP=1 if the image already has them."
