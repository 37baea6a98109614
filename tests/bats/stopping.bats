#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# Stopping, preemption notices and launcher death (runner/lib/supervise.sh),
# with real torchrun (CPU, gloo) and the signal_marker.py workload, which
# writes one line per signal it receives to out/<SIGNAL>.<RANK>.

setup() {
  load helpers/launcher
  launcher_setup
  export GPUS_PER_NODE=2 MASTER_PORT PRIMUS_KILL_GRACE=8
  MASTER_PORT=$(free_port)
  OUT=$TEST_DIR/out
  mkdir -p "$OUT"
  MARKER=$WORKLOADS/signal_marker.py
}

teardown() {
  # Never leave a workload of this test behind, whatever failed.
  local pid rest
  while read -r pid rest; do
    kill -KILL "$pid" 2>/dev/null || true
  done < <(leftovers)
  launcher_teardown
}

# ranks_started RANK...: every RANK wrote its pid file (its handlers are set by then).
ranks_started() {
  local r
  for r in "$@"; do [[ -f $OUT/pid.$r ]] || return 1; done
}

# wait_or_show SECONDS WHAT CMD...: poll_until SECONDS CMD; when it never
# succeeded, say WHAT and show the launcher's output.
wait_or_show() {
  local seconds=$1 what=$2
  shift 2
  poll_until "$seconds" "$@" && return 0
  echo "$what; launcher output:" >&2
  cat "$TEST_DIR/launch.out" >&2
  return 1
}

# wait_ranks RANK...: until every rank started. 120 s at most: a loaded 2-core
# host with a fresh clone (no bytecode yet) can take long to start torchrun; a
# ready run costs no wait.
wait_ranks() {
  wait_or_show 120 "ranks $* did not start" ranks_started "$@"
}

# count SIGNAL RANK: how many times RANK received SIGNAL.
count() {
  [[ -f $OUT/$1.$2 ]] || { echo 0; return; }
  wc -l <"$OUT/$1.$2" | tr -d ' '
}

# counted SIGNAL N RANK...: every RANK recorded SIGNAL N times.
counted() {
  local sig=$1 want=$2 r
  shift 2
  for r in "$@"; do [[ $(count "$sig" "$r") == "$want" ]] || return 1; done
}

# wait_count SIGNAL N RANK...: until every RANK recorded SIGNAL N times (60 s at most).
wait_count() {
  wait_or_show 60 "ranks ${*:3} did not count $1 $2 times" counted "$@"
}

# said_forwarded SIGNAL: the launcher said it forwarded SIGNAL.
said_forwarded() {
  grep -q "SIG$1 (sender: .*forwarded once" "$TEST_DIR/launch.out"
}

# wait_forwarded SIGNAL: until the launcher said it forwarded SIGNAL (60 s at
# most): the next notice then finds it back in its wait, not still logging.
wait_forwarded() {
  wait_or_show 60 "the launcher never said it forwarded SIG$1" said_forwarded "$1"
}

# finish: the workload (--stop-file $OUT/finish) ends with 0 now.
finish() {
  : >"$OUT/finish"
}

