#!/usr/bin/env bash
# bench/30_env_check.sh: `primus-cli env check` over a full environment (target:
# <= 0.15 s): every registry variable set to a valid example value
# (env/examples.py full_environment), under env -i so nothing else is checked. Also the
# clean-environment case and the in-process cost of one check() call.
# Prints figures, asserts nothing.
#
# Usage: bench/30_env_check.sh [--help]   (BENCH_RUNS runs each, default 15)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$PRIMUS_ROOT

py=$ROOT/.venv/bin/python
[[ -x $py ]] || py=python3
cli=$ROOT/runner/primus-cli

# full_env: NAME=VALUE words of the full environment, one per array item.
mapfile -t full_env < <(PYTHONPATH=$ROOT/python "$py" -c '
from primus_runner.env.examples import full_environment
for name, value in full_environment().items():
    print(f"{name}={value}")')

# The launcher's own settings come last so that they win over the example values.
own=(PATH="$PATH" HOME="$HOME" PRIMUS_PYTHON="$py")
bench_median "env check, clean environment" "$BENCH_RUNS" env -i "${own[@]}" "$cli" env check
bench_median "env check, full environment (${#full_env[@]} vars) (budget 0.15 s)" "$BENCH_RUNS" \
  env -i "${full_env[@]}" "${own[@]}" "$cli" env check
bench_median "python3 -m primus_runner env check, full environment" "$BENCH_RUNS" \
  env -i "${full_env[@]}" "${own[@]}" PYTHONPATH="$ROOT/python" "$py" -m primus_runner env check
PYTHONPATH=$ROOT/python "$py" -c '
import time
from primus_runner.env import examples, rules
env = examples.full_environment()
rules.check(env)
runs = 200
start = time.perf_counter()
for _ in range(runs):
    rules.check(env)
each = (time.perf_counter() - start) / runs
label = "rules.check() in process, full environment"
print(f"{label:<58} {each * 1000:.2f} ms per call")'
