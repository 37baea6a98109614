#!/usr/bin/env bash
# bench/10_base_env.sh: time to source runner/helpers/envs/base_env.sh and the
# whole loader primus-env.sh (target: base_env <= 0.08 s), each in a
# fresh `bash --norc` under env -i. Two cases: inside the launcher (detection
# already done: no python3 start) and by hand on a fake MI300X host (one python3
# start for the devices + nics helpers). Prints figures, asserts nothing.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$PRIMUS_ROOT
RUNS=${BENCH_RUNS:-15}
ENVS=$ROOT/runner/helpers/envs
FIXTURE=$ROOT/tests/fixtures/sysfs/mi300x-roce


launcher=(env -i PATH=/usr/bin:/bin PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=rocm
  PRIMUS_GPU_MODEL=MI300X PRIMUS_ENV_DEFER_VALIDATION=1)
by_hand=(env -i PATH=/usr/bin:/bin PRIMUS_PYTHON="$ROOT/.venv/bin/python"
  PRIMUS_SYSFS_ROOT="$FIXTURE" PRIMUS_DEV_ROOT="$FIXTURE" PRIMUS_ENV_DEFER_VALIDATION=1)

bench_median "bash --norc -c true (floor)" "$RUNS" env -i bash --norc -c true
bench_median "source base_env.sh (launcher: detection done)" "$RUNS" \
  "${launcher[@]}" bash --norc -c "source '$ENVS/base_env.sh'"
bench_median "source primus-env.sh (launcher, MI300X, JAX layer)" "$RUNS" \
  "${launcher[@]}" PRIMUS_FRAMEWORK=maxtext bash --norc -c "source '$ENVS/primus-env.sh'"
bench_median "source base_env.sh (by hand: 1 python3 for devices+nics)" "$RUNS" \
  "${by_hand[@]}" bash --norc -c "source '$ENVS/base_env.sh'"
bench_median "source primus-env.sh (by hand, env check deferred)" "$RUNS" \
  "${by_hand[@]}" bash --norc -c "source '$ENVS/primus-env.sh'"
bench_median "source primus-env.sh (by hand, with env check: 2 python3)" "$RUNS" \
  env -i PATH=/usr/bin:/bin PRIMUS_PYTHON="$ROOT/.venv/bin/python" PRIMUS_SYSFS_ROOT="$FIXTURE" \
  PRIMUS_DEV_ROOT="$FIXTURE" bash --norc -c "source '$ENVS/primus-env.sh'"
