#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; a single-quoted $ is the hook's own
# A launch that explains its time under Slurm, on the live 4-node test cluster
# (tests/slurm/run.sh starts it; run as
# `flock /tmp/slurm-suite.lock tests/slurm/run.sh -f 'phases'`): a 2-node job
# whose second node's hook takes 5 s longer. Each node prints its waterfall
# line; node 0 reads node 1's run record beside its log (the nodes share this
# machine's filesystem) and names node 1 in the hooks phase
# (python/primus_runner/monitor/phases.py).

# REPO_ROOT, PRIMUS_CLI, bats-support/-assert and poll_until; the cluster_* set-up.
load ../bats/helpers/launcher
load helpers/cluster

setup_file() {
  cluster_require
}

setup() {
  cluster_setup slurm-phases
  cluster_cpu_nodes
  mkdir -p "$TEST_DIR/out" "$TEST_DIR/hooks"
  # One hook for every node, slow on the job's second node only.
  printf '#!/bin/bash\n# phases_live.bats: node 1 slower by 5 s\n[[ ${NODE_RANK:-0} != 1 ]] || sleep 5\n' \
    >"$TEST_DIR/hooks/01_slow_on_node1.sh"
  chmod +x "$TEST_DIR/hooks/01_slow_on_node1.sh"
}

teardown() {
  cluster_teardown
}

@test "phases: 2-node job, node 1's hook slowed by 5 s: node 0's log names node 1 and the hooks phase" {
  export STEP_S=0.2 PRIMUS_HOOKS_DIR=$TEST_DIR/hooks
  run timeout 60 "$PRIMUS_CLI" slurm sbatch -N 2 -o "$TEST_DIR/job.out" -- direct \
    --script "$REPO_ROOT/tests/fixtures/workloads/monitor_cases.py" -- "$TEST_DIR/out" steps 5
  assert_success
  job=$(sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p' <<<"$output" | head -n 1)
  [[ -n $job ]]
  poll_until 180 grep -q "launch phases, slowest node of 2: " "$TEST_DIR/job.out" || { cat "$TEST_DIR/job.out"; false; }
  cat "$TEST_DIR/job.out"
  line=$(grep "launch phases, slowest node of 2: " "$TEST_DIR/job.out")
  [[ $line =~ \|\ hooks\ node\ 1\ ([0-9.]+)s\ \(fastest\ ([0-9.]+)s\) ]]
  awk -v slow="${BASH_REMATCH[1]}" -v fast="${BASH_REMATCH[2]}" 'BEGIN { exit !(slow >= 5 && fast < 5) }'
  [[ $line != *"no record from"* ]]
  # Both nodes' waterfall lines, and node 0's job-wide line in its own log.
  [[ $(grep -cE "\[NODE-[01]\([^)]*\)\] \[INFO\] launch phases: plan " "$TEST_DIR/job.out") -eq 2 ]]
  grep -q "launch phases, slowest node of 2: .*| hooks node 1 " "$PRIMUS_WORKSPACE"/logs/primus-*-node0.log
  # Each node's record holds its hooks phase; node 1's is the 5 s one.
  grep -q '"phase": "hooks"' "$PRIMUS_WORKSPACE"/logs/primus-*-node1.events.jsonl
}
