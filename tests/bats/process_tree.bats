#!/usr/bin/env bats
# The process tree of a running launch (ps --forest): between the launcher and
# each rank at most two processes of ours (torchrun, in spawn.py, and the
# rank's run_worker.sh), and no process of the run re-parented to init (each
# rank's log writer is kept under torchrun, a child subreaper).

setup() {
  load helpers/launcher
  launcher_setup
  OUT=$TEST_DIR/out
  mkdir -p "$OUT"
}

teardown() {
  [[ -z ${LAUNCHER:-} ]] || kill -TERM "$LAUNCHER" 2>/dev/null || true
  [[ -z ${LAUNCHER:-} ]] || wait "$LAUNCHER" 2>/dev/null || true
  launcher_teardown
}

ppid_of() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  read -r _ ppid _ <<<"$stat"
  echo "$ppid"
}

# check_tree NPROC: launch NPROC ranks that wait, then check the tree.
check_tree() {
  local n=$1 rank pid hops
  GPUS_PER_NODE=$n MASTER_PORT=$(free_port) HANG_RANK=99 \
    "$PRIMUS_CLI" direct --script "$WORKLOADS/monitor_cases.py" -- "$OUT" stoppable 20 >"$TEST_DIR/launch.out" 2>&1 &
  LAUNCHER=$!
  poll_until 120 test -f "$OUT/ready.$((n - 1))" || { cat "$TEST_DIR/launch.out"; false; }
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
  # directories (launcher's log writers, monitor, ranks), and the rank log
  # writers, which hold a rank's file under it open: none has parent 1.
  local -a ours=()
  mapfile -t ours < <(pgrep -f -- "$TEST_DIR")
  for pid in $(pgrep -f -- "logwriter.py --log-fd"); do
    find "/proc/$pid/fd" -lname "$TEST_DIR/*" 2>/dev/null | grep -q . && ours+=("$pid")
  done
  echo "processes of the run found: ${#ours[@]}"
  ((${#ours[@]} >= n + 2))
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
