#!/usr/bin/env bash
# 05_using_uep.sh: MoE dispatch/combine backend; DeepEP on UCCL-EP (UEP).
# primus-hook-gate: USING_UEP
# primus-hook-when-unset: PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND
#
# Upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/.
# USING_UEP unset/0: env.PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=TURBO unless
#   you set the backend (the reference launcher overwrites your value).
# USING_UEP=1: `$PRIMUS_PYTHON -m pip show uccl` and `... show deep_ep` must
#   succeed (else exit 66, launch exit 1, suggesting REBUILD_UEP=1); emits
#   env.PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=DEEP_EP and, when non-empty:
#   UCCL_IB_GID_INDEX / UCCL_IB_HCA / UCCL_SOCKET_IFNAME / UCCL_IB_TC / UCCL_IB_SL
#     = own value, else NCCL_IB_GID_INDEX / NCCL_IB_HCA / NCCL_SOCKET_IFNAME /
#       NCCL_IB_TC / NCCL_IB_SL
#   UCCL_IB_MAX_INFLIGHT_NORMAL / _LOW_LATENCY / _BYTES = own value, else with
#     USING_AINIC=1 1 / 1 / 4194304, else with REBUILD_BNXT=1 (Broadcom
#     Thor-2) 1 / 1 / 1572864
#   (the reference launcher also exports the empty ones; they stay unset here).
# Warns when ENABLE_NUMA_BINDING is not 1. Changes no file.
set -euo pipefail

if [[ ${USING_UEP:-0} == 0 ]]; then
  if [[ -z ${PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND:-} ]]; then
    printf 'env.PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=TURBO\n'
  fi
  exit 0
fi
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"
hook_gate USING_UEP

# emit_if_set NAME VALUE: emit env.NAME=VALUE when VALUE is not empty.
emit_if_set() {
  if [[ -n $2 ]]; then hook_emit_env "$1" "$2"; fi
}

main() {
  primus_pick_python
  local pkg missing=""
  for pkg in uccl deep_ep; do
    "$PRIMUS_PYTHON" -m pip show "$pkg" >/dev/null 2>&1 || missing+=${missing:+ }$pkg
  done
  if [[ -n $missing ]]; then
    hook_missing "USING_UEP=1 but pip package(s) '$missing' are not installed for $PRIMUS_PYTHON; set REBUILD_UEP=1 to build UCCL-EP and DeepEP, use an image that has them, or unset USING_UEP."
  fi
  if [[ ${ENABLE_NUMA_BINDING:-0} != 1 ]]; then
    hook_warn "USING_UEP=1 without ENABLE_NUMA_BINDING=1: data loader workers may be killed unexpectedly; set ENABLE_NUMA_BINDING=1 (or --numa)."
  fi
  hook_info "USING_UEP=1: PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=DEEP_EP"
  hook_emit_env PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND DEEP_EP
  emit_if_set UCCL_IB_GID_INDEX "${UCCL_IB_GID_INDEX:-${NCCL_IB_GID_INDEX:-}}"
  emit_if_set UCCL_IB_HCA "${UCCL_IB_HCA:-${NCCL_IB_HCA:-}}"
  emit_if_set UCCL_SOCKET_IFNAME "${UCCL_SOCKET_IFNAME:-${NCCL_SOCKET_IFNAME:-}}"
  emit_if_set UCCL_IB_TC "${UCCL_IB_TC:-${NCCL_IB_TC:-}}"
  emit_if_set UCCL_IB_SL "${UCCL_IB_SL:-${NCCL_IB_SL:-}}"
  local normal="" low="" bytes=""
  if [[ ${USING_AINIC:-0} == 1 ]]; then
    normal=1 low=1 bytes=4194304
  elif [[ ${REBUILD_BNXT:-0} == 1 ]]; then
    normal=1 low=1 bytes=1572864
  fi
  emit_if_set UCCL_IB_MAX_INFLIGHT_NORMAL "${UCCL_IB_MAX_INFLIGHT_NORMAL:-$normal}"
  emit_if_set UCCL_IB_MAX_INFLIGHT_LOW_LATENCY "${UCCL_IB_MAX_INFLIGHT_LOW_LATENCY:-$low}"
  emit_if_set UCCL_IB_MAX_INFLIGHT_BYTES "${UCCL_IB_MAX_INFLIGHT_BYTES:-$bytes}"
}

main "$@"
