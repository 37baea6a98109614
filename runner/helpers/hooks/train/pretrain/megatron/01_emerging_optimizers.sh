#!/usr/bin/env bash
# megatron step 01: NVIDIA-NeMo Emerging-Optimizers (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/train/pretrain/).
# Only when PRIMUS_INSTALL_EMERGING_OPTIMIZERS is 1, true, True, TRUE, yes or
# on; nothing when `import emerging_optimizers` already works. Else pip installs
# (no dependencies, no cache) git+https://github.com/NVIDIA-NeMo/Emerging-Optimizers.git@
# $PRIMUS_EMERGING_OPTIMIZERS_COMMIT (default 93d9eb3a6c899b50de73992826451fba3ab6adfb)
# with $PYTHON (default $PRIMUS_PYTHON); still not importable -> exit 66.
# Under PRIMUS_DRY_RUN=1 the pip call is only shown.
set -euo pipefail

case ${PRIMUS_INSTALL_EMERGING_OPTIMIZERS:-} in 1 | true | True | TRUE | yes | on) ;; *) exit 0 ;; esac
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/../../../_lib.sh"
primus_pick_python
py=${PYTHON:-$PRIMUS_PYTHON}
if "$py" -c 'import emerging_optimizers' 2>/dev/null; then
  hook_info "emerging_optimizers is already importable"
  exit 0
fi
commit=${PRIMUS_EMERGING_OPTIMIZERS_COMMIT:-93d9eb3a6c899b50de73992826451fba3ab6adfb}
hook_run "$py" -m pip install --no-deps --no-cache-dir "git+https://github.com/NVIDIA-NeMo/Emerging-Optimizers.git@$commit" ||
  hook_missing "pip could not install Emerging-Optimizers at $commit (see above)."
if ! hook_dry_run && ! "$py" -c 'import emerging_optimizers' 2>/dev/null; then
  hook_missing "emerging_optimizers is still not importable with $py after the install."
fi
