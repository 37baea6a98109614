#!/usr/bin/env bash
# runner/helpers/envs/get_nccl_ib_hca.sh: print the NCCL_IB_HCA value for this host.
#
# Usage:
#   get_nccl_ib_hca.sh [--sysfs-root DIR] [-h|--help]
#
# Prints one line: the user's NCCL_IB_HCA when it is set, else the detected list
# of active RDMA ports as `dev:port,...` (empty when the host has none), from
# `python3 -m primus_runner nics`. Kept under the reference's file name so
# scripts calling `NCCL_IB_HCA=$(bash .../get_nccl_ib_hca.sh)` keep working;
# the launcher itself gets every network value from one `nics` call instead.
#
# Detection (see `python3 -m primus_runner nics --help`): ports ACTIVE and LinkUp,
# InfiniBand preferred over Ethernet (RoCE), EFA left out, RoCE ports without a
# routable GID (RoCE v2 on IPv4, else on a global IPv6 address; only link-local
# fe80:: is not) left out with a note, devices matching
# PRIMUS_IB_HCA_EXCLUDE (a regular expression, default `bond`) excluded, a
# leading `=` when a name would prefix-match an excluded device. Sysfs is read
# under --sysfs-root (default $PRIMUS_SYSFS_ROOT, else /).
#
# Exit codes: 0 ok; 1 Python helper missing; 2 bad arguments.
set -euo pipefail

HCA_HELPER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=runner/lib/common.sh
source "$HCA_HELPER_DIR/lib/common.sh"
primus_nics_get "${BASH_SOURCE[0]}" NCCL_IB_HCA --sysfs-root DIR -- "$@"
