#!/usr/bin/env bash
# bench/00_direct.sh: `primus-cli direct --dry-run -- train pretrain` (budget 0.15 s)
# and the number of python3 processes a launch starts before the workload (budget 2).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_empty_host
export GPUS_PER_NODE=2
# The workload interpreter as a user has it: an activated venv (the project's
# .venv, which has torch) first on PATH, so `python3` is no pyenv shim.
export PATH=$PRIMUS_ROOT/.venv/bin:$PATH
unset PRIMUS_WORKLOAD_PYTHON
cli=$PRIMUS_ROOT/runner/primus-cli
cfg=$PRIMUS_ROOT/examples/cpu_pretrain.yaml

bench_median "floor: bash -c true" "$BENCH_RUNS" bash -c true
bench_median "floor: python3 -c pass" "$BENCH_RUNS" "$PRIMUS_ROOT/.venv/bin/python" -c pass
bench_median "direct --dry-run -- train pretrain (budget 0.15 s)" "$BENCH_RUNS" \
  "$cli" direct --dry-run --module primus_runner -- train pretrain --config "$cfg"

# Count python3 starts: a wrapper interpreter appends a line per start.
bench_counting_python
# The workload interpreter's probe counts too (one `<python> -c`).
PRIMUS_PYTHON=$work/python PRIMUS_WORKLOAD_PYTHON=$work/python "$cli" direct --dry-run --module primus_runner -- train pretrain --config "$cfg" >/dev/null 2>&1 || true
printf '%-58s %d (budget 2)\n' "python3 processes per launch before the workload" "$(bench_python_starts)"
