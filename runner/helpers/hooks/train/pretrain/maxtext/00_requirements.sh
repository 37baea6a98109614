#!/usr/bin/env bash
# maxtext step 00: pip install -r <repo>/requirements-jax.txt (as upstream
# AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/train/pretrain/; <repo> from --primus_path); a missing file is exit 66; a file with
# comments only installs nothing. PRIMUS_SKIP_PIP=1 skips it. Under
# PRIMUS_DRY_RUN=1 the pip call is only shown.
set -euo pipefail
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/../../../_lib.sh"

repo="" data_path=""
while (($#)); do
  case $1 in
    --primus_path) repo=${2-}; shift $(($# >= 2 ? 2 : 1)) ;;
    --data_path) data_path=${2-}; shift $(($# >= 2 ? 2 : 1)) ;;
    *) shift ;;
  esac
done
if [[ ${PRIMUS_SKIP_PIP:-0} == 1 ]]; then
  hook_info "PRIMUS_SKIP_PIP=1: not installing requirements-jax.txt"
  exit 0
fi
req=$repo/requirements-jax.txt
[[ -f $req ]] || hook_missing "maxtext needs $req (the JAX requirements of the repository); add it, or set PRIMUS_SKIP_PIP=1 when the image has them."
grep -qvE '^[[:space:]]*(#|$)' "$req" || exit 0
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$data_path/pip_cache}
hook_pip install -r "$req" || hook_missing "pip could not install $req (see pip's output above)."
