#!/usr/bin/env bash
# bench/50_overhead.sh: launch overhead over plain torchrun (target
# +0.15 s at most). The same 2-process script that only joins a gloo barrier,
# started by `primus-cli direct` and by torchrun alone (`python -m
# torch.distributed.run`), wall time to exit; medians and the difference from
# one run of this script. Also where the difference goes: the time from the
# start to the first rank's first line (start-up) and from the last rank's
# last line to the exit (teardown), each rank stamping time.time() itself;
# and the medians of the per-run differences, each pair run back to back.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_empty_host
export GPUS_PER_NODE=2
python=$PRIMUS_ROOT/.venv/bin/python
export PRIMUS_WORKLOAD_PYTHON=$python
cat >"$work/barrier.py" <<'PY'
import os
import time

stamps = os.environ.get("BENCH_STAMPS")
begin = time.time()
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
if stamps:
    with open(stamps, "a") as fh:
        fh.write(f"{begin:.6f} {time.time():.6f}\n")
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

# phases START END STAMPS VAR_UP VAR_DOWN: append to the arrays named VAR_UP and
# VAR_DOWN the start-up (START to the first rank's begin) and the teardown (the
# last rank's end to END) of one run whose ranks wrote STAMPS.
phases() {
  local -n __up=$4 __down=$5
  local first last
  read -r first last < <(awk 'NR == 1 || $1 < f { f = $1 } NR == 1 || $2 > l { l = $2 }
    END { printf "%s %s\n", f, l }' "$3")
  __up+=("$(bench_elapsed "$1" "$first")")
  __down+=("$(bench_elapsed "$last" "$2")")
}

declare -a plain=() ours=() plain_up=() plain_down=() ours_up=() ours_down=()
for ((i = 0; i < runs; i++)); do
  port=$(free_port)
  export BENCH_STAMPS=$work/plain.$i
  start=$EPOCHREALTIME; run_torchrun "$port" >/dev/null 2>&1 || true; end=$EPOCHREALTIME
  plain+=("$(bench_elapsed "$start" "$end")")
  phases "$start" "$end" "$BENCH_STAMPS" plain_up plain_down
  port=$(free_port)
  export BENCH_STAMPS=$work/ours.$i
  start=$EPOCHREALTIME; run_primus "$port" >/dev/null 2>&1 || true; end=$EPOCHREALTIME
  ours+=("$(bench_elapsed "$start" "$end")")
  phases "$start" "$end" "$BENCH_STAMPS" ours_up ours_down
done
bench_report "torchrun alone, 2-process gloo barrier" "${plain[@]}"
bench_report "primus-cli direct, same script" "${ours[@]}"
bench_report "  start-up to the first rank, torchrun alone" "${plain_up[@]}"
bench_report "  start-up to the first rank, primus-cli direct" "${ours_up[@]}"
bench_report "  teardown after the last rank, torchrun alone" "${plain_down[@]}"
bench_report "  teardown after the last rank, primus-cli direct" "${ours_down[@]}"
a=$(bench_median_of "${plain[@]}") b=$(bench_median_of "${ours[@]}")
awk -v a="$a" -v b="$b" 'BEGIN { printf "%-58s %+.3f s (%+.0f %%; target +0.15 s)\n", "launch overhead (median difference)", b - a, (b - a) / a * 100 }'

# paired LABEL OURS_ARRAY PLAIN_ARRAY: the median of the per-run differences
# (each pair ran back to back, so a machine that slows down or speeds up over
# the whole bench moves both alike).
paired() {
  local -n __ours=$2 __plain=$3
  local -a diffs=()
  local i
  for ((i = 0; i < ${#__ours[@]}; i++)); do
    diffs+=("$(awk -v o="${__ours[i]}" -v p="${__plain[i]}" 'BEGIN { printf "%.6f", o - p }')")
  done
  printf '%-58s %+.3f s\n' "$1" "$(bench_median_of "${diffs[@]}")"
}
paired "  paired: median of per-run differences, time to exit" ours plain
paired "  paired: median of per-run differences, start-up" ours_up plain_up
paired "  paired: median of per-run differences, teardown" ours_down plain_down
