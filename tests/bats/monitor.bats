#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# The run monitor's verdicts (python/primus_runner/monitor/) with real torchrun
# (CPU, gloo), real faults (a rank blocked in native code, a rank really
# SIGSTOPped, ranks waiting in different collectives) and no PRIMUS_HANG_*
# setting unless a test says so. The workload is
# tests/fixtures/workloads/monitor_cases.py (each rank writes out/ready.<RANK>).
# hang.bats has the hang verdict itself, the last resort and the stacks.
bats_require_minimum_version 1.5.0

setup() {
  load helpers/launcher
  launcher_setup
  export PRIMUS_KILL_GRACE=5
  unset PRIMUS_HANG_TIMEOUT PRIMUS_HANG_ACTION
  OUT=$TEST_DIR/out
  mkdir -p "$OUT"
  WL=$WORKLOADS/monitor_cases.py
}

teardown() {
  kill_marked "$OUT"
  launcher_teardown
}

no_leftovers() {
  [[ -z $(marked_alive "$OUT") ]]
}

# verdicts FILE: the monitor's verdict lines of a launch's output.
verdicts() {
  grep -E "run monitor: (hang|collective mismatch|stopped|straggler|PRIMUS_HANG_ACTION)" "$1" || true
}

@test "a rank blocked in native code (ctypes pause()): named as the suspect with the Python frame that called it; stop ends the job with 86" {
  status=0
  GPUS_PER_NODE=2 HANG_RANK=1 MASTER_PORT=$(free_port) PRIMUS_HANG_ACTION=stop timeout 150 \
    "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" native >"$TEST_DIR/launch.out" 2>&1 || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 86 ]]
  grep -q "run monitor: hang: rank 1 (pid [0-9]*) in in_native (monitor_cases.py:[0-9]*)" "$TEST_DIR/launch.out"
  grep -q "SUSPECT rank 1: in_native (monitor_cases.py:[0-9]*)" "$TEST_DIR/launch.out"
  # A rank blocked in C without the GIL still dumps its flight recorder (the dump thread).
  grep -q "run monitor: flight recorder: torch's analyzer (fr_trace) on the dumps of rank(s) 0,1 (written [0-9.]* s after the ask): missing ranks 1: " "$TEST_DIR/launch.out"
  poll_until 10 no_leftovers
}

@test "rank 0 in all_reduce, rank 1 in broadcast: 'collective mismatch' naming both ops and lines; stop ends it with 86" {
  status=0
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) PRIMUS_HANG_ACTION=stop timeout 150 \
    "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" mismatch >"$TEST_DIR/launch.out" 2>&1 || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 86 ]]
  grep -q "run monitor: collective mismatch: the ranks wait in different collectives, which can never complete: rank 0 (pid [0-9]*) in all_reduce at main (monitor_cases.py:[0-9]*); rank 1 (pid [0-9]*) in broadcast at main (monitor_cases.py:[0-9]*)" "$TEST_DIR/launch.out"
  # Before the stop: each rank's flight recorder (gloo: the dump thread) into the
  # bundle and torch's analyzer on it, its verdict in one line.
  grep -q "run monitor: flight recorder: torch's analyzer (fr_trace) on the dumps of rank(s) 0,1 (written [0-9.]* s after the ask): COLLECTIVE_TYPE_MISMATCH: culprit rank 1 in gloo:all_reduce: Expected collective type: 'all_reduce' does not match found collective type: 'broadcast'; its output: " "$TEST_DIR/launch.out"
  bundle=$(sed -n "s/.*run monitor: flight recorder: .*; its output: \(.*\)\/flight-recorder.txt$/\1/p" "$TEST_DIR/launch.out")
  [[ $(stat -c %a "$bundle"/flight-recorder/fr-rank-0 "$bundle"/flight-recorder/fr-rank-1 "$bundle"/flight-recorder.txt | sort -u) == 600 ]]
  grep -q "Error type: COLLECTIVE_TYPE_MISMATCH" "$bundle/flight-recorder.txt"
  [[ $(grep -n "run monitor: flight recorder: " "$TEST_DIR/launch.out" | cut -d: -f1) -lt $(grep -n "stopping the run on the mismatch verdict" "$TEST_DIR/launch.out" | cut -d: -f1) ]]
  poll_until 10 no_leftovers
}

@test "kill -STOP of rank 3 of 4: named as stopped within 10 s with the fix; after kill -CONT the job finishes with 0" {
  GPUS_PER_NODE=4 MASTER_PORT=$(free_port) STEP_S=0.5 \
    "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" stoppable 25 >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  poll_until 120 test -f "$OUT/ready.3"
  pid=$(cat "$OUT/ready.3")
  kill -STOP "$pid"
  start=$SECONDS
  poll_until 20 grep -q "run monitor: stopped: rank 3 (pid $pid) stopped" "$TEST_DIR/launch.out" ||
    { cat "$TEST_DIR/launch.out"; false; }
  echo "named after $((SECONDS - start)) s"
  ((SECONDS - start <= 10))
  grep -q "Fix: kill -CONT $pid" "$TEST_DIR/launch.out"
  kill -CONT "$pid"
  status=0
  wait "$launcher" || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 0 ]]
  # A stop of a few seconds is no hang and no mismatch.
  run ! grep -qE "run monitor: (hang|collective mismatch)" "$TEST_DIR/launch.out"
}

