#!/usr/bin/env bats
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
}

@test "run mode single, flushed lines, console piped: each line reaches the console and the log within 1 s (median)" {
  LIVE_FLUSH=1 live_measure "$TEST_DIR/live.log" \
    "$PRIMUS_CLI" direct --single --log_file "$TEST_DIR/live.log" --script "$WORKLOADS/live_lines.py"
  [[ $LIVE_RC == 0 ]]
  live_assert console.lags 30
  live_assert log.lags 30
}
