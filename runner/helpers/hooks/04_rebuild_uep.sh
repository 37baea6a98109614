#!/usr/bin/env bash
# 04_rebuild_uep.sh: build UCCL-EP and its DeepEP drop-in (UEP) from source.
# primus-hook-gate: REBUILD_UEP
# primus-hook-installs:
#
# Gate: REBUILD_UEP=1 (0 / unset: do nothing). Upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/.
# Inputs: UCCL_REF (default b99aefd263bf89ed79dbb3207dde5a5b979ea530),
#   UCCL_BUILD_DIR (only logged, as in the reference launcher).
# Steps (checkout ${TMPDIR:-/tmp}/uccl, deleted first):
#   git clone https://github.com/uccl-project/uccl.git; apt-get install -y rdma-core libibverbs-dev
#   libnuma-dev libgoogle-glog-dev; pip install nanobind; git checkout UCCL_REF;
#   in ep/deep_ep_wrapper/deep_ep/buffer.py the calls that pass a hard-coded
#   previous_event=None get the caller's previous_event; make -C ep;
#   pip install the checkout (uccl) and ep/deep_ep_wrapper (deep_ep; the UCCL
#   README installs this wrapper as the DeepEP drop-in).
# Emits no env./extra. lines. Under PRIMUS_DRY_RUN=1 prints the commands only.
set -euo pipefail

case ${REBUILD_UEP:-0} in 0) exit 0 ;; esac
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"
hook_gate REBUILD_UEP

readonly DEFAULT_REF=b99aefd263bf89ed79dbb3207dde5a5b979ea530

# fix_buffer FILE: pass the caller's previous event instead of None.
fix_buffer() {
  local file=$1
  if hook_dry_run; then
    hook_info "dry run: would replace 'previous_event=None' by 'previous_event=previous_event' in $file"
    return 0
  fi
  if [[ ! -f $file ]]; then
    hook_warn "$file not found in UCCL $UCCL_REF; its previous_event fix is not applied."
    return 0
  fi
  sed -i 's/previous_event=None\b/previous_event=previous_event/g' -- "$file"
  hook_info "patched $file: previous_event passed through"
}

main() {
  local ref=${UCCL_REF:-$DEFAULT_REF} repo=https://github.com/uccl-project/uccl.git
  [[ $ref != -* ]] || hook_config_error "UCCL_REF='$ref' starts with '-' and would be read by git as an option; accepted: a commit, branch or tag."
  local src=${TMPDIR:-/tmp}/uccl
  hook_info "REBUILD_UEP=1: building UCCL-EP $ref in $src${UCCL_BUILD_DIR:+ (UCCL_BUILD_DIR=$UCCL_BUILD_DIR is only logged)}"
  if ! hook_dry_run; then
    command -v git >/dev/null || hook_missing "git is not on PATH; it is needed to fetch UCCL."
  fi
  if [[ -e $src ]]; then hook_run rm -rf -- "$src"; fi
  hook_run git clone -- "$repo" "$src"
  hook_run apt-get install -y rdma-core libibverbs-dev libnuma-dev libgoogle-glog-dev
  hook_pip install nanobind
  hook_run git -C "$src" checkout "$ref"
  fix_buffer "$src/ep/deep_ep_wrapper/deep_ep/buffer.py"
  hook_run make -C "$src/ep"
  hook_pip install --no-build-isolation "$src"
  hook_pip install --no-build-isolation "$src/ep/deep_ep_wrapper"
  if hook_dry_run; then hook_info "dry run: nothing was changed"; fi
}

main "$@"
