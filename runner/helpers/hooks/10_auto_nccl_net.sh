#!/usr/bin/env bash
# 10_auto_nccl_net.sh: fill in RCCL's HCA list and socket interface when empty.
# primus-hook-when-unset: NCCL_IB_HCA NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME
# primus-hook-skip-when: PRIMUS_DETECTION_DONE=1
#
# No gate. Upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/. Usually a no-op: base_env.sh's detection
# has filled these. Reads sysfs under PRIMUS_SYSFS_ROOT (default /).
# - NCCL_IB_HCA empty and $PRIMUS_SYSFS_ROOT/sys/class/infiniband has devices:
#   env.NCCL_IB_HCA = the devices whose ports/1/state says ACTIVE (else all),
#   comma-separated (the reference launcher separates them with spaces, which
#   RCCL does not read as a list); env.NCCL_IB_DISABLE=0 when that is empty.
# - NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME both empty and MASTER_ADDR set:
#   for each IPv4 address of MASTER_ADDR (getent ahostsv4), the device of
#   `ip -4 route get <addr>`; lo, docker0, veth* and devices missing from
#   /sys/class/net are ignored; the first ib* device wins, else the first
#   acceptable one; emitted as both NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME.
#   A MASTER_ADDR that is one of the loopback names (PRIMUS_LOOPBACK_NAMES,
#   runner/lib/facts.sh, generated from the registry) routes through lo, which
#   is never chosen, so it is not looked up (getent and ip cost ~15 ms of every
#   single-node launch; the default MASTER_ADDR is localhost). A shortcut only:
#   any other address, 127.x.y.z included, is looked up as before.
# One owner: in a launch, and whenever base_env.sh ran, the NIC/HCA
# values are python/primus_runner/nics' detection and what the layers made of
# it (PRIMUS_DETECTION_DONE=1): an empty NCCL_IB_HCA there is a decision (the
# Neuron layer unsets it: EFA is not RoCE), so the hook emits nothing. The
# selection below runs only for a hook started without detection (by hand).
# Changes no file.
set -uo pipefail

[[ ${PRIMUS_DETECTION_DONE:-0} != 1 ]] || exit 0
# Nothing to do (the usual case) is decided here, before anything is loaded.
need_hca=0
if [[ -z ${NCCL_IB_HCA:-} ]]; then
  for dev in "${PRIMUS_SYSFS_ROOT:-}"/sys/class/infiniband/*; do
    [[ -e $dev ]] && need_hca=1
    break
  done
fi
# need_route: the socket interfaces are empty and MASTER_ADDR may route
# through something other than lo.
need_route=1
if [[ -n ${NCCL_SOCKET_IFNAME:-} || -n ${GLOO_SOCKET_IFNAME:-} || -z ${MASTER_ADDR:-} ]]; then
  need_route=0
else
  # shellcheck source=runner/lib/facts.sh
  source "${PRIMUS_RUNNER_DIR:-${BASH_SOURCE[0]%/*}/../..}/lib/facts.sh"
  for name in "${PRIMUS_LOOPBACK_NAMES[@]}"; do
    [[ ${MASTER_ADDR,,} != "$name" ]] || need_route=0
  done
fi
((need_hca == 1 || need_route == 1)) || exit 0
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"

hca_list() {
  local dir dev state active="" all=""
  dir=$(hook_sysfs /sys/class/infiniband)
  [[ -d $dir ]] || return 0
  shopt -s nullglob
  for dev in "$dir"/*; do
    all+=${all:+,}${dev##*/}
    state=$(<"$dev/ports/1/state") 2>/dev/null || state=""
    [[ $state != *ACTIVE* ]] || active+=${active:+,}${dev##*/}
  done
  shopt -u nullglob
  printf '%s' "${active:-$all}"
}

route_device() {
  local addr dev first="" net
  net=$(hook_sysfs /sys/class/net)
  command -v ip >/dev/null || return 0
  while read -r addr _; do
    dev=$(ip -4 route get "$addr" 2>/dev/null | grep -oE ' dev [^ ]+' | head -n1)
    dev=${dev# dev }
    case $dev in "" | lo | docker0 | veth*) continue ;; esac
    [[ -e $net/$dev ]] || continue
    if [[ $dev == ib* ]]; then
      printf '%s' "$dev"
      return 0
    fi
    first=${first:-$dev}
  done < <(getent ahostsv4 "$MASTER_ADDR" 2>/dev/null | awk '!seen[$1]++ {print $1}')
  printf '%s' "$first"
}

main() {
  if [[ -z ${NCCL_IB_HCA:-} ]]; then
    local hcas
    hcas=$(hca_list)
    if [[ -n $hcas ]]; then
      hook_info "NCCL_IB_HCA was empty; using the RDMA devices $hcas"
      hook_emit_env NCCL_IB_HCA "$hcas"
      if [[ -z ${NCCL_IB_DISABLE:-} ]]; then hook_emit_env NCCL_IB_DISABLE 0; fi
    fi
  fi
  if ((need_route == 1)); then
    local dev
    dev=$(route_device)
    if [[ -n $dev ]]; then
      hook_info "socket interfaces were empty; $dev routes to MASTER_ADDR=$MASTER_ADDR"
      hook_emit_env NCCL_SOCKET_IFNAME "$dev"
      hook_emit_env GLOO_SOCKET_IFNAME "$dev"
    fi
  fi
  return 0
}

main "$@"