# leftovers: processes of this test's run still alive (workers, torchrun and
# run_worker.sh all carry $OUT on their command line).
leftovers() {
  local pid stat
  for pid in $(pgrep -f -- "$OUT"); do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    [[ ${stat##*) } == Z* ]] || echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
  done
}

# no_leftovers: no process of the run is left.
no_leftovers() {
  [[ -z $(leftovers) ]]
}

# wait_gone SECONDS: until no process of the run is left.
wait_gone() {
  poll_until "$1" no_leftovers
}

@test "USR1 and USR2 to the torchrun launcher reach every rank once; it keeps running and exits 0" {
  "$PRIMUS_CLI" direct --script "$MARKER" -- "$OUT" --stop-file "$OUT/finish" >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  wait_ranks 0 1
  kill -USR1 "$launcher"
  wait_count SIGUSR1 1 0 1
  wait_forwarded USR1
  kill -USR2 "$launcher"
  wait_count SIGUSR2 1 0 1
  process_running "$launcher"
  finish
  status=0
  wait "$launcher" || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 0 ]]
  [[ $(count SIGUSR1 0) == 1 && $(count SIGUSR1 1) == 1 ]]
  [[ $(count SIGUSR2 0) == 1 && $(count SIGUSR2 1) == 1 ]]
  [[ $(count SIGTERM 0) == 0 && $(count SIGTERM 1) == 0 ]]
  grep -q "SIGUSR1 (sender: unknown.*forwarded once to 2 of 2 local rank process(es)" "$TEST_DIR/launch.out"
  grep -q "workload finished successfully" "$TEST_DIR/launch.out"
}

@test "USR1 to torchrun itself (Slurm signals every process of a step) does not end it: the launch completes, exit 0" {
  "$PRIMUS_CLI" direct --script "$MARKER" -- "$OUT" --stop-file "$OUT/finish" >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  wait_ranks 0 1
  torchrun=$(pgrep -f -- "torchrun_quiet.py.*$OUT")
  [[ $torchrun =~ ^[0-9]+$ ]]
  # torchrun catches both (SigCgt bits 9 and 11: signal N is bit N-1), so
  # neither can end it; then both are sent and the test waits until neither
  # is pending any more (delivered), not for a guessed time.
  (( ($(signal_mask "$torchrun" SigCgt) & 0xa00) == 0xa00 )) || fail "torchrun does not catch SIGUSR1/SIGUSR2"
  kill -USR1 "$torchrun"
  kill -USR2 "$torchrun"
  delivered() {
    local pnd shd
    pnd=$(signal_mask "$torchrun" SigPnd) && shd=$(signal_mask "$torchrun" ShdPnd) || return 0
    (( ((pnd | shd) & 0xa00) == 0 ))
  }
  poll_until 30 delivered || fail "SIGUSR1/SIGUSR2 still pending at torchrun after 30 s"
  process_running "$torchrun"
  finish
  status=0
  wait "$launcher" || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 0 ]]
  grep -q "workload finished successfully" "$TEST_DIR/launch.out"
}

@test "USR1 and USR2 to the --single launcher reach the workload once; it keeps running and exits 0" {
  "$PRIMUS_CLI" direct --single --script "$MARKER" -- "$OUT" --stop-file "$OUT/finish" >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  wait_ranks 0
  kill -USR1 "$launcher"
  wait_count SIGUSR1 1 0
  wait_forwarded USR1
  kill -USR2 "$launcher"
  wait_count SIGUSR2 1 0
  process_running "$launcher"
  finish
  status=0
  wait "$launcher" || status=$?
  [[ $status -eq 0 ]]
  [[ $(count SIGUSR1 0) == 1 && $(count SIGUSR2 0) == 1 ]]
}

@test "a rank that exits after the notice ends the launch with that rank's code" {
  "$PRIMUS_CLI" direct --script "$MARKER" -- "$OUT" --exit-on-notice 85 >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  wait_ranks 0 1
  kill -USR1 "$launcher"
  status=0
  wait "$launcher" || status=$?
  [[ $status -eq 85 ]] || { echo "exit status $status" >&2; cat "$TEST_DIR/launch.out"; false; }
  grep -q "requeue code 85" "$TEST_DIR/launch.out"
}

@test "timeout -s TERM: every rank gets SIGTERM once, exit 124 (timeout's own code), nothing left" {
  # The limit runs out once the ranks run, not after a guessed 5 s (a loaded
  # host may not have started them yet): timeout acts on SIGALRM, its timer's
  # signal (coreutils src/timeout.c: "kill the job if we receive the alarm
  # signal we setup"), so the test sends it when the ranks are up.
  timeout -s TERM 600 "$PRIMUS_CLI" direct --script "$MARKER" -- "$OUT" --term-delay 1 \
    >"$TEST_DIR/launch.out" 2>&1 &
  local limit=$!
  wait_ranks 0 1
  kill -ALRM "$limit"
  local rc=0
  wait "$limit" || rc=$?
  run cat "$TEST_DIR/launch.out"
  [[ $rc -eq 124 ]] || { echo "exit status $rc" >&2; false; }
  [[ $(count SIGTERM 0) == 1 && $(count SIGTERM 1) == 1 ]]
  # 5: torchrun, two run_worker.sh and two ranks (the run monitor, not a
  # process per rank, writes the ranks' files).
  assert_output --regexp "stop: SIGTERM, sender: unknown .*; 5 process\(es\) stopped"
  assert_output --partial "exit status 143"
  # The last line says which ranks were still running and names the log.
  [[ ${lines[-1]} =~ "stop: SIGTERM".*"; ranks 0, 1 still running at the stop; ".*"; exit status 143; log: $PRIMUS_WORKSPACE/logs/primus-"[0-9TZ]+"-node0.log." ]]
  wait_gone 3
  run leftovers
  assert_output ""
}

