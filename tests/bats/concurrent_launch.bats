#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; exports are per test
# Launches side by side on one host: a single-node launch with no MASTER_PORT
# picks a free port (python/primus_runner/cluster/rendezvous.py) instead of the
# reference's 1234, outside the kernel's ephemeral range; multi-node launches
# keep 1234; a MASTER_PORT inside the ephemeral range is warned about (rule
# master_port_ephemeral) by env check and the launch alike.

bats_require_minimum_version 1.5.0

setup() {
  load helpers/launcher
  launcher_setup
  export GPUS_PER_NODE=2
  mkdir out
}

teardown() {
  launcher_teardown
}

# ephemeral_tree LOW HIGH [RESERVED]: a fixture /proc under PRIMUS_SYSFS_ROOT.
ephemeral_tree() {
  mkdir -p "$PRIMUS_SYSFS_ROOT/proc/sys/net/ipv4"
  printf '%s\t%s\n' "$1" "$2" >"$PRIMUS_SYSFS_ROOT/proc/sys/net/ipv4/ip_local_port_range"
  printf '%s\n' "${3:-}" >"$PRIMUS_SYSFS_ROOT/proc/sys/net/ipv4/ip_local_reserved_ports"
}

@test "four single-node launches at once with no MASTER_PORT: all exit 0, each on its own free port" {
  local i
  local -a pids=()
  for i in 1 2 3 4; do
    mkdir "out/$i"
    "$PRIMUS_CLI" direct --log_file "$TEST_DIR/run$i.log" --script "$WORKLOADS/print_env.py" \
      -- "$PWD/out/$i" MASTER_PORT >"$TEST_DIR/console$i" 2>&1 &
    pids+=($!)
  done
  local -a codes=()
  for i in 0 1 2 3; do
    wait "${pids[$i]}" && codes+=(0) || codes+=($?)
  done
  for i in 1 2 3 4; do
    echo "--- launch $i (exit ${codes[$((i - 1))]})"
    cat "$TEST_DIR/console$i"
  done
  [[ ${codes[*]} == "0 0 0 0" ]]
  local -a ports=()
  for i in 1 2 3 4; do
    # Both ranks of a launch saw the same port, the one the launch announced.
    port=$(<"out/$i/MASTER_PORT.0")
    [[ $(<"out/$i/MASTER_PORT.1") == "$port" && $port != 1234 ]]
    grep -q -- "--master_port $port " "$TEST_DIR/console$i"
    grep -q "MASTER_PORT=$port: a free port for this single-node launch" "$TEST_DIR/console$i"
    ports+=("$port")
  done
  [[ $(printf '%s\n' "${ports[@]}" | sort -u | wc -l) == 4 ]]
}

@test "the picked port lies outside the ephemeral range; dry run and launch say where it came from" {
  ephemeral_tree 21000 65000
  run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_success
  port=$(sed -n 's/.*--master_port \([0-9]*\) .*/\1/p' <<<"$output")
  [[ -n $port && $port -ge 20000 && $port -lt 21000 || $port -gt 65000 ]]
  assert_output --partial "MASTER_PORT=$port: a free port for this single-node launch"
  refute_output --partial "[env check]"
}

@test "multi-node, a scheduler or the user's own value keep their port; the system config's 1234 does not count" {
  NNODES=2 MASTER_ADDR=127.0.0.1 run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "--master_port 1234 "
  refute_output --partial "a free port for this single-node launch"
  MASTER_PORT=29517 run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_output --partial "--master_port 29517 "
  printf 'direct:\n  master_port: 29533\n' >"$HOME/.primus.yaml"
  run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_output --partial "--master_port 29533 "
  rm "$HOME/.primus.yaml"
  # A one-node Slurm step: the job-derived port (scheduler/variables.py), not a picked one.
  SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_NNODES=1 SLURM_NODELIST=localhost SLURM_NODEID=0 SLURM_PROCID=0 \
    run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "--master_port $((10000 + 2 * ((16 * 77) % 11384))) "
}

@test "MASTER_PORT 40000 in the ephemeral range 32768-60999: the same warning from env check and the launch" {
  ephemeral_tree 32768 60999
  export MASTER_PORT=40000
  run --separate-stderr "$PRIMUS_CLI" env check
  assert_success
  check_line=$(grep 'master_port\|MASTER_PORT=' <<<"$stderr" | grep WARNING)
  [[ $check_line == *"MASTER_PORT='40000': lies in this host's ephemeral port range 32768-60999"* ]]
  [[ $check_line == *"Fix: export MASTER_PORT=29500 (any free port outside 32768-60999)"* ]]
  run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "$check_line"
  run "$PRIMUS_CLI" env explain master_port_ephemeral
  assert_success
  assert_output --partial "severity:    warning"
  # Reserved, outside the range, or single mode on one node (no rendezvous): no warning.
  ephemeral_tree 32768 60999 "39000-41000"
  run "$PRIMUS_CLI" env check
  refute_output --partial "ephemeral"
  ephemeral_tree 32768 60999
  MASTER_PORT=29500 run "$PRIMUS_CLI" env check
  refute_output --partial "ephemeral"
  run "$PRIMUS_CLI" direct --dry-run --single --module primus_runner -- preflight
  assert_success
  refute_output --partial "ephemeral"
}
