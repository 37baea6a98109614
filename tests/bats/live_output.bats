#!/usr/bin/env bats
# shellcheck disable=SC2016 # single-quoted ${rank} is literal test data (torchrun expands it)
# Live output: every line a rank prints reaches the launcher's console and its
# main log within a second, whatever the console is (here a pipe, the case
# that was block-buffered: torchrun's tee wrote the ranks' lines to its
# buffered stdout, and the ranks' Python ran without torchrun's -u, so they
# came in bursts or when the run ended). The meter is
# tests/bats/helpers/live.bash; the container and Slurm suites time the same.

setup() {
  load helpers/launcher
  load helpers/live
  launcher_setup
  # The ranks' and torchrun's buffering as a user's shell has it: this
  # variable would hide the fault.
  unset PYTHONUNBUFFERED
}

teardown() {
  launcher_teardown
}

@test "torchrun, 2 ranks printing without a flush, console piped: each line reaches the console and the log within 1 s (median)" {
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) live_measure "$TEST_DIR/live.log" \
    "$PRIMUS_CLI" direct --log_file "$TEST_DIR/live.log" --script "$WORKLOADS/live_lines.py"
  [[ $LIVE_RC == 0 ]]
  live_assert console.lags 60
  live_assert log.lags 60
  # Whole lines: no echoed line holds half of one rank's line and another's.
  [[ $(grep -cE '^\[default[01]\]:live [0-9.]+ rank[01] line[0-9]+$' console.out) -eq 60 ]]
}

@test "run mode single, flushed lines, console piped: each line reaches the console and the log within 1 s (median)" {
  LIVE_FLUSH=1 live_measure "$TEST_DIR/live.log" \
    "$PRIMUS_CLI" direct --single --log_file "$TEST_DIR/live.log" --script "$WORKLOADS/live_lines.py"
  [[ $LIVE_RC == 0 ]]
  live_assert console.lags 30
  live_assert log.lags 30
}

# Two "nodes" of one job on this machine (NNODES=2, NODE_RANK 0 and 1).
two_nodes() {
  local port n
  port=$(free_port)
  for n in 0 1; do
    NNODES=2 NODE_RANK=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port GPUS_PER_NODE=2 \
      PRIMUS_WORKSPACE=$TEST_DIR/ws$n timeout 120 "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" \
      -- "$TEST_DIR/out$n" TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE >"$TEST_DIR/node$n.out" 2>&1 &
  done
  wait %1 && wait %2
}

@test "two nodes: each echoed line names the global rank ([default3]: on node 1, not torchrun's local [default1]:); the rank's environment does not get the template" {
  mkdir -p "$TEST_DIR/out0" "$TEST_DIR/out1"
  two_nodes || { cat "$TEST_DIR"/node*.out; false; }
  cat "$TEST_DIR/node1.out"
  grep -q "^\[default3\]:" "$TEST_DIR/node1.out"
  run grep -q "^\[default1\]:" "$TEST_DIR/node1.out"
  assert_failure
  grep -q "^\[default0\]:" "$TEST_DIR/node0.out"
  [[ $(cat "$TEST_DIR/out1/TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE.3") == "<unset>" ]]
}

@test "two nodes, a prefix template of the user's: kept for torchrun and for the ranks" {
  mkdir -p "$TEST_DIR/out0" "$TEST_DIR/out1"
  export TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='<${rank}|${local_rank}>'
  two_nodes || { cat "$TEST_DIR"/node*.out; false; }
  grep -q "^<3|1>" "$TEST_DIR/node1.out"
  [[ $(cat "$TEST_DIR/out1/TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE.3") == '<${rank}|${local_rank}>' ]]
}
