#!/usr/bin/env bash
# 05_using_uep.sh: MoE dispatch/combine through DeepEP on UCCL-EP (UEP).
# primus-hook-gate: USING_UEP
#
# Gate: USING_UEP=1 (0 / unset: do nothing; the backend stays at its default,
# TURBO, or whatever the user exported). Reference sections 2, 11.
# Checks that the Python packages uccl and deep_ep are installed for
# $PRIMUS_PYTHON (missing -> exit 66, launch exit 1), then emits:
#   env.PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=DEEP_EP
#   env.UCCL_IB_GID_INDEX / UCCL_IB_HCA / UCCL_SOCKET_IFNAME  (user value, else
#       the NCCL_IB_GID_INDEX / NCCL_IB_HCA / NCCL_SOCKET_IFNAME in effect; only
#       when non-empty)
#   with USING_AINIC=1: UCCL_IB_MAX_INFLIGHT_NORMAL=1,
#       UCCL_IB_MAX_INFLIGHT_LOW_LATENCY=1, UCCL_IB_MAX_INFLIGHT_BYTES=4194304;
#   with REBUILD_BNXT=1 (Broadcom Thor-2): the same with BYTES=1572864
#       (user values win).
# Warns when ENABLE_NUMA_BINDING is not 1. Changes no file.
set -euo pipefail

case ${USING_UEP:-0} in 0) exit 0 ;; esac
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
hook_gate USING_UEP

# missing_packages: print the names among uccl, deep_ep that are not installed.
missing_packages() {
  "$PRIMUS_PYTHON" -c '
import importlib.util
print(" ".join(n for n in ("uccl", "deep_ep") if importlib.util.find_spec(n) is None))'
}

# emit_if_set NAME VALUE: emit env.NAME=VALUE when VALUE is not empty.
emit_if_set() {
  if [[ -n $2 ]]; then hook_emit_env "$1" "$2"; fi
}

main() {
  primus_pick_python
  local missing
  missing=$(missing_packages) || hook_fail "could not run $PRIMUS_PYTHON to look for uccl and deep_ep."
  if [[ -n $missing ]]; then
    hook_missing "USING_UEP=1 but Python package(s) '$missing' are not installed for $PRIMUS_PYTHON; use an image with UCCL-EP and DeepEP, install them, or unset USING_UEP."
  fi
  if [[ ${ENABLE_NUMA_BINDING:-0} != 1 ]]; then
    hook_warn "USING_UEP=1 without ENABLE_NUMA_BINDING=1: data loader workers may be killed unexpectedly; set ENABLE_NUMA_BINDING=1 (or --numa)."
  fi
  hook_info "USING_UEP=1: PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=DEEP_EP"
  hook_emit_env PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND DEEP_EP
  emit_if_set UCCL_IB_GID_INDEX "${UCCL_IB_GID_INDEX:-${NCCL_IB_GID_INDEX:-}}"
  emit_if_set UCCL_IB_HCA "${UCCL_IB_HCA:-${NCCL_IB_HCA:-}}"
  emit_if_set UCCL_SOCKET_IFNAME "${UCCL_SOCKET_IFNAME:-${NCCL_SOCKET_IFNAME:-}}"
  local bytes=""
  if [[ ${USING_AINIC:-0} == 1 ]]; then
    bytes=4194304
  elif [[ ${REBUILD_BNXT:-0} == 1 ]]; then
    bytes=1572864
  fi
  if [[ -n $bytes ]]; then
    hook_emit_env UCCL_IB_MAX_INFLIGHT_NORMAL "${UCCL_IB_MAX_INFLIGHT_NORMAL:-1}"
    hook_emit_env UCCL_IB_MAX_INFLIGHT_LOW_LATENCY "${UCCL_IB_MAX_INFLIGHT_LOW_LATENCY:-1}"
    hook_emit_env UCCL_IB_MAX_INFLIGHT_BYTES "${UCCL_IB_MAX_INFLIGHT_BYTES:-$bytes}"
  fi
}

main "$@"
