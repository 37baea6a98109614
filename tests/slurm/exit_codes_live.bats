#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; exports are per test
# docs/exit-codes.md "Exit codes", one test per row, through the Slurm entry points on the
# live cluster (tests/slurm/run.sh): `primus-cli slurm srun`, `primus-cli slurm
# sbatch` (its job's status, sbatch --wait) and the Slurm entry under a plain
# srun. Two nodes, 2 processes each (CPU, gloo). srun --kill-on-bad-exit ends
# the other tasks with SIGKILL once one fails, and srun returns the highest
# status: the launcher's own calls report the status of the task that ended
# first (runner/helpers/step_exit.sh). `direct` and `container` hold the same
# rows in tests/bats/exit_codes.bats (row 86 of direct: tests/bats/hang.bats).

# REPO_ROOT, PRIMUS_CLI, ENTRY, WORKLOADS, bats-support/-assert and the
# cluster_* set-up (it keeps PRIMUS_SLURM_DIR: a TaskProlog file of it makes
# one node differ).
load helpers/cluster

setup_file() {
  cluster_require
}

setup() {
  cluster_setup slurm-exit PRIMUS_HOOKS_DIR
  cluster_cpu_nodes
}

teardown() {
  rm -f "$PRIMUS_SLURM_DIR/etc/task_env/node2"
  cluster_teardown
}

# two CODE -- DIRECT_ARGS...: primus-cli slurm srun -N 2 and primus-cli slurm
# sbatch -N 2 --wait each end with CODE (SRUN_OUTPUT: the srun call's output).
two() {
  local code=$1
  shift 2
  run timeout 300 "$PRIMUS_CLI" slurm srun -N 2 -- direct "$@"
  echo "slurm srun: exit $status" && echo "$output"
  [[ $status -eq $code ]]
  SRUN_OUTPUT=$output
  run timeout 300 "$PRIMUS_CLI" slurm sbatch -N 2 --wait -o "$TEST_DIR/job-%j.out" -- direct "$@"
  echo "slurm sbatch: exit $status" && echo "$output" && cat "$TEST_DIR"/job-*.out
  [[ $status -eq $code ]]
  rm -f "$TEST_DIR"/job-*.out
}

# three CODE -- DIRECT_ARGS...: primus-cli slurm srun -N 2, primus-cli slurm
# sbatch -N 2 --wait and a plain srun -N 2 of the entry (--kill-on-bad-exit=0,
# else KILL_ON_BAD_EXIT: srun's status is then the highest of the tasks) each
# end with CODE.
three() {
  two "$@"
  local code=$1
  shift 2
  run timeout 300 srun -N 2 --ntasks-per-node=1 "--kill-on-bad-exit=${KILL_ON_BAD_EXIT:-0}" "$ENTRY" direct "$@"
  echo "srun of the entry: exit $status" && echo "$output"
  [[ $status -eq $code ]]
  # No records directory is left in the workspace.
  [[ -z $(find "$PRIMUS_WORKSPACE" -maxdepth 1 -name '.primus-step-exits.*') ]]
}

@test "exit 0: the workload succeeded on both nodes" {
  three 0 -- --script "$WORKLOADS/exit_with.py" -- 0
}

@test "exit 1: the --script file is missing, nothing started" {
  three 1 -- --script "$TEST_DIR/no_such_script.py"
}

@test "exit 2: refused by the cluster check (node2's NCCL_ALGO differs), nothing started" {
  echo 'export NCCL_ALGO=Ring' >"$PRIMUS_SLURM_DIR/etc/task_env/node2"
  three 2 -- --script "$WORKLOADS/exit_with.py" -- 0
  assert_output --partial "cluster check FAILED"
}

@test "exit 3: a failing hook on every node, nothing started" {
  mkdir hooks
  printf '#!/bin/bash\necho "hook says no" >&2\nexit 1\n' >hooks/01_fail.sh
  chmod +x hooks/01_fail.sh
  export PRIMUS_HOOKS_DIR=$TEST_DIR/hooks
  # Repeated: which node's hook ends first, and what srun kills, varies.
  for _ in 1 2; do
    three 3 -- --script "$WORKLOADS/exit_with.py" -- 0
  done
  assert_output --partial "hook says no"
}

@test "exit 86: the run monitor stops a hang on node2 (PRIMUS_HANG_ACTION=stop); srun kills node1, 86 decides" {
  mkdir out
  export HANG_RANK=3 PRIMUS_HANG_ACTION=stop
  # node1's ranks wait in all_reduce for rank 3: a plain srun of the entry
  # would end them only with --kill-on-bad-exit, as srun's own 137.
  two 86 -- --script "$WORKLOADS/hang_rank.py" -- "$TEST_DIR/out" hang
  [[ $SRUN_OUTPUT == *"PRIMUS_HANG_ACTION=stop: stopping the run on the hang verdict"* ]]
  [[ $SRUN_OUTPUT == *"ended first, its launcher with exit status 86"* ]]
}

@test "other: the workload's own code (7), also when only global rank 3 (node2) fails and srun kills node1" {
  three 7 -- --script "$WORKLOADS/exit_with.py" -- 7
  # The other node's ranks end at once and its torchrun waits for node2's at
  # exit: srun's --kill-on-bad-exit ends it (137), the first task's 7 decides.
  two 7 -- --script "$WORKLOADS/exit_with.py" -- 7 3
  [[ $SRUN_OUTPUT == *"srun exit status 137 is that of the tasks srun ended after the first failure: task 1 (node 1, node2) ended first, its launcher with exit status 7"* ]]
}

@test "128+N: global rank 3 killed by SIGKILL: 137" {
  # The other node's ranks wait (60 s) for a stop: srun ends them.
  KILL_ON_BAD_EXIT=1 three 137 -- --script "$WORKLOADS/kill_self.py" -- 3
}