@test "the last resort: ranks computing silently past PRIMUS_HANG_TIMEOUT=8 are reported (stacks dumped, 'still use CPU'), never stopped with stop" {
  status=0
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) PRIMUS_HANG_TIMEOUT=8 PRIMUS_HANG_ACTION=stop timeout 200 \
    "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" compute 25 >"$TEST_DIR/launch.out" 2>&1 || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 0 ]]
  grep -q "run monitor: no output and no heartbeat from any local rank for [0-9]* s (PRIMUS_HANG_TIMEOUT=8) and no hang verdict: rank(s) [0-9,]* still use CPU" "$TEST_DIR/launch.out"
  [[ -z $(verdicts "$TEST_DIR/launch.out") ]]
  ls "$PRIMUS_WORKSPACE"/logs/primus-*-node0.hang-1/rank-0.txt
}

# No false verdict, PRIMUS_HANG_ACTION=stop, four quiet-but-healthy jobs at once
# (each far longer than the ~15 s a verdict needs; the machine is loaded on
# purpose): every rank computing without output; every rank asleep outside any
# collective; one rank computing while the other waits in all_reduce (a report
# naming the busy rank after 60 s, never a stop); a main thread in a blocking
# wait that returns every 0.5 s (the shape of a GPU sync).
@test "no false verdicts with PRIMUS_HANG_ACTION=stop: compute, sleep, one rank busy while the other waits, a 0.5 s sync loop: all exit 0" {
  local -A pids=()
  local case
  for case in compute sleep busy_one sync_loop; do
    mkdir -p "$OUT/$case"
    seconds=45
    [[ $case != busy_one ]] || seconds=75
    GPUS_PER_NODE=2 HANG_RANK=1 MASTER_PORT=$(free_port) PRIMUS_HANG_ACTION=stop \
      PRIMUS_WORKSPACE=$TEST_DIR/ws-$case timeout 300 \
      "$PRIMUS_CLI" direct --script "$WL" -- "$OUT/$case" "$case" "$seconds" >"$TEST_DIR/$case.out" 2>&1 &
    pids[$case]=$!
  done
  for case in compute sleep busy_one sync_loop; do
    status=0
    wait "${pids[$case]}" || status=$?
    echo "$case: exit $status"
    verdicts "$TEST_DIR/$case.out"
    [[ $status -eq 0 ]] || { cat "$TEST_DIR/$case.out"; false; }
    [[ -z $(verdicts "$TEST_DIR/$case.out") ]]
    grep -q "rank 1 done" "$TEST_DIR/$case.out"
  done
  grep -q "run monitor: quiet but working: rank 1 (pid [0-9]*) busy in .*(monitor_cases.py:[0-9]*); rank 0 (pid [0-9]*) waiting for it in all_reduce for [0-9]* s" \
    "$TEST_DIR/busy_one.out"
}

# Rank 3 of 4 sleeps 1.5 times as long per step as the others: the others wait
# for it in all_reduce every step. Beside it, at the same time, an even run.
@test "straggler: rank 3 sleeping 1.5x longer per step is named within 3 minutes; an even run beside it names none" {
  mkdir -p "$OUT/slow" "$OUT/even"
  GPUS_PER_NODE=4 SLOW_RANK=3 SLOW_FACTOR=1.5 MASTER_PORT=$(free_port) PRIMUS_WORKSPACE=$TEST_DIR/ws-slow \
    "$PRIMUS_CLI" direct --script "$WL" -- "$OUT/slow" steps 130 >"$TEST_DIR/slow.out" 2>&1 &
  slow=$!
  GPUS_PER_NODE=4 MASTER_PORT=$(free_port) PRIMUS_WORKSPACE=$TEST_DIR/ws-even \
    "$PRIMUS_CLI" direct --script "$WL" -- "$OUT/even" steps 130 >"$TEST_DIR/even.out" 2>&1 &
  even=$!
  poll_until 120 test -f "$OUT/slow/ready.3"
  start=$SECONDS
  poll_until 180 grep -q "run monitor: straggler: rank 3 is the one the others wait for" "$TEST_DIR/slow.out" ||
    { cat "$TEST_DIR/slow.out"; false; }
  echo "named after $((SECONDS - start)) s"
  wait "$slow" || { cat "$TEST_DIR/slow.out"; false; }
  wait "$even" || { cat "$TEST_DIR/even.out"; false; }
  run ! grep -q "run monitor: straggler" "$TEST_DIR/even.out"
  run ! grep -qE "run monitor: straggler: rank [0-2] " "$TEST_DIR/slow.out"
  # The scores are in the log every few rounds, never on the console.
  grep -q "run monitor: straggler scores" "$TEST_DIR"/ws-slow/logs/primus-*-node0.log
  run ! grep -q "run monitor: straggler scores" "$TEST_DIR/slow.out"
  # The run's record beside the log holds every round and the verdict; primus-cli report draws them.
  record=$(compgen -G "$TEST_DIR/ws-slow/logs/primus-*-node0.events.jsonl")
  grep -q '"event": "straggler_scores", "node": 0, "host": "[^"]*", "scores": {"0": ' "$record"
  grep -q '"event": "verdict", .*"verdict": "straggler", "ranks": \[3\]' "$record"
  run "$PRIMUS_CLI" report "$record" --out "$TEST_DIR/slow.html"
  assert_success
  [[ $(grep -o 'class="straggler-series" data-rank="[0-3]"' "$TEST_DIR/slow.html" | wc -l) == 4 ]]
  grep -q 'class="verdict verdict-straggler"' "$TEST_DIR/slow.html"
}
