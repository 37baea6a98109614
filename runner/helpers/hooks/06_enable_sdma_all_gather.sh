#!/usr/bin/env bash
# 06_enable_sdma_all_gather.sh: all-gather on the SDMA copy engines.
# primus-hook-gate: SDMA_ALL_GATHER
# primus-hook-installs:
#
# Gate: SDMA_ALL_GATHER=1 (0 / unset: do nothing). Upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/.
# Emits, each unless set (the reference launcher forces them):
#   NCCL_CTA_POLICY=2 NCCL_CUMEM_ENABLE=1 NCCL_LOCAL_REGISTER=0
#   TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=true (base_env's default 0
#   does not count as set) SDMA_ALL_GATHER=1
# Compiles hooks/sdma/hip_attr_drain_preload.c (missing -> exit 66, launch exit
# 1) on every run:
#   gcc -O2 -fPIC -shared -o ${TMPDIR:-/tmp}/libhip_attr_drain.so <src> -ldl
# (failure -> exit 1) and emits env.LD_PRELOAD with that library first, your
# LD_PRELOAD entries after it (the reference launcher replaces LD_PRELOAD).
# Under PRIMUS_DRY_RUN=1 the compiler is not run; the lines are the same.
set -euo pipefail

case ${SDMA_ALL_GATHER:-0} in 0) exit 0 ;; esac
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"
hook_gate SDMA_ALL_GATHER

main() {
  local src lib=${TMPDIR:-/tmp}/libhip_attr_drain.so
  src=$(dirname "${BASH_SOURCE[0]}")/sdma/hip_attr_drain_preload.c
  [[ -f $src ]] || hook_missing "$src is missing; the SDMA all-gather hook needs it to build $lib (restore it from the primus-runner checkout or unset SDMA_ALL_GATHER)."
  if ! hook_dry_run; then
    command -v gcc >/dev/null || hook_missing "gcc is not on PATH; SDMA_ALL_GATHER=1 compiles $src into $lib. Install gcc or unset SDMA_ALL_GATHER."
  fi
  hook_run gcc -O2 -fPIC -shared -o "$lib" "$src" -ldl ||
    hook_fail "gcc could not compile $src into $lib (see its output above)."
  hook_emit_default NCCL_CTA_POLICY 2
  hook_emit_default NCCL_CUMEM_ENABLE 1
  hook_emit_default NCCL_LOCAL_REGISTER 0
  hook_emit_default TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK true
  hook_emit_env SDMA_ALL_GATHER 1
  local preload=$lib entry
  local -a old=()
  IFS=': ' read -r -a old <<<"${LD_PRELOAD-}"
  for entry in "${old[@]}"; do
    [[ -n $entry && $entry != "$lib" ]] && preload+=:$entry
  done
  hook_emit_env LD_PRELOAD "$preload"
}

main "$@"