@test "kill -TERM -- -PGID: every rank gets SIGTERM once, exit 143, nothing left; a 3 s checkpoint is not cut" {
  setsid "$PRIMUS_CLI" direct --script "$MARKER" -- "$OUT" --term-delay 3 >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  wait_ranks 0 1
  kill -TERM -- "-$launcher"
  status=0
  wait "$launcher" || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 143 ]]
  [[ $(count SIGTERM 0) == 1 && $(count SIGTERM 1) == 1 ]]
  run leftovers
  assert_output ""
  grep -q "stop: SIGTERM.*5 process(es) stopped" "$TEST_DIR/launch.out"
  # The ranks' own status after the checkpoint (143), not a SIGKILL.
  refute grep -q "killed after the" "$TEST_DIR/launch.out"
}

@test "kill -HUP -- -PGID of the --single launcher: the workload gets SIGHUP once, exit 129" {
  setsid "$PRIMUS_CLI" direct --single --script "$MARKER" -- "$OUT" >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  wait_ranks 0
  kill -HUP -- "-$launcher"
  status=0
  wait "$launcher" || status=$?
  [[ $status -eq 129 ]]
  [[ $(count SIGHUP 0) == 1 ]]
  [[ $(tail -n 1 "$TEST_DIR/launch.out") == *"stop: SIGHUP, "*"; rank 0 still running at the stop; "*"; exit status 129; log: $PRIMUS_WORKSPACE/logs/"*".log." ]]
  run leftovers
  assert_output ""
}

@test "a rank that ignores SIGTERM is killed after PRIMUS_KILL_GRACE and named in the closing line" {
  export PRIMUS_KILL_GRACE=2
  "$PRIMUS_CLI" direct --single --script "$MARKER" -- "$OUT" --ignore-term >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  wait_ranks 0
  kill -TERM "$launcher"
  status=0
  wait "$launcher" || status=$?
  [[ $status -eq 143 ]]
  [[ $(count SIGTERM 0) == 1 ]]
  grep -qE "stop: SIGTERM.*killed after the 2 s grace: $(<"$OUT/pid.0")\(python" "$TEST_DIR/launch.out"
  run leftovers
  assert_output ""
}

