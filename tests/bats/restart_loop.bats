#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# The closed loop under `primus-cli direct` (docs/restart-on-failure.md): PRIMUS_ON_FAILURE,
# its budget, what restarts and what never does, the restart's record; real torchrun
# (CPU, gloo, 2 processes), the embedded workload resuming from its checkpoint.
bats_require_minimum_version 1.5.0

setup() {
  load helpers/launcher
  launcher_setup
  export GPUS_PER_NODE=2 PRIMUS_KILL_GRACE=3
  CONFIG=$REPO_ROOT/examples/cpu_pretrain.yaml
}

teardown() {
  launcher_teardown
}

# rank_pid RANK: the python process of global rank RANK of this test's run.
rank_pid() {
  local pid env
  for pid in $(pgrep -f "primus_runner train pretrain"); do
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == python* ]] || continue
    env=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) || continue
    grep -qx "RANK=$1" <<<"$env" || continue
    grep -qx "PRIMUS_WORKSPACE=$PRIMUS_WORKSPACE" <<<"$env" || continue
    echo "$pid"
    return 0
  done
  return 1
}

# logs_count: the launch logs of this test (one per attempt).
logs_count() {
  find "$PRIMUS_WORKSPACE/logs" -maxdepth 1 -name 'primus-*-node0.log' | wc -l
}

saw() {
  grep -q -- "$1" "$TEST_DIR/out"
}

