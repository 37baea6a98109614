#!/usr/bin/env bash
# bench/75_monitor_ranks.sh: the run monitor's CPU as the rank count grows.
#   One node, real torchrun, BENCH_MONITOR_RANKS ranks (default "2 32"; a
#   trn1.32xlarge runs 32 per node): each rank is a standard-library loop that
#   sleeps 0.5 s and prints a line every 5 s (no torch, so 32 ranks fit a small
#   host; every rank moves, as a healthy training rank does), for
#   BENCH_MONITOR_SECONDS (default 40). The monitor's own CPU time plus that of
#   the processes it started and waited for, from /proc/PID/stat, over its life,
#   as in bench/70_monitor.sh. Budget: at most 1 % of one core with 32 ranks, not
#   growing with the rank count. Figures, never assertions.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds=${BENCH_MONITOR_SECONDS:-40}
read -r -a counts <<<"${BENCH_MONITOR_RANKS:-2 32}"
py=$PRIMUS_ROOT/.venv/bin/python
work=$(mktemp -d "${TMPDIR:-/tmp}/primus-bench-ranks.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat >"$work/rank.py" <<'PY'
import os, sys, time
end = time.monotonic() + float(sys.argv[1])
n = 0
while time.monotonic() < end:
    time.sleep(0.5)
    n += 1
    if n % 10 == 0:
        print(f"rank {os.environ.get('RANK')} step {n}", flush=True)
PY
hz=$(getconf CLK_TCK)
for n in "${counts[@]}"; do
  port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  GPUS_PER_NODE=$n MASTER_PORT=$port PRIMUS_WORKSPACE=$work/ws$n PRIMUS_WORKLOAD_PYTHON=$py \
    PRIMUS_ACCELERATOR=cpu "$PRIMUS_ROOT/runner/primus-cli" direct --script "$work/rank.py" -- "$seconds" \
    >"$work/launch$n.out" 2>&1 &
  launcher=$!
  bench_monitor_cpu "$launcher" "$work/ws$n"
  ticks=$BENCH_TICKS first=$BENCH_FIRST last=$BENCH_LAST
  wait "$launcher" || true
  if [[ -n $first && -n $last ]]; then
    awk -v t="$ticks" -v hz="$hz" -v s="$(bench_elapsed "$first" "$last")" -v n="$n" 'BEGIN {
      printf "%-58s %.2f %% of a core  (%d ticks of 1/%d s in %.1f s)\n",
        "run monitor, CPU per node, " n " ranks (budget <= 1 %)", 100 * t / hz / s, t, hz, s }'
  else
    echo "run monitor, $n ranks: the monitor was not found (launch output: $work/launch$n.out)"
    tail -n 20 "$work/launch$n.out"
  fi
done