@test "kill -9 of the launcher: within grace+2 s no worker, torchrun or run_worker.sh remains" {
  export PRIMUS_KILL_GRACE=2
  "$PRIMUS_CLI" direct --script "$MARKER" -- "$OUT" --ignore-term >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  wait_ranks 0 1
  [[ -n $(leftovers) ]]
  kill -KILL "$launcher"
  wait "$launcher" || true
  # grace+2 s on an idle host; a loaded one may take longer to schedule the
  # run monitor (the parent-death guard), so the poll allows 30 s.
  wait_gone 30
  run leftovers
  assert_output ""
  # Every rank got the SIGTERM (torchrun passes on its parent-death signal).
  [[ $(count SIGTERM 0) == 1 && $(count SIGTERM 1) == 1 ]]
  poll_until 30 grep -q "stop: launcher pid $launcher died" "$TEST_DIR"/workspace/logs/*.log || true
  grep -q "stop: launcher pid $launcher died; 5 process(es) of the run stopped" "$TEST_DIR"/workspace/logs/*.log ||
    { cat "$TEST_DIR"/workspace/logs/*.log; pgrep -af primus_runner.monitor; false; }
}

@test "kill -INT -- -PGID (Ctrl-C): every rank gets SIGINT once, exit 130, the closing line on the console and in the log, no torchrun traceback" {
  export GPUS_PER_NODE=3
  # A non-interactive shell starts `cmd &` with SIGINT ignored, and a signal
  # ignored on entry cannot be trapped (bash(1)); a terminal's job has it at
  # its default, so restore that before the launcher starts.
  "$PRIMUS_WORKLOAD_PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execv(sys.argv[1], sys.argv[1:])' "$PRIMUS_CLI" direct --script "$MARKER" -- "$OUT" --duration 60 \
    >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  wait_ranks 0 1 2
  kill -INT -- "-$launcher"
  status=0
  wait "$launcher" || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 130 ]]
  [[ $(count SIGINT 0) == 1 && $(count SIGINT 1) == 1 && $(count SIGINT 2) == 1 ]]
  # The console copies (tee) ignore the group's SIGINT: the stop's own lines pass.
  grep -q "stop: SIGINT.*exit status 130" "$TEST_DIR/launch.out"
  grep -q "stop: SIGINT.*exit status 130" "$PRIMUS_WORKSPACE"/logs/*.log
  # The last line names the ranks still running and the log.
  log=$(echo "$PRIMUS_WORKSPACE"/logs/*.log)
  [[ $(tail -n 1 "$TEST_DIR/launch.out") == *"; ranks 0, 1, 2 still running at the stop; "*"; exit status 130; log: $log." ]]
  refute grep -q -e "Traceback" -e "SignalException" "$TEST_DIR/launch.out"
  run leftovers
  assert_output ""
}

# sigint_ignored_in_jobs: the premise of the next tests: a non-interactive
# shell starts `cmd &` with SIGINT ignored (bash(1); SigIgn bit 2 in /proc).
sigint_ignored_in_jobs() {
  local mask
  mask=$(bash -c 'grep "^SigIgn:" /proc/self/status & wait' | awk '{print $2}')
  [[ $mask =~ ^[0-9a-f]+$ ]] && ((16#${mask: -1} & 2))
}

# script_job ARGS...: the launcher started by a script as `primus-cli ARGS & wait`
# (in the background of this test too); JOB = that script, LAUNCHER = its job.
script_job() {
  JOB_PID_FILE=$TEST_DIR/job.pid bash -c '"$@" & echo "$!" >"$JOB_PID_FILE"; wait "$!"' _ \
    "$PRIMUS_CLI" "$@" >"$TEST_DIR/launch.out" 2>&1 &
  JOB=$!
  poll_until 60 test -s "$TEST_DIR/job.pid" || {
    echo "the script never started the launcher (no pid in $TEST_DIR/job.pid after 60 s):" >&2
    cat "$TEST_DIR/launch.out" >&2
    return 1
  }
  LAUNCHER=$(<"$TEST_DIR/job.pid")
}

@test "SIGINT to a launcher a script started in the background (SIGINT ignored on entry): every rank gets it once, exit 130" {
  sigint_ignored_in_jobs
  script_job direct --script "$MARKER" -- "$OUT" --duration 60
  wait_ranks 0 1
  kill -INT "$LAUNCHER"
  status=0
  wait "$JOB" || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 130 ]]
  [[ $(count SIGINT 0) == 1 && $(count SIGINT 1) == 1 ]]
  grep -q "stop: SIGINT.*exit status 130" "$TEST_DIR/launch.out"
  run leftovers
  assert_output ""
}

@test "SIGINT to a --single launcher a script started in the background: a workload without a handler ends by it, none killed, exit 130" {
  sigint_ignored_in_jobs
  # sleeper.py installs no handler: SIGINT must reach it at its default action
  # (Python's KeyboardInterrupt), not ignored until the SIGKILL after the grace.
  script_job direct --single --script "$WORKLOADS/sleeper.py" -- "$OUT" marker
  wait_ranks 0
  kill -INT "$LAUNCHER"
  status=0
  wait "$JOB" || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 130 ]]
  grep -q "stop: SIGINT.*within the 8 s grace, none killed; exit status 130" "$TEST_DIR/launch.out"
  run leftovers
  assert_output ""
}
