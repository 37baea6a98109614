#!/usr/bin/env bash
# runner/helpers/envs/get_ip_interface.sh: print the socket interface for this host.
#
# Usage:
#   get_ip_interface.sh [--sysfs-root DIR] [--master-addr HOST] [-h|--help]
#
# Prints one line: the user's IP_INTERFACE when it is set, else the detected
# interface (empty when there is none) from `python3 -m primus_runner nics`.
# Kept under the reference's file name so scripts calling
# `IP_INTERFACE=$(bash .../get_ip_interface.sh)` keep working; the launcher
# itself gets every network value from one `nics` call instead.
#
# Choice: the interface holding MASTER_ADDR's IPv4 exactly, else the one the
# longest-prefix route to MASTER_ADDR uses, else the one holding the host's
# primary IPv4 (its host name's address) exactly, else the default route's.
# Never loopback, bridges, or names matching PRIMUS_SOCKET_IFNAME_EXCLUDE
# (default: lo, docker*, br-*, virbr*, veth*, cni*, ...); down interfaces are
# skipped. Equal-cost routes on several interfaces: the first in natural name
# order, with a note on stderr. MASTER_ADDR comes from --master-addr, else
# $MASTER_ADDR.
#
# Exit codes: 0 ok; 1 Python helper missing; 2 bad arguments.
set -euo pipefail

IFACE_HELPER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=runner/lib/common.sh
source "$IFACE_HELPER_DIR/lib/common.sh"
primus_nics_get "${BASH_SOURCE[0]}" IP_INTERFACE --sysfs-root DIR --master-addr HOST -- "$@"
