#!/usr/bin/env bash
# bench/70_monitor.sh: what the run monitor (python/primus_runner/monitor/) costs.
#   1. Its CPU share of one core while a healthy 2-rank job runs (real torchrun,
#      gloo: steps of a 0.5 s sleep and an all_reduce, BENCH_MONITOR_SECONDS,
#      default 40): the monitor's own CPU time plus that of the processes it
#      started and waited for (py-spy), from /proc/PID/stat, over its life.
#      Budget: < 2 % of one core per node. Also the verdicts it printed (none
#      expected: a false alarm would show here).
#   2. A sampled rank's step time: a Python loop of ~20 ms CPU steps, timed
#      without sampling and while `py-spy dump --nonblocking` reads it every 4 s
#      (the monitor's rate for a still rank) and every 0.5 s (a harder rate);
#      the median step time's change. Budget: < 1 %.
# Figures, never assertions.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds=${BENCH_MONITOR_SECONDS:-40}
py=$PRIMUS_ROOT/.venv/bin/python
work=$(mktemp -d "${TMPDIR:-/tmp}/primus-bench-monitor.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out"
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

GPUS_PER_NODE=2 MASTER_PORT=$port STEP_S=0.5 PRIMUS_WORKSPACE=$work/ws PRIMUS_WORKLOAD_PYTHON=$py \
  PRIMUS_ACCELERATOR=cpu "$PRIMUS_ROOT/runner/primus-cli" direct \
  --script "$PRIMUS_ROOT/tests/fixtures/workloads/monitor_cases.py" -- "$work/out" steps "$seconds" \
  >"$work/launch.out" 2>&1 &
launcher=$!
bench_monitor_cpu "$launcher" "$work/ws"
ticks=$BENCH_TICKS first=$BENCH_FIRST last=$BENCH_LAST
wait "$launcher" || true
hz=$(getconf CLK_TCK)
verdicts=$(grep -cE "run monitor: (hang|collective mismatch|stopped|straggler)" "$work/launch.out" || true)
if [[ -n $first && -n $last ]]; then
  elapsed=$(bench_elapsed "$first" "$last")
  awk -v t="$ticks" -v hz="$hz" -v s="$elapsed" -v v="${verdicts:-0}" 'BEGIN {
    printf "%-58s %.2f %% of a core  (%d ticks of 1/%d s in %.1f s; %d verdicts)\n",
      "run monitor, CPU per node, healthy 2-rank job (budget < 2 %)", 100 * t / hz / s, t, hz, s, v }'
else
  echo "run monitor, CPU per node: the monitor was not found (launch output: $work/launch.out)"
  cat "$work/launch.out"
fi

# 2. The sampled rank's step time.
"$py" - "$PRIMUS_ROOT/.venv/bin/py-spy" <<'PYEOF'
import statistics
import subprocess
import sys
import threading
import time

pyspy = sys.argv[1]
rank = subprocess.Popen([sys.executable, "-c", """
import sys, time
def step():
    end = time.perf_counter() + 0.02
    while time.perf_counter() < end:
        sum(i * i for i in range(200))
while True:
    t = time.perf_counter(); step(); print(time.perf_counter() - t, flush=True)
"""], stdout=subprocess.PIPE, text=True)


def steps(seconds: float, every: float) -> float:
    stop = time.monotonic() + seconds
    done = threading.Event()

    def sampler() -> None:
        while every and not done.wait(every):
            subprocess.run([pyspy, "dump", "--nonblocking", "--json", "--pid", str(rank.pid)],
                           capture_output=True, check=False)

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    times = []
    assert rank.stdout is not None
    while time.monotonic() < stop:
        times.append(float(rank.stdout.readline()))
    done.set()
    thread.join()
    return statistics.median(times)


base = steps(8, 0)
for every in (4.0, 0.5):
    sampled = steps(8, every)
    again = steps(8, 0)
    ref = (base + again) / 2
    print(f"{'sampled rank, step time, py-spy --nonblocking every %.1f s' % every:<58} "
          f"{100 * (sampled - ref) / ref:+.2f} %  (median step {1000 * sampled:.2f} ms vs {1000 * ref:.2f} ms; budget < 1 %)")
    base = again
rank.kill()
PYEOF