@test "restart: a rank SIGKILLed mid-run is restarted once, the workload resumes from its checkpoint and finishes, and the restart is one line, a log line and a run-record event" {
  export PRIMUS_ON_FAILURE=restart PRIMUS_TRAIN_STEPS=400 PRIMUS_TRAIN_CHECKPOINT_EVERY=5
  "$PRIMUS_CLI" direct --module primus_runner -- train pretrain --config "$CONFIG" >"$TEST_DIR/out" 2>&1 &
  local launcher=$!
  poll_until 120 saw "checkpoint step 10:" || { cat "$TEST_DIR/out"; false; }
  local victim
  victim=$(rank_pid 1)
  kill -KILL "$victim"
  local status=0
  wait "$launcher" || status=$?
  cat "$TEST_DIR/out"
  [[ $status -eq 0 ]]
  # One restart, for the signal death, named with the budget.
  [[ $(grep -c "restart loop: attempt 0 ended with exit code 137" "$TEST_DIR/out") -eq 1 ]]
  grep -q "rank 1 on [^ ]* was killed by signal 9 (exit code 137; SIGKILL: often the out-of-memory killer); restarting (1 of PRIMUS_RESTART_MAX=3) with --resume auto" "$TEST_DIR/out"
  run ! grep -q "restart loop: attempt 1 ended" "$TEST_DIR/out"
  # The second attempt resumed from a checkpoint the first wrote, and ran to the end.
  local step
  step=$(sed -n 's/.*\[train\] resumed from step \([0-9]*\): .*ckpt-step0*\([0-9]*\)\.pt$/\1 \2/p' "$TEST_DIR/out")
  [[ -n $step && ${step% *} == "${step#* }" && ${step% *} -ge 10 ]]
  grep -q "\[train\] step 400/400 loss" "$TEST_DIR/out"
  # The restart's line: what failed, the verdict, the nodes left out, the time lost, the checkpoint.
  grep -Eq "restart loop: restart 1 of 3: signal: rank 1 on .*; verdict: none; nodes left out: none; time lost [0-9.]+ s \(failure -> stopped \+[0-9.]+ s -> restarted \+[0-9.]+ s -> first step done \+[0-9.]+ s\); resumed from step ${step% *}: " "$TEST_DIR/out"
  grep -Eq "restart loop: 1 restart\(s\) \(1: signal, [0-9.]+ s\), [0-9.]+ s lost in all; no node left out; exit code 0\." "$TEST_DIR/out"
  # Two attempts, two logs; the second holds the restart line and the run record its event.
  local -a logs
  mapfile -t logs < <(find "$PRIMUS_WORKSPACE/logs" -maxdepth 1 -name 'primus-*-node0.log' | sort)
  [[ ${#logs[@]} -eq 2 ]]
  grep -q "restart loop: restart 1 of 3: signal" "${logs[1]}"
  grep -q '"event": "restart", .*"attempt": 1, "reason": "signal", "left_out": \[\], "lost_s": ' "${logs[1]%.log}.events.jsonl"
}

@test "restart: an exception on every rank never restarts; the exit code is kept and the report says why" {
  export PRIMUS_ON_FAILURE=restart
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/raise_everywhere.py"
  echo "$output"
  [[ $status -eq 1 ]]
  refute_output --partial "restart loop: attempt"
  assert_output --regexp "restart loop: 0 restart\(s\), 0.0 s lost in all; no node left out; not restarted: a failure in the workload's own code \(rank [01] on [^ ]* failed first with exit code 1: RuntimeError: a bug in the training script\): it would fail again; exit code 1\."
  [[ $(logs_count) -eq 1 ]]
}

@test "restart: the budget spent ends the job with the budget named, no more restarts" {
  export PRIMUS_ON_FAILURE=restart PRIMUS_RESTART_MAX=1
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/kill_self.py" -- 1
  echo "$output"
  [[ $status -eq 137 ]]
  [[ $(grep -c "restart loop: attempt 0 ended with exit code 137" <<<"$output") -eq 1 ]]
  [[ $output != *"restart loop: attempt 1 ended"* ]]
  assert_output --partial "not restarted: rank 1 on"
  assert_output --partial "the restart budget is spent: 1 of PRIMUS_RESTART_MAX=1 restarts done; exit code 137."
  [[ $(logs_count) -eq 2 ]]
}

@test "restart: with PRIMUS_ON_FAILURE=report (the default) nothing restarts, exactly as without it" {
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/kill_self.py" -- 1
  local unset_status=$status unset_output=$output
  export PRIMUS_ON_FAILURE=report
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/kill_self.py" -- 1
  echo "$output"
  [[ $status -eq 137 && $unset_status -eq 137 ]]
  refute_output --partial "restart loop"
  [[ $unset_output != *"restart loop"* ]]
  assert_output --partial "failure report: global rank 1 (local rank 1 of node 0) failed first, exit code 137 (killed by SIGKILL)."
  [[ $(logs_count) -eq 2 ]]
}

@test "restart: a rank hung in a collective is named by the run monitor, stopped and restarted; the workload resumes and the lost time is measured" {
  # The fault (test-only): rank 1 sleeps at step 12 of the first attempt while rank 0 waits in all_reduce.
  export PRIMUS_ON_FAILURE=restart PRIMUS_TRAIN_FAULT=hang:1:12 PRIMUS_TRAIN_STEPS=30 PRIMUS_TRAIN_CHECKPOINT_EVERY=5
  run timeout 180 "$PRIMUS_CLI" direct --module primus_runner -- train pretrain --config "$CONFIG"
  echo "$output"
  [[ $status -eq 0 ]]
  assert_output --partial "run monitor: PRIMUS_HANG_ACTION=stop: stopping the run on the hang verdict"
  assert_output --regexp "restart loop: attempt 0 ended with exit code 86: the run monitor's hang verdict \(suspect ranks 1\): hang: rank 1 \(pid [0-9]+\) in _stuck_here"
  assert_output --regexp "\[train\] resumed from step 10: .*/ckpt-step00000010\.pt"
  assert_output --partial "[train] step 30/30 loss"
  local line lost
  line=$(grep "restart loop: restart 1 of 3: hang:" <<<"$output")
  [[ $line =~ verdict:\ hang\;\ nodes\ left\ out:\ none\;\ time\ lost\ ([0-9.]+)\ s\ \(failure\ -\>\ verdict\ \+[0-9.]+\ s\ -\>\ stopped\ \+[0-9.]+\ s\ -\>\ restarted\ \+[0-9.]+\ s\ -\>\ first\ step\ done\ \+[0-9.]+\ s\)\;\ resumed\ from\ step\ 10: ]]
  lost=${BASH_REMATCH[1]}
  echo "# direct, hang: failure -> first resumed step $lost s" >&3
  (( ${lost%.*} <= 90 ))
}
