#!/usr/bin/env bash
# Usage: primus-cli stacks [--log PATH | --pid PID] [--workspace DIR] [--json]
# Summary: dump and summarise the ranks of a launch running on this host
#
# The stacks of every rank of a launch running on this host, grouped, with the
# suspect named: `python3 -m primus_runner.diagnose stacks`, whose --help lists
# the options. Every node of a Slurm job: primus-cli slurm stacks JOBID.
set -euo pipefail

PRIMUS_MODE_DIR=${BASH_SOURCE[0]%/*}
[[ $PRIMUS_MODE_DIR != "${BASH_SOURCE[0]}" ]] || PRIMUS_MODE_DIR=.
# shellcheck source=runner/lib/python_mode.sh
source "$PRIMUS_MODE_DIR/lib/python_mode.sh"
primus_python_exec primus_runner.diagnose stacks "$@"
