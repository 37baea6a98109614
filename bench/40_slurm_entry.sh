#!/usr/bin/env bash
# bench/40_slurm_entry.sh: slurm-entry --dry-run (budget 0.30 s for 16,384 nodes)
# on 1,024 and 16,384 nodes, contiguous (n[00001-16384]) and fragmented (every
# other node, n[00001,00003,...]), as the last node of the step, with scontrol
# absent from PATH (the rank mapping expands the list). Also the python3
# processes started per node before the workload (budget 2).
# Reference launcher: 72 s for the fragmented 16,384-node list.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_empty_host
export GPUS_PER_NODE=8
unset MASTER_ADDR NNODES NODE_RANK SLURM_CONF
entry=$PRIMUS_ROOT/runner/primus-cli-slurm-entry.sh

# A PATH holding every command of this machine except scontrol.
mkdir -p "$work/bin"
for f in /usr/local/bin/* /usr/bin/* /usr/sbin/*; do
  [[ ${f##*/} == scontrol || -e $work/bin/${f##*/} ]] || ln -s "$f" "$work/bin/${f##*/}"
done
no_scontrol_path=$work/bin

# The generated host names resolve nowhere, and every node checks that
# MASTER_ADDR resolves: name this host's address as the first host.
master=$(hostname -I 2>/dev/null | awk '{print $1}')
[[ -n $master ]] || master=127.0.0.1

# run_entry NODES NODELIST: the entry's dry-run as the last node of the step.
run_entry() {
  local nodes=$1 list=$2
  env PATH="$no_scontrol_path" MASTER_ADDR="$master" SLURM_JOB_ID=1 SLURM_STEP_ID=0 SLURM_JOB_NUM_NODES="$nodes" \
    SLURM_NNODES="$nodes" SLURM_STEP_NUM_NODES="$nodes" SLURM_NODELIST="$list" \
    SLURM_JOB_NODELIST="$list" SLURM_STEP_NODELIST="$list" SLURM_NODEID=$((nodes - 1)) \
    SLURM_PROCID=$((nodes - 1)) SLURM_LOCALID=0 SLURM_NTASKS="$nodes" \
    SLURM_STEP_NUM_TASKS="$nodes" SLURM_STEP_TASKS_PER_NODE="1(x$nodes)" \
    PRIMUS_WORKLOAD_PYTHON="$PRIMUS_ROOT/.venv/bin/python" "${PRIMUS_PYTHON_ENV[@]}" \
    bash "$entry" --no-srun-native --dry-run direct --module primus_runner -- train pretrain
}
PRIMUS_PYTHON_ENV=()

for nodes in 1024 16384; do
  contiguous="n[00001-$(printf '%05d' "$nodes")]"
  fragmented="n[$(seq -s, -f '%05g' 1 2 $((2 * nodes - 1)))]"
  run_entry "$nodes" "$fragmented" >/dev/null 2>&1 ||
    echo "warning: the entry failed for $nodes fragmented nodes (figures below are of a failure)"
  bench_median "slurm-entry --dry-run $nodes nodes contiguous, no scontrol" "$BENCH_RUNS" \
    run_entry "$nodes" "$contiguous"
  bench_median "slurm-entry --dry-run $nodes nodes fragmented, no scontrol" "$BENCH_RUNS" \
    run_entry "$nodes" "$fragmented"
done

# Count python3 starts on one node: a wrapper interpreter appends a line per start.
bench_counting_python
PRIMUS_PYTHON_ENV=(PRIMUS_PYTHON="$work/python")
run_entry 16384 "n[$(seq -s, -f '%05g' 1 2 32767)]" >/dev/null 2>&1 || true
printf '%-58s %d (budget 2)\n' "python3 processes per slurm-entry launch before the workload" \
  "$(bench_python_starts)"
