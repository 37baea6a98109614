#!/usr/bin/env bash
# bench/50_overhead.sh: launch overhead over plain torchrun (issue 10; target
# +0.15 s at most). The same 2-process script that only joins a gloo barrier,
# started by `primus-cli direct` and by torchrun alone (`python -m
# torch.distributed.run`), wall time to exit; medians and the difference from
# one run of this script.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_empty_host
export GPUS_PER_NODE=2
python=$PRIMUS_ROOT/.venv/bin/python
export PRIMUS_WORKLOAD_PYTHON=$python
cat >"$work/barrier.py" <<'PY'
import torch.distributed as dist

dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
PY
runs=${BENCH_OVERHEAD_RUNS:-7}

# free_port: a TCP port nothing listens on now (each run gets its own, so a
# closing run's TIME_WAIT never delays the next).
free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_torchrun / run_primus: one launch each, the port chosen outside the timing.
run_torchrun() {
  "$python" -m torch.distributed.run --nproc_per_node 2 --nnodes 1 --node_rank 0 \
    --master_addr 127.0.0.1 --master_port "$1" "$work/barrier.py"
}
run_primus() {
  MASTER_PORT=$1 "$PRIMUS_ROOT/runner/primus-cli" direct --script "$work/barrier.py"
}

declare -a plain=() ours=()
for ((i = 0; i < runs; i++)); do
  port=$(free_port)
  start=$EPOCHREALTIME; run_torchrun "$port" >/dev/null 2>&1 || true; end=$EPOCHREALTIME
  plain+=("$(bench_elapsed "$start" "$end")")
  port=$(free_port)
  start=$EPOCHREALTIME; run_primus "$port" >/dev/null 2>&1 || true; end=$EPOCHREALTIME
  ours+=("$(bench_elapsed "$start" "$end")")
done
bench_report "torchrun alone, 2-process gloo barrier" "${plain[@]}"
bench_report "primus-cli direct, same script" "${ours[@]}"
a=$(bench_median_of "${plain[@]}") b=$(bench_median_of "${ours[@]}")
awk -v a="$a" -v b="$b" 'BEGIN { printf "%-58s %+.3f s (%+.0f %%; target +0.15 s)\n", "launch overhead (median difference)", b - a, (b - a) / a * 100 }'
