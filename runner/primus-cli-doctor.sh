#!/usr/bin/env bash
# Usage: primus-cli doctor [--probe] [--json FILE]
# Summary: check this node: fit to train on? (every node of an allocation: slurm doctor)
#
# This node's checks (devices, drivers, NICs, clock; with --probe the bandwidth
# probe): `python3 -m primus_runner doctor`, whose --help lists the options. Every
# node of an allocation: primus-cli slurm doctor [slurm flags] [--probe].
set -euo pipefail

PRIMUS_MODE_DIR=${BASH_SOURCE[0]%/*}
[[ $PRIMUS_MODE_DIR != "${BASH_SOURCE[0]}" ]] || PRIMUS_MODE_DIR=.
# shellcheck source=runner/lib/python_mode.sh
source "$PRIMUS_MODE_DIR/lib/python_mode.sh"
primus_python_exec primus_runner doctor "$@"
