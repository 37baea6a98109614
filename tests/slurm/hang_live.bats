#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# Hang diagnosis under Slurm, on the live 4-node test cluster
# (tests/slurm/run.sh starts it; run as
# `flock /tmp/slurm-suite.lock tests/slurm/run.sh -f 'hang'`): a 2-node job
# where one rank of the second node hangs. The nodes share this machine's
# filesystem, so node 0's run monitor finds node 1's bundle beside its log.

# REPO_ROOT, PRIMUS_CLI, bats-support/-assert and poll_until; the cluster_* set-up.
load ../bats/helpers/launcher
load helpers/cluster

setup_file() {
  cluster_require
}

setup() {
  cluster_setup slurm-hang
  cluster_cpu_nodes
  mkdir -p "$TEST_DIR/out"
}

teardown() {
  cluster_teardown
}

merged_summary() {
  grep -q "run monitor: stacks across 2 node(s), 2 bundle(s) found" "$TEST_DIR/job.out" &&
    grep -q "SUSPECT rank 3 (node 1 node2): stuck_here (hang_rank.py:[0-9]*)" "$TEST_DIR/job.out"
}

# Node 0's one analysis of both nodes' flight-recorder dumps: rank 3 never joined the all_reduce.
job_wide_verdict() {
  grep -q "run monitor: flight recorder, all nodes: torch's analyzer (fr_trace) on the dumps of rank(s) 0-3 from \
node(s) 0,1: missing ranks 3: not all ranks joined the collective in gloo:all_reduce" "$TEST_DIR/job.out"
}

@test "hang: 2-node job, rank 3 on the second node hangs: slurm stacks, and within 60 s the run monitor's table across nodes names node 1 (node2) and rank 3, then the flight recorder of both nodes names rank 3 missing" {
  export HANG_RANK=3  # no PRIMUS_HANG_* setting: the monitor needs none
  run timeout 60 "$PRIMUS_CLI" slurm sbatch -N 2 -o "$TEST_DIR/job.out" -- direct \
    --script "$REPO_ROOT/tests/fixtures/workloads/hang_rank.py" -- "$TEST_DIR/out" hang
  assert_success
  job=$(sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p' <<<"$output" | head -n 1)
  [[ -n $job ]]
  poll_until 120 test -f "$TEST_DIR/out/ready.3" || { cat "$TEST_DIR/job.out"; false; }
  # On demand, while the job runs: every node, one summary.
  run timeout 120 "$PRIMUS_CLI" slurm stacks "$job"
  echo "$output"
  assert_success
  assert_output --partial "stacks of job $job across 2 node(s):"
  assert_output --regexp "SUSPECT rank 3 \(node 1 node2\): stuck_here \(hang_rank.py:[0-9]+\)"
  assert_output --regexp "ranks 0,1 \(node 0 node1\), 2 \(node 1 node2\): main \(hang_rank.py:[0-9]+\) <- all_reduce"
  # The monitor: each node writes its bundle; node 0 prints one summary across nodes,
  # within 60 s of the hang (the stacks above were read after it began).
  poll_until 60 merged_summary || { cat "$TEST_DIR/job.out"; false; }
  grep -q "run monitor: hang: rank 3 (pid [0-9]*) in stuck_here (hang_rank.py:[0-9]*)" "$TEST_DIR/job.out"
  # Then node 0 runs torch's analyzer on both nodes' dumps together (each node's alone is
  # undecided: the other node's ranks are missing), one line, also in its bundle's summary.
  poll_until 60 job_wide_verdict || { cat "$TEST_DIR/job.out"; false; }
  grep -q "flight recorder, all nodes: .*missing ranks 3" "$PRIMUS_WORKSPACE"/logs/primus-*-node0.hang-1/summary.txt
  # Each node's own line says it covers its ranks only and where the job's verdict is.
  grep -q "run monitor: flight recorder: .*; this node's ranks only: node 0 gives the verdict over every node's dumps" "$TEST_DIR/job.out"
  ls "$PRIMUS_WORKSPACE"/logs/primus-*-node0.hang-1/flight-recorder-all-nodes/fr-rank-3
  ls "$PRIMUS_WORKSPACE"/logs/primus-*-node0.hang-1/rank-0.txt "$PRIMUS_WORKSPACE"/logs/primus-*-node1.hang-1/rank-3.txt
  grep -q "stuck_here" "$PRIMUS_WORKSPACE"/logs/primus-*-node1.hang-1/rank-3.txt
  # slurm stacks gives each node's run monitor verdict beside the stacks.
  run timeout 120 "$PRIMUS_CLI" slurm stacks "$job"
  echo "$output"
  assert_success
  assert_output --regexp "run monitor of node 1 \(node2\): hang: rank 3 \(pid [0-9]+\) in stuck_here"
}
