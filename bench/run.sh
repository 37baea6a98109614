#!/usr/bin/env bash
# bench/run.sh: `make bench`. Runs every bench/NN_*.sh in name order; each prints
# median wall times of whole-process runs (docs/run-on-one-node.md "Launch overhead"). Figures, not assertions.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../runner/lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BENCH_DIR
export PRIMUS_ROOT=${PRIMUS_ROOT:-$(dirname "$BENCH_DIR")}
export BENCH_RUNS=${BENCH_RUNS:-15}
echo "primus-runner benchmarks ($(nproc) cores, ${BENCH_RUNS} runs each unless noted)"
for script in "$BENCH_DIR"/[0-9][0-9]_*.sh; do
  [[ -e $script ]] || continue
  bash "$script"
done
