#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# Hang diagnosis under Slurm, on the live 4-node test cluster
# (tests/slurm/run.sh starts it; run as
# `flock /tmp/slurm-suite.lock tests/slurm/run.sh -f 'hang'`): a 2-node job
# where one rank of the second node hangs. The nodes share this machine's
# filesystem, so node 0's run monitor finds node 1's bundle beside its log.

# REPO_ROOT, PRIMUS_CLI, bats-support/-assert and poll_until.
load ../bats/helpers/launcher

setup_file() {
  [[ -n ${SLURM_CONF:-} && -f $SLURM_CONF ]] || {
    echo "SLURM_CONF is not set to a cluster config: run this suite with tests/slurm/run.sh" >&3
    return 1
  }
}

setup() {
  TEST_DIR=$(mktemp -d "$BATS_TMPDIR/primus-slurm-hang.XXXXXX")
  chmod 0755 "$TEST_DIR"
  cd "$TEST_DIR" || return 1
  local name
  for name in $(compgen -e); do
    case $name in
      SLURM_CONF) ;;
      SLURM_* | SLURMD_* | PRIMUS_SLURM_* | OMPI_* | PMIX_* | PET_*) unset "$name" ;;
    esac
  done
  unset MASTER_ADDR MASTER_PORT NNODES NODE_RANK RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE PRIMUS_DRY_RUN
  export HOME=$TEST_DIR/home
  mkdir -p "$HOME" "$TEST_DIR/out"
  export PRIMUS_WORKSPACE=$TEST_DIR/workspace
  export PRIMUS_LOG_COLOR=0 PRIMUS_LOG_TIMESTAMP=0 GPUS_PER_NODE=2 PRIMUS_ACCELERATOR=cpu
  export PRIMUS_SYSFS_ROOT=$TEST_DIR/sysfs PRIMUS_DEV_ROOT=$TEST_DIR/dev
  mkdir -p "$PRIMUS_SYSFS_ROOT" "$PRIMUS_DEV_ROOT"
  export PRIMUS_WORKLOAD_PYTHON=$REPO_ROOT/.venv/bin/python
  export MASTER_PORT=$((23000 + (RANDOM % 2000) * 2))
}

teardown() {
  scancel --user=root --full 2>/dev/null || true
  local i
  for ((i = 0; i < 300; i++)); do
    [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
    sleep 0.1
  done
  [[ -z ${TEST_DIR:-} ]] || rm -rf "$TEST_DIR"
}

merged_summary() {
  grep -q "run monitor: stacks across 2 node(s), 2 bundle(s) found" "$TEST_DIR/job.out" &&
    grep -q "SUSPECT rank 3 (node 1 node2): stuck_here (hang_rank.py:[0-9]*)" "$TEST_DIR/job.out"
}

@test "hang: 2-node job, rank 3 on the second node hangs: slurm stacks, and within 60 s the run monitor's table across nodes names node 1 (node2) and rank 3" {
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
  ls "$PRIMUS_WORKSPACE"/logs/primus-*-node0.hang-1/rank-0.txt "$PRIMUS_WORKSPACE"/logs/primus-*-node1.hang-1/rank-3.txt
  grep -q "stuck_here" "$PRIMUS_WORKSPACE"/logs/primus-*-node1.hang-1/rank-3.txt
  # slurm stacks gives each node's run monitor verdict beside the stacks.
  run timeout 120 "$PRIMUS_CLI" slurm stacks "$job"
  echo "$output"
  assert_success
  assert_output --regexp "run monitor of node 1 \(node2\): hang: rank 3 \(pid [0-9]+\) in stuck_here"
}
