#!/usr/bin/env bats
# Every helper process of a launch is watched: kill -9 of the run monitor (the
# writer of the console, the log and every rank's file, and the parent-death
# guard) while a 2-rank job prints 40 lines per rank: the launcher names it and
# starts another (a SIGCHLD trap, runner/lib/watchdog.sh), which takes every
# pipe over; the console, the log and the rank files hold all 80 lines. Before
# the log file is known, the two tee copies of the early spool: the launcher
# names a dead one and the last line says what the log lacks.

bats_require_minimum_version 1.5.0

setup() {
  load helpers/launcher
  launcher_setup
  export GPUS_PER_NODE=2
  printf '%s\n' 'import os, time' 'r = os.environ.get("RANK", "0")' \
    'for i in range(40):' '    print(f"rank {r} line {i}", flush=True)' '    time.sleep(0.25)' >"$TEST_DIR/forty.py"
}

teardown() {
  [[ -z ${LAUNCHER:-} ]] || kill -TERM "$LAUNCHER" 2>/dev/null || true
  launcher_teardown
}

# helper_pid WHICH: the pid of one helper of this test's launch.
helper_pid() {
  case $1 in
    monitor) pgrep -f -- "primus_runner.monitor $PRIMUS_WORKSPACE/" | head -n1 ;;
  esac
}

# kill_helper WHICH NOTICE: start the job, kill WHICH once the ranks print,
# time how long until the console shows NOTICE (NOTICED_AFTER, seconds), wait
# for the launcher; STATUS, OUT.
kill_helper() {
  OUT=$TEST_DIR/$1.out
  "$PRIMUS_CLI" direct --script "$TEST_DIR/forty.py" >"$OUT" 2>&1 &
  LAUNCHER=$!
  poll_until 60 grep -q "rank 1 line 4" "$OUT"
  local pid
  pid=$(helper_pid "$1")
  [[ -n $pid ]]
  local start=$EPOCHREALTIME
  kill -KILL "$pid"
  poll_until 10 grep -q "$2" "$OUT"
  NOTICED_AFTER=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  echo "noticed after $NOTICED_AFTER s"
  STATUS=0
  wait "$LAUNCHER" || STATUS=$?
  LAUNCHER=""
  cat "$OUT"
}

# noticed_within S: the notice came within S seconds of the kill (a 1 s look,
# plus the poll's own 0.1 s and a busy machine's slack).
noticed_within() {
  awk -v n="$NOTICED_AFTER" -v s="$1" 'BEGIN { exit !(n <= s) }'
}

# deaf_ranks_gone: no process runs deaf.py ([f]: pgrep must not match a shell
# whose command line holds the pattern).
deaf_ranks_gone() {
  ! pgrep -f -- "$TEST_DIR/dea[f].py" >/dev/null
}

lines_in() {
  grep -c "rank [01] line" "$1" || true
}

log_of() {
  echo "$PRIMUS_WORKSPACE"/logs/primus-*-node0.log
}

