#!/usr/bin/env bash
# 03_detect_nccl_ib_tc.sh: RCCL traffic classes from the AI NIC's QoS set-up.
# primus-hook-gate: USING_AINIC
#
# Gate: USING_AINIC=1 (0 / unset: do nothing). Upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/.
# Never fails: every problem is a warning on stderr, exit 0, no env. line.
# - NCCL_IB_TC and NCCL_IB_FIFO_TC both set: nothing to do. One of them set:
#   that one is kept and only the other is emitted.
# - Pensando NIC: the first entry of $PRIMUS_SYSFS_ROOT/sys/class/infiniband
#   has `ionic` in its name, or `ibstat <entry>` reports a CA type with
#   `Pensando`; otherwise nothing to do.
# - nicctl missing: `apt-get install -y nicctl` (only shown under dry run);
#   still missing: nothing to do.
# - From `nicctl show qos`, python/primus_runner/network/qos.py (asked once)
#   decides: the no-drop priority P is the last field of the first "PFC no-drop
#   priorities" line; DSCP(P) is taken from the first line with "DSCP" (not
#   "bitmap") ending "==> priority : P": the text after its colon up to the
#   arrow, spaces removed, digits only. The strict priority is the first field
#   of the first line containing "strict" (any case); the FIFO DSCP is
#   DSCP(strict) when numeric, else the data DSCP.
# Emits env.NCCL_IB_TC=<data DSCP x 4> and env.NCCL_IB_FIFO_TC=<FIFO DSCP x 4>
# (DSCP 26 -> 104, 48 -> 192); 03_enable_ainic.sh then keeps them.
set -uo pipefail

case ${USING_AINIC:-0} in 0) exit 0 ;; esac
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"
hook_gate USING_AINIC

skip() {
  hook_warn "$* NCCL_IB_TC / NCCL_IB_FIFO_TC are not detected (03_enable_ainic.sh defaults apply)."
  exit 0
}

# is_pensando: the first RDMA device is an AMD Pensando (ionic) NIC.
is_pensando() {
  local dir first
  dir=$(hook_sysfs /sys/class/infiniband)
  local -a devs=()
  shopt -s nullglob
  devs=("$dir"/*)
  shopt -u nullglob
  ((${#devs[@]})) || return 1
  first=${devs[0]##*/}
  [[ $first == *ionic* ]] && return 0
  command -v ibstat >/dev/null || return 1
  ibstat "$first" 2>/dev/null | grep -i 'CA type' | grep -q Pensando
}

main() {
  if [[ -n ${NCCL_IB_TC:-} && -n ${NCCL_IB_FIFO_TC:-} ]]; then
    hook_info "NCCL_IB_TC=$NCCL_IB_TC and NCCL_IB_FIFO_TC=$NCCL_IB_FIFO_TC are set; not detecting"
    exit 0
  fi
  is_pensando || exit 0
  if ! command -v nicctl >/dev/null; then
    hook_run apt-get install -y nicctl || skip "apt-get install -y nicctl failed;"
    hook_dry_run && skip "dry run: nicctl is not installed;"
    command -v nicctl >/dev/null || skip "nicctl is still not on PATH;"
  fi
  local qos
  qos=$(nicctl show qos 2>/dev/null) || skip "'nicctl show qos' failed;"
  # The reading of the QoS text and the classes: python/primus_runner/network/qos.py.
  local -a rec
  primus_pick_python
  while mapfile -n 3 -d '' -t rec && [[ ${#rec[@]} == 3 ]]; do
    case ${rec[0]} in
      skip) skip "${rec[1]}" ;;
      info) hook_info "${rec[1]}" ;;
      tc)
        if [[ -z ${NCCL_IB_TC:-} ]]; then hook_emit_env NCCL_IB_TC "${rec[1]}"; fi
        if [[ -z ${NCCL_IB_FIFO_TC:-} ]]; then hook_emit_env NCCL_IB_FIFO_TC "${rec[2]}"; fi
        exit 0
        ;;
    esac
  done < <(PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" "$PRIMUS_PYTHON" -m primus_runner.network.qos <<<"$qos")
  skip "python/primus_runner/network/qos.py gave no answer (see above);"
}

main "$@"
