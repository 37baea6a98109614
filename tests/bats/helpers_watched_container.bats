#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; LAUNCHER is per test
# Every helper process of a container launch is watched (the host side; the
# inner direct's helpers are tests/bats/helpers_watched.bats). A real podman
# 2-rank launch (tests/bats/helpers/podman.bash), 40 lines per rank:
# - kill -9 of the container watcher (supervise watch-container): the
#   launcher names it within a second and restarts it; a kill -9 of the
#   launcher afterwards still stops and removes the container.
# - kill -9 of the runtime client (podman run): named within a second; the
#   output goes on through `podman logs --follow`, the exit code through
#   `podman wait`: every line on the console, exit 0.

load helpers/podman  # and helpers/launcher; setup_file: podman ready, or a loud failure

setup() {
  podman_suite_setup
  NAME=pwatch$$x$RANDOM
  printf '%s\n' 'import os, time' 'r = os.environ.get("RANK", "0")' \
    'for i in range(40):' '    print(f"rank {r} line {i}", flush=True)' '    time.sleep(0.25)' >"$PWD/forty.py"
}

teardown() {
  if [[ -n ${LAUNCHER:-} ]] && kill -0 "$LAUNCHER" 2>/dev/null; then
    kill -TERM "$LAUNCHER" 2>/dev/null || true
    wait "$LAUNCHER" 2>/dev/null || true
  fi
  podman ps -a -q --filter "name=^$NAME-" | xargs -r podman rm -f >/dev/null 2>&1 || true
  launcher_teardown
}

# start_launch: the 2-rank container launch in the background (LAUNCHER),
# console in launch.log, until the ranks print.
start_launch() {
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) PRIMUS_KILL_GRACE=8 \
    "$PRIMUS_CLI" container --name "$NAME" -- --script "$PWD/forty.py" >launch.log 2>&1 &
  LAUNCHER=$!
  poll_until 120 grep -q "rank 1 line 4" launch.log || { cat launch.log; false; }
}

# kill_noticed PID NOTICE: kill -9 PID; NOTICED_AFTER = seconds until the
# console shows NOTICE (10 s at most).
kill_noticed() {
  local start=$EPOCHREALTIME
  kill -KILL "$1"
  poll_until 10 grep -q "$2" launch.log || { cat launch.log; false; }
  NOTICED_AFTER=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  echo "noticed after $NOTICED_AFTER s"
  awk -v n="$NOTICED_AFTER" 'BEGIN { exit !(n <= 2) }'
}

no_container() {
  [[ -z $(podman ps -a -q --filter "name=^$NAME-") ]]
}

no_rank() {
  ! pgrep -f "$PWD/forty.py" >/dev/null
}

@test "kill -9 of the container watcher: named within a second and restarted; a kill -9 of the launcher afterwards still stops and removes the container" {
  start_launch
  local watcher
  watcher=$(pgrep -P "$LAUNCHER" -f "supervise watch-container")
  [[ $watcher =~ ^[0-9]+$ ]]
  kill_noticed "$watcher" "the container watcher (supervise watch-container, pid $watcher) died (killed by SIGKILL"
  grep -q "a kill -9 of this launcher would have left container $NAME-[^ ]* running; restarted it (pid [0-9]*)" launch.log
  # The restart runs inside the SIGCHLD trap: no bash warning about the trap.
  run grep -c "run_pending_traps\|trap_list" launch.log
  assert_output 0 || { grep -n "run_pending_traps\|trap_list" launch.log; false; }
  local again
  again=$(sed -n 's/.*restarted it (pid \([0-9]*\)).*/\1/p' launch.log)
  process_running "$again"
  [[ $(pgrep -P "$LAUNCHER" -f "supervise watch-container") == "$again" ]]
  kill -KILL "$LAUNCHER"
  wait "$LAUNCHER" || true
  poll_until 30 no_container || { cat launch.log; podman ps -a; false; }
  poll_until 10 no_rank
  poll_until 10 grep -q "stop: container launcher pid $LAUNCHER died; container $NAME-[^ ]* stopped within the 8 s grace and removed" launch.log ||
    { cat launch.log; false; }
  LAUNCHER=""
}

@test "kill -9 of the runtime client (podman run): named within a second; every line still reaches the console, the container's exit code is the launcher's" {
  start_launch
  local client
  client=$(pgrep -P "$LAUNCHER" -f "podman run")
  [[ $client =~ ^[0-9]+$ ]]
  kill_noticed "$client" "the runtime client (podman run, pid $client) died (killed by SIGKILL"
  status=0
  wait "$LAUNCHER" || status=$?
  LAUNCHER=""
  cat launch.log
  [[ $status -eq 0 ]]
  grep -q "following it from .* (its log file, pid [0-9]*: the lines of that second may show twice)" launch.log
  # Every line at least once (the second before the client died may repeat).
  [[ $(grep -o "rank [01] line [0-9]*" launch.log | sort -u | wc -l) -eq 80 ]]
  grep -q "container $NAME-[^ ]* exited with code 0 (podman wait)" launch.log
  grep -q "INFO\] workload finished successfully" launch.log
  no_container
}