@test "kill -9 of the run monitor: named within a second by the launcher and restarted; the run and its 80 lines go on, exit 0" {
  kill_helper monitor "run monitor: the run monitor (pid [0-9]*) died"
  noticed_within 2
  [[ $STATUS -eq 0 ]]
  [[ $(lines_in "$OUT") -eq 80 && $(lines_in "$(log_of)") -eq 80 ]]
  grep -q "run monitor: the run monitor (pid [0-9]*) died (killed by SIGKILL: kill -9 or the OOM killer; sender unknown): no verdict and no parent-death guard while it was gone, and the run's lines waited in their pipes; restarted it (pid [0-9]*), which took the run's output over (restart 1 of this run)" "$OUT"
  local rank
  for rank in 0 1; do
    [[ $(grep -c "rank $rank line" "$PRIMUS_WORKSPACE"/logs/*.ranks/rank-$rank.log) -eq 40 ]]
  done
  grep -q "INFO\] workload finished successfully" "$OUT"
  # The restart runs inside the SIGCHLD trap: no bash warning about the trap.
  run grep -c "run_pending_traps\|trap_list" "$OUT"
  assert_output 0 || { grep -n "run_pending_traps\|trap_list" "$OUT"; false; }
  # The restarted monitor ended with the launch: nothing of the run is left.
  run pgrep -f -- "primus_runner.monitor $PRIMUS_WORKSPACE/"
  assert_failure
}

@test "kill -9 of the run monitor, then of the launcher: the restarted monitor is the guard; a rank that ignores SIGTERM is killed after the grace" {
  export PRIMUS_KILL_GRACE=2
  printf '%s\n' 'import os, signal, time' 'signal.signal(signal.SIGTERM, signal.SIG_IGN)' \
    'r = os.environ["RANK"]' 'print(f"rank {r} up", flush=True)' 'time.sleep(300)' >"$TEST_DIR/deaf.py"
  local out=$TEST_DIR/guard.out
  "$PRIMUS_CLI" direct --script "$TEST_DIR/deaf.py" >"$out" 2>&1 &
  LAUNCHER=$!
  poll_until 60 grep -q "rank 1 up" "$out"
  local old new
  old=$(helper_pid monitor)
  [[ -n $old ]]
  kill -KILL "$old"
  poll_until 10 grep -q "restarted it (pid [0-9]*)" "$out"
  new=$(helper_pid monitor)
  [[ -n $new && $new != "$old" ]]
  kill -KILL "$LAUNCHER"
  wait "$LAUNCHER" || true
  local launcher=$LAUNCHER
  LAUNCHER=""
  poll_until 30 grep -q "stop: launcher pid $launcher died" "$out"
  cat "$out"
  grep -q "the launcher (pid $launcher) is gone (killed: SIGKILL or the OOM killer; sender unknown): its workload got SIGTERM; SIGKILL after 2 s" "$out"
  grep -qE "stop: launcher pid $launcher died; [0-9]+ process\(es\) of the run stopped \(SIGTERM from the parent-death signal\), killed after the 2 s grace: .*\(python" "$out"
  # Nothing of the run is left, the guard included.
  poll_until 10 deaf_ranks_gone
  run pgrep -f -- "primus_runner.monitor $PRIMUS_WORKSPACE/"
  assert_failure
}

@test "kill -9 of the run monitor five times while the ranks print: restarted every time, each successor takes every rank's pipe over; all 80 lines everywhere, exit 0" {
  OUT=$TEST_DIR/five.out
  "$PRIMUS_CLI" direct --script "$TEST_DIR/forty.py" >"$OUT" 2>&1 &
  LAUNCHER=$!
  poll_until 60 grep -q "rank 1 line 2" "$OUT"
  local n pid
  for n in 1 2 3 4 5; do
    pid=$(helper_pid monitor)
    [[ -n $pid ]]
    kill -KILL "$pid"
    poll_until 10 grep -q "restarted it (pid [0-9]*), which took the run's output over (restart $n of this run)" "$OUT"
  done
  STATUS=0
  wait "$LAUNCHER" || STATUS=$?
  LAUNCHER=""
  cat "$OUT"
  [[ $STATUS -eq 0 ]]
  [[ $(lines_in "$OUT") -eq 80 && $(lines_in "$(log_of)") -eq 80 ]]
  local rank
  for rank in 0 1; do
    [[ $(grep -c "rank $rank line" "$PRIMUS_WORKSPACE"/logs/*.ranks/rank-$rank.log) -eq 40 ]]
  done
  grep -q "INFO\] workload finished successfully" "$OUT"
}

# Before the log file is known (the configuration, the hooks), the launcher's
# stdout and stderr are copied to a spool by two tee processes
# (runner/lib/common.sh, primus_log_spool_start). One is killed during a hook:
# the launcher names it at its next line, keeps writing to the console, and the
# log and the last line say that the log lacks some of the launcher's lines.
spool_copy_killed() {
  mkdir -p "$TEST_DIR/hooks"
  printf '%s\n' "touch '$TEST_DIR/hook.started'" \
    "while [ ! -e '$TEST_DIR/hook.go' ]; do sleep 0.1; done" 'echo "hook: done"' >"$TEST_DIR/hooks/01_wait.sh"
  OUT=$TEST_DIR/spool.out
  PRIMUS_HOOKS_DIR=$TEST_DIR/hooks "$PRIMUS_CLI" direct --script "$TEST_DIR/forty.py" >"$OUT" 2>&1 &
  LAUNCHER=$!
  poll_until 60 test -e "$TEST_DIR/hook.started" || { cat "$OUT"; false; }
  local -a tees=()
  mapfile -t tees < <(pgrep -P "$LAUNCHER" -x tee)
  ((${#tees[@]} == 2))
  local pid=${tees[$1]}
  kill -KILL "$pid"
  touch "$TEST_DIR/hook.go"
  STATUS=0
  wait "$LAUNCHER" || STATUS=$?
  LAUNCHER=""
  cat "$OUT"
  [[ $STATUS -eq 0 ]]
  local notice="the launcher's copy of its console to the log (pid $pid) died at "
  [[ $(grep -cF "$notice" "$OUT") -eq 1 ]]
  grep -qF "$notice" "$(log_of)"
  grep -q "workload finished successfully (exit code 0), but the log lacks some of the launcher's own lines" "$OUT"
  run ! grep -q "\[INFO\] workload finished successfully" "$OUT"
  [[ $(lines_in "$OUT") -eq 80 ]]
  [[ $(lines_in "$(log_of)") -eq 80 ]]
}

@test "kill -9 of the early stdout copy (tee, during a hook): named once, the run goes on, the log and the last line say what the log lacks, exit 0" {
  spool_copy_killed 0
}

@test "kill -9 of the early stderr copy (tee, during a hook): named once, the run goes on, the log and the last line say what the log lacks, exit 0" {
  spool_copy_killed 1
}

@test "a run monitor that dies at its start, 5 times in a row: the launcher says nothing writes the run's output and stops the run (exit 143)" {
  # A real process that cannot start (exit 1 at once) in the monitor's place;
  # it notes the arguments it was started with.
  printf '#!/bin/sh\necho "$*" >>"%s"\nexit 1\n' "$TEST_DIR/starts" >"$TEST_DIR/python"
  chmod +x "$TEST_DIR/python"
  run bash -c '
    source "$1/runner/lib/common.sh"
    source "$1/runner/lib/supervise.sh"
    exec 3>&1 4>&2
    PRIMUS_PYTHON=$2
    primus_run_prepare single "$3/run.log" 1
    for ((i = 0; i < 100; i++)); do sleep 0.1; done
    echo "not stopped"' _ "$REPO_ROOT" "$TEST_DIR/python" "$TEST_DIR"
  assert_failure 143
  assert_output --partial "run monitor: the run monitor (pid "
  assert_output --partial "the 5th time in a row within a second of its start: nothing writes the run's output (console, log, rank files) nor watches it, so the run is stopped."
  refute_output --partial "not stopped"
  [[ $(wc -l <"$TEST_DIR/starts") -eq 5 ]]
  grep -q -- "^-m primus_runner.monitor $TEST_DIR/run.log [0-9]*-[0-9]*-[0-9]* 1800 report [0-9]* single 10$" "$TEST_DIR/starts"
}

@test "a run monitor that dies at its start while the workload runs: the run is stopped (exit 143) with its closing line, and bash prints no trap warning" {
  # The run monitor cannot start (exit 1 at once, as on a Python without a
  # module it needs); every other use of the interpreter is the real one.
  local real
  real=$(command -v python3)
  cat >"$TEST_DIR/python" <<EOF
#!/bin/sh
[ "\$1 \$2" = "-m primus_runner.monitor" ] && { echo x >>"$TEST_DIR/starts"; exit 1; }
exec "$real" "\$@"
EOF
  chmod +x "$TEST_DIR/python"
  run bash -c '
    source "$1/runner/lib/common.sh"
    source "$1/runner/lib/supervise.sh"
    exec 3>&1 4>&2
    PRIMUS_PYTHON=$2 PRIMUS_KILL_GRACE=3
    primus_run_prepare single "$3/run.log" 1
    primus_run_workload sleep 30
    echo "not stopped"' _ "$REPO_ROOT" "$TEST_DIR/python" "$TEST_DIR"
  assert_failure 143
  assert_output --partial "the 5th time in a row within a second of its start"
  assert_output --partial "stop: SIGTERM"
  assert_output --partial "exit status 143"
  refute_output --partial "warning:"
  refute_output --partial "not stopped"
  [[ $(wc -l <"$TEST_DIR/starts") -eq 5 ]]
}
