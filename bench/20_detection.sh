#!/usr/bin/env bash
# bench/20_detection.sh: hostlist expand/compress of 1,024 and 16,384 hosts
# (contiguous and fragmented; budget for expanding 16,384: 0.05 s beyond the
# interpreter start), rank mapping of a 16,384-node Slurm step, and the nics /
# devices detectors on a fake MI300X machine. Whole-process medians; figures only.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

py=$PRIMUS_ROOT/.venv/bin/python
[[ -x $py ]] || py=python3
export PYTHONPATH=$PRIMUS_ROOT/python
fixture=$PRIMUS_ROOT/tests/fixtures/sysfs/mi300x-roce
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Host lists: contiguous ranges, and fragmented ones (every other node, so no
# two hosts merge: 16,384 single-number entries in one bracket).
"$py" - "$work" <<'PY'
import sys
work = sys.argv[1]
for n in (1024, 16384):
    with open(f"{work}/contig{n}", "w") as f:
        f.write(f"node[00001-{n:05d}]")
    with open(f"{work}/frag{n}", "w") as f:
        f.write("node[" + ",".join(f"{i:05d}" for i in range(0, 2 * n, 2)) + "]")
    with open(f"{work}/hosts{n}", "w") as f:
        f.write("\n".join(f"node{i:05d}" for i in range(0, 2 * n, 2)) + "\n")
PY

bench_median "floor: python3 -c pass" "$BENCH_RUNS" "$py" -c pass
for n in 1024 16384; do
  contig=$(<"$work/contig$n")
  frag=$(<"$work/frag$n")
  bench_median "hostlist expand $n contiguous" "$BENCH_RUNS" "$py" -m primus_runner hostlist expand "$contig"
  bench_median "hostlist expand $n fragmented" "$BENCH_RUNS" "$py" -m primus_runner hostlist expand "$frag"
  mapfile -t hosts <"$work/hosts$n"
  bench_median "hostlist compress $n fragmented" "$BENCH_RUNS" \
    "$py" -m primus_runner hostlist compress "${hosts[@]}"
done

# In-process cost of the same calls (no interpreter start).
"$py" - "$work" <<'PY'
import sys, timeit
from primus_runner.scheduler import hostlist
work = sys.argv[1]
for n in (1024, 16384):
    for kind in ("contig", "frag"):
        expr = open(f"{work}/{kind}{n}").read()
        best = min(timeit.repeat(lambda: hostlist.expand(expr), number=1, repeat=7))
        print(f"{'in-process expand ' + str(n) + ' ' + kind:<58} best   {best:.4f} s")
    hosts = open(f"{work}/hosts{n}").read().split()
    best = min(timeit.repeat(lambda: hostlist.compress(hosts), number=1, repeat=7))
    print(f"{'in-process compress ' + str(n) + ' fragmented':<58} best   {best:.4f} s")
PY

frag=$(<"$work/frag16384")
bench_median "ranks: Slurm step of 16,384 nodes (fragmented list)" "$BENCH_RUNS" \
  env SLURM_JOB_ID=1 SLURM_NNODES=16384 SLURM_NODELIST="$frag" SLURM_NODEID=9000 \
  "$py" -m primus_runner ranks --format nul
bench_median "nics on the mi300x-roce fixture" "$BENCH_RUNS" \
  "$py" -m primus_runner nics --sysfs-root "$fixture" --format nul
bench_median "devices on the mi300x-roce fixture" "$BENCH_RUNS" \
  "$py" -m primus_runner devices --sysfs-root "$fixture" --dev-root "$fixture" --format nul
