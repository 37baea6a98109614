#!/usr/bin/env bats
# The process tree of a running launch (ps --forest): between the launcher and
# each rank at most two processes of ours (torchrun, in spawn.py, and the
# rank's run_worker.sh), no process of the run re-parented to init, and no
# writer process per rank: the node's run monitor writes every rank's file.

bats_require_minimum_version 1.5.0

setup() {
  load helpers/launcher
  launcher_setup
  OUT=$TEST_DIR/out
  mkdir -p "$OUT"
}

teardown() {
  [[ -z ${LAUNCHER:-} ]] || kill -TERM "$LAUNCHER" 2>/dev/null || true
  [[ -z ${LAUNCHER:-} ]] || wait "$LAUNCHER" 2>/dev/null || true
  [[ -z ${TEST_DIR:-} ]] || kill_marked "$TEST_DIR"
  launcher_teardown
}

ppid_of() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  read -r _ ppid _ <<<"$stat"
  echo "$ppid"
}

# all_ready N: every rank 0..N-1 has written its pid to ready.<RANK> (the
# ranks write theirs in any order).
all_ready() {
  local rank
  for ((rank = 0; rank < $1; rank++)); do
    [[ -s $OUT/ready.$rank ]] || return 1
  done
}

# check_tree NPROC: launch NPROC ranks that wait, then check the tree.
check_tree() {
  local n=$1 rank pid hops
  GPUS_PER_NODE=$n MASTER_PORT=$(free_port) HANG_RANK=99 \
    "$PRIMUS_CLI" direct --script "$WORKLOADS/monitor_cases.py" -- "$OUT" stoppable 20 >"$TEST_DIR/launch.out" 2>&1 &
  LAUNCHER=$!
  poll_until 120 all_ready "$n" || { cat "$TEST_DIR/launch.out"; false; }
  # The launcher is primus-cli's exec: runner/primus-cli-direct.sh keeps LAUNCHER's pid.
  ps -o pid,ppid,args --forest -g "$(ps -o sid= -p "$LAUNCHER" | tr -d ' ')" | cut -c1-160
  for ((rank = 0; rank < n; rank++)); do
    pid=$(cat "$OUT/ready.$rank")
    hops=0
    while pid=$(ppid_of "$pid") && [[ $pid != "$LAUNCHER" && $pid != 1 ]]; do
      hops=$((hops + 1))
    done
    echo "rank $rank: $hops process(es) between it and the launcher"
    [[ $pid == "$LAUNCHER" ]]
    ((hops <= 2))
  done
  # Every process of the run: those whose command line names this test's
  # directories (launcher's log writers, monitor, ranks), and any process
  # holding a file under them open: none has parent 1.
  local -a ours=()
  mapfile -t ours < <(pgrep -f -- "$TEST_DIR")
  for pid in $(pgrep -f -- "python"); do
    find "/proc/$pid/fd" -lname "$TEST_DIR/*" 2>/dev/null | grep -q . && ours+=("$pid")
  done
  echo "processes of the run found: ${#ours[@]}"
  ((${#ours[@]} >= n + 2))
  # The ranks' files are written by the one run monitor, not a process per rank.
  local writers
  writers=$(find /proc/[0-9]*/fd -lname "$TEST_DIR/*.ranks/*.log" 2>/dev/null | cut -d/ -f3 | sort -u) || true
  echo "processes writing the ranks' files: ${writers//$'\n'/ }"
  local monitor
  monitor=$(pgrep -f -- "primus_runner.monitor $TEST_DIR/")
  [[ -n $monitor && $writers == *"$monitor"* ]]
  run ! pgrep -f -- "logwriter.py"
  for pid in "${ours[@]}"; do
    [[ $(ppid_of "$pid") != 1 ]] || { echo "pid $pid: parent 1: $(tr '\0' ' ' <"/proc/$pid/cmdline")"; false; }
  done
  status=0
  wait "$LAUNCHER" || status=$?
  LAUNCHER=""
  [[ $status -eq 0 ]] || { cat "$TEST_DIR/launch.out"; false; }
}

@test "2 ranks: at most two processes of ours between the launcher and each rank, none re-parented to init" {
  check_tree 2
}

@test "4 ranks: at most two processes of ours between the launcher and each rank, none re-parented to init" {
  check_tree 4
}

# kill_run_process: start a 2-rank run, SIGKILL the run's own process
# (torchrun, in spawn.py) once every rank is ready; nothing of the run may be
# left, and the caller sees exit 137 naming it. (In run mode single spawn.py
# execs the workload: nothing of ours stands between the launcher and it.)
kill_run_process() {
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) HANG_RANK=99 \
    "$PRIMUS_CLI" direct --script "$WORKLOADS/monitor_cases.py" -- "$OUT" stoppable 60 >"$TEST_DIR/launch.out" 2>&1 &
  LAUNCHER=$!
  poll_until 120 all_ready 2 || { cat "$TEST_DIR/launch.out"; false; }
  local spawn
  spawn=$(pgrep -P "$LAUNCHER" -f 'launch/spawn.py')
  [[ $spawn =~ ^[0-9]+$ ]]
  local -a ranks=("$(cat "$OUT/ready.0")" "$(cat "$OUT/ready.1")")
  kill -KILL "$spawn"
  status=0
  wait "$LAUNCHER" || status=$?
  LAUNCHER=""
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 137 ]]
  grep -q "ended with exit code 137 (killed by SIGKILL) while [0-9]* process(es) of the run still ran" "$TEST_DIR/launch.out"
  grep -q "the run was lost with .*pid $spawn.*, not by a rank: exit code 137" "$TEST_DIR/launch.out"
  local pid
  for pid in "${ranks[@]}"; do
    run ! process_running "$pid"
  done
  local left
  left=$(pgrep -f -- "$TEST_DIR") || true
  [[ -z $left ]] || { ps -o pid,ppid,stat,args -p "${left//$'\n'/,}"; false; }
}

@test "kill -9 of torchrun (spawn.py): the ranks are stopped, nothing of the run is left, exit 137 naming it" {
  kill_run_process
}
