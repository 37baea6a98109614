#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# primus-cli slurm without a cluster: slurm.signal and slurm.requeue become
# Slurm flags (dry-run output); the entry's summary names the restart. The live
# behaviour is in tests/slurm/slurm_stop.bats.

# REPO_ROOT, SLURM_CLI, ENTRY, bats-support/-assert, launcher_setup and
# unset_scheduler_vars.
load helpers/launcher

setup() {
  launcher_setup
  unset_scheduler_vars
  unset PRIMUS_KILL_GRACE
  printf 'slurm:\n  signal: USR1@90\n  requeue: true\n' >"$TEST_DIR/stop.yaml"
}

teardown() {
  launcher_teardown
}

@test "sbatch: slurm.signal becomes --signal and slurm.requeue --requeue; the batch script marks the job requeueable" {
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/stop.yaml" sbatch -N 2 -- direct --module primus_runner -- preflight
  assert_success
  assert_line "sbatch -N 2 --signal=USR1@90 --requeue --ntasks-per-node=1"
  assert_line "export PRIMUS_SLURM_REQUEUE=1"
}

@test "a --signal or --no-requeue given on the command line beats the configuration" {
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/stop.yaml" sbatch -N 2 --signal=USR2@30 --no-requeue -- direct --module primus_runner -- preflight
  assert_success
  assert_line "sbatch -N 2 --signal=USR2@30 --no-requeue --ntasks-per-node=1"
  refute_output --partial "PRIMUS_SLURM_REQUEUE=1"
}

@test "srun: slurm.signal goes on the srun; slurm.requeue is refused with a warning (srun jobs cannot be requeued)" {
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/stop.yaml" srun -N 2 -- direct --module primus_runner -- preflight
  assert_success
  assert_output --regexp "srun -N 2 --signal=USR1@90 --ntasks-per-node=1 --kill-on-bad-exit=1 .*primus-cli-slurm-entry.sh"
  assert_output --partial "slurm.requeue: true applies to 'primus-cli slurm sbatch' only"
  refute_output --partial -- "--requeue"
}

@test "the entry's step summary says restart N (SLURM_RESTART_COUNT)" {
  SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_NNODES=1 SLURM_NODELIST=n1 \
    SLURM_RESTART_COUNT=2 PRIMUS_SLURM_FIRST_HOST=n1 run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_success
  assert_output --regexp "slurm-entry: job 7 step 0: 1 node\(s\) n1, this is node 0 .*mode direct, restart 2"
}

@test "the entry's own first lines are the first lines of the launcher's log file; no spool is left" {
  export TMPDIR=$TEST_DIR/tmp
  mkdir -p "$TMPDIR"
  SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_NNODES=1 SLURM_NODELIST=localhost \
    PRIMUS_SLURM_FIRST_HOST=localhost run "$ENTRY" direct --single --script "$REPO_ROOT/tests/fixtures/workloads/exit_with.py" -- 0
  assert_success
  local log
  log=$(ls "$PRIMUS_WORKSPACE"/logs/*.log)
  run head -n 1 "$log"
  assert_output --regexp "slurm-entry: job 7 step 0: 1 node\(s\) localhost, this is node 0"
  grep -q "\] stop grace [0-9]* s (" "$log"  # the launcher says the grace it decided from KillWait
  run ls -A "$TMPDIR"
  assert_output ""
}

@test "an entry that stops before the launcher (two tasks on a node) leaves no spool behind" {
  export TMPDIR=$TEST_DIR/tmp
  mkdir -p "$TMPDIR"
  SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_NNODES=1 SLURM_NODELIST=localhost \
    SLURM_NTASKS=2 SLURM_STEP_NUM_TASKS=2 SLURM_TASKS_PER_NODE='2' SLURM_STEP_TASKS_PER_NODE='2' \
    PRIMUS_SLURM_FIRST_HOST=localhost run "$ENTRY" direct --single --script "$REPO_ROOT/tests/fixtures/workloads/exit_with.py" -- 0
  assert_failure 2
  run ls -A "$TMPDIR"
  assert_output ""
}
