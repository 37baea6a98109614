#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; exports are per test
# docs/exit-codes.md "Exit codes", one test per row, through `direct` and `container` (real
# podman: tests/container/podman_env.bash). The Slurm entry points (`slurm srun`,
# `slurm sbatch`, the Slurm entry) hold the same rows in the live Slurm suite
# (tests/slurm/exit_codes_live.bats); row 86 (the hang watchdog's stop) is
# tests/bats/hang.bats and tests/slurm/hang_live.bats.

bats_require_minimum_version 1.5.0

load helpers/podman  # and helpers/launcher; setup_file: podman ready, or a loud failure

setup() {
  podman_suite_setup
  export GPUS_PER_NODE=2
  mkdir out
}

teardown() {
  launcher_teardown
}

# both CODE ARGS...: `direct ARGS` and `container -- ARGS` each exit with CODE.
both() {
  local code=$1
  shift
  run "$PRIMUS_CLI" direct "$@"
  echo "direct: exit $status" && echo "$output"
  [[ $status -eq $code ]]
  run "$PRIMUS_CLI" container -- "$@"
  echo "container: exit $status" && echo "$output"
  [[ $status -eq $code ]]
}

@test "exit 0: the workload succeeded" {
  both 0 --script "$WORKLOADS/exit_with.py" -- 0
  both 0 --single --script "$WORKLOADS/exit_with.py" -- 0
}

@test "exit 1: something missing (the --script file), nothing started" {
  both 1 --script "$TEST_DIR/work/no_such_script.py"
  assert_output --partial "no_such_script.py"
}

@test "exit 2: a refused variable, nothing started" {
  both 2 --env MASTER_PORT=80 --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  assert_output --partial "MASTER_PORT='80'"
  [[ -z $(ls out) ]]
}

@test "exit 3: a failing hook (its own code 1), nothing started" {
  mkdir hooks
  printf '#!/bin/bash\necho "hook says no" >&2\nexit 1\n' >hooks/01_fail.sh
  chmod +x hooks/01_fail.sh
  export PRIMUS_HOOKS_DIR=$PWD/hooks
  both 3 --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  assert_output --partial "hook says no"
  assert_output --partial "failed with exit code 1"
  [[ -z $(ls out) ]]
}

@test "other: the workload's own exit code, unchanged (torchrun and single)" {
  both 7 --script "$WORKLOADS/exit_with.py" -- 7 1
  both 7 --single --script "$WORKLOADS/exit_with.py" -- 7
}

@test "128+N: a workload killed by signal N (SIGKILL: 137, SIGTERM: 143)" {
  both 137 --script "$WORKLOADS/kill_self.py" -- 1
  both 143 --single --script "$WORKLOADS/kill_self.py" -- 0 15
}
