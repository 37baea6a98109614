#!/usr/bin/env bash
# bench/80_large_env.sh: `primus-cli direct --dry-run` with 10,000 exported
# variables, beside the same dry run in the ordinary
# environment and the floor bash itself sets: one bash start that starts one
# process, in the same large environment (bash de-duplicates its variables
# pairwise each time it builds the environment of a process: docs/security.md "Hardening" (Large
# environments)). BENCH_LARGE_ENV_RUNS runs each (default 3: a run takes seconds).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_empty_host
export PATH=$PRIMUS_ROOT/.venv/bin:$PATH
unset PRIMUS_WORKLOAD_PYTHON
cli=$PRIMUS_ROOT/runner/primus-cli
script=$PRIMUS_ROOT/tests/fixtures/workloads/argv.py
runs=${BENCH_LARGE_ENV_RUNS:-3}

bench_median "direct --dry-run --single, ordinary environment" "$runs" \
  "$cli" direct --dry-run --single --script "$script" -- x
for ((i = 1; i <= 10000; i++)); do export "BENCH_BULK_$i=x"; done
bench_median "floor, 10,000 exported variables: bash -c /bin/true" "$runs" bash -c /bin/true
bench_median "direct --dry-run --single, 10,000 exported variables" "$runs" \
  "$cli" direct --dry-run --single --script "$script" -- x
