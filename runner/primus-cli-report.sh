#!/usr/bin/env bash
# Usage: primus-cli report RUN [--out FILE]
# Summary: draw a run (or a doctor run) as one self-contained HTML file
#
# RUN is a node's log file, its run record (<log without .log>.events.jsonl,
# written beside every node's log), the log directory, or a doctor record
# (primus-cli doctor --json FILE, primus-cli slurm doctor --json FILE). The
# HTML file (default: RUN without its suffix + .report.html; report.html in a
# directory) draws the launch phases per node, the run monitor's verdicts on a
# timeline, each rank's straggler score over time and the restarts; for a
# doctor record, the node x node bandwidth heatmap with the excluded nodes
# marked. Inline CSS and SVG only: no network, no script library.
# `python3 -m primus_runner report --help` lists the options.
#
# Exit codes: 0 written; 1 RUN names no run record; 2 bad arguments, or a file
# that is not a record.
set -euo pipefail

PRIMUS_MODE_DIR=${BASH_SOURCE[0]%/*}
[[ $PRIMUS_MODE_DIR != "${BASH_SOURCE[0]}" ]] || PRIMUS_MODE_DIR=.
# shellcheck source=runner/lib/python_mode.sh
source "$PRIMUS_MODE_DIR/lib/python_mode.sh"
primus_python_exec primus_runner report "$@"
