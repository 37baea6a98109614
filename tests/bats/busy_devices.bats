#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; exports are per test
# A launch refuses (exit 2, before anything starts) when another process holds
# the accelerators it is about to use, naming pid, user and command; rule
# accelerators_free, PRIMUS_ALLOW_BUSY_DEVICES=1 lets it start. The host trees
# are fixtures (an MI300X node, a trn1.2xlarge) whose proc is the real /proc,
# and the holder is a real process with the tree's device file open.

setup() {
  load helpers/launcher
  launcher_setup
  export GPUS_PER_NODE=1 MASTER_PORT
  MASTER_PORT=$(free_port)
  HOLDER=""
  mkdir out
}

teardown() {
  [[ -z $HOLDER ]] || kill "$HOLDER" 2>/dev/null || true
  launcher_teardown
}

# host_tree FIXTURE: a copy of tests/fixtures/sysfs/FIXTURE as this test's
# PRIMUS_SYSFS_ROOT and PRIMUS_DEV_ROOT, with the real /proc and ROCm's device files.
host_tree() {
  local tree=$TEST_DIR/$1
  cp -r "$REPO_ROOT/tests/fixtures/sysfs/$1" "$tree"
  rm -rf "$tree/proc"
  ln -s /proc "$tree/proc"
  mkdir -p "$tree/dev/dri"
  : >"$tree/dev/kfd"
  : >"$tree/dev/dri/renderD128"
  export PRIMUS_SYSFS_ROOT=$tree PRIMUS_DEV_ROOT=$tree
}

# hold FILE: a process named leftover_train holds FILE open until the test ends.
hold() {
  (exec -a leftover_train "$REPO_ROOT/.venv/bin/python" -c '
import sys, time
handle = open(sys.argv[1])
open(sys.argv[2], "w").close()
time.sleep(300)' "$1" "$TEST_DIR/held") &
  HOLDER=$!
  poll_until 20 test -e "$TEST_DIR/held"
}

@test "ROCm: a process holding /dev/kfd stops the launch with exit 2 before anything starts, naming pid, user and command" {
  host_tree mi300x-2gpu
  hold "$PRIMUS_DEV_ROOT/dev/kfd"
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  assert_failure 2
  assert_output --partial "ERROR PRIMUS_ALLOW_BUSY_DEVICES=(unset): another process holds the accelerators this launch is about to use: pid $HOLDER (user $(id -un): leftover_train -c"
  assert_output --partial ") holds /dev/kfd"
  assert_output --partial "kill $HOLDER"
  assert_output --partial "export PRIMUS_ALLOW_BUSY_DEVICES=1"
  assert_output --partial "nothing was started"
  [[ -z $(ls -A out) ]]
  # env check gives the same verdict; explain names the rule and the way past it.
  run "$PRIMUS_CLI" env check
  assert_failure 2
  assert_output --partial "pid $HOLDER (user $(id -un): leftover_train"
  run "$PRIMUS_CLI" env explain accelerators_free
  assert_success
  assert_output --partial "PRIMUS_ALLOW_BUSY_DEVICES=1"
}

@test "ROCm: a render node held is refused too; PRIMUS_ALLOW_BUSY_DEVICES=1 lets the launch start" {
  host_tree mi300x-2gpu
  hold "$PRIMUS_DEV_ROOT/dev/dri/renderD128"
  run "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  assert_failure 2
  assert_output --partial "pid $HOLDER (user $(id -un): leftover_train"
  assert_output --partial "holds /dev/dri/renderD128"
  PRIMUS_ALLOW_BUSY_DEVICES=1 run "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  assert_success
  refute_output --partial "another process holds"
}

@test "Neuron: a process holding /dev/neuron0 stops the launch with exit 2; no holder, no finding" {
  host_tree trn1.2xlarge
  run "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  refute_output --partial "another process holds"
  hold "$PRIMUS_DEV_ROOT/dev/neuron0"
  run "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  assert_failure 2
  assert_output --partial "pid $HOLDER (user $(id -un): leftover_train"
  assert_output --partial "holds /dev/neuron0"
}
