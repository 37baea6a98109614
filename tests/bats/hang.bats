#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# Hang and failure diagnosis: the run monitor (python/primus_runner/monitor/,
# tests/bats/monitor.bats has its other verdicts), the stacks of every rank read with the real
# py-spy, the grouped summary, PRIMUS_HANG_ACTION=stop, the failure report's
# stacks and `primus-cli stacks`, with real torchrun (CPU, gloo) and the
# hang_rank.py workload (it writes out/ready.<RANK> once it joined the group).
bats_require_minimum_version 1.5.0

setup() {
  load helpers/launcher
  launcher_setup
  export GPUS_PER_NODE=2 MASTER_PORT PRIMUS_KILL_GRACE=5
  MASTER_PORT=$(free_port)
  OUT=$TEST_DIR/out
  mkdir -p "$OUT"
  WL=$WORKLOADS/hang_rank.py
}

teardown() {
  kill_marked "$OUT"
  launcher_teardown
}

# leftovers: processes of this test's run still alive (they carry $OUT on their command line).
leftovers() {
  marked_alive "$OUT"
}

# has_bundle: the report names its bundle; no_leftovers: no process of the run
# is left (functions, so each poll of poll_until looks again).
has_bundle() {
  [[ -n $(report_bundle) ]]
}
no_leftovers() {
  [[ -z $(leftovers) ]]
}

# report_bundle: the bundle line that ends the report naming rank 1 in stuck_here.
report_bundle() {
  awk '/SUSPECT rank 1: stuck_here/ { found = 1 }
    found && /^  bundle: / { sub(/^  bundle: /, ""); print; exit }' "$TEST_DIR/launch.out"
}

has_summary() {
  grep -q "SUSPECT rank 1: stuck_here (hang_rank.py:[0-9]*)" "$TEST_DIR/launch.out" &&
    grep -q "rank 0: main (hang_rank.py:[0-9]*) <- all_reduce" "$TEST_DIR/launch.out"
}

@test "hang, no setting: within 30 s the monitor names rank 1 in stuck_here and rank 0 in all_reduce; private bundle; report keeps waiting" {
  "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" hang >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  poll_until 60 test -f "$OUT/ready.1"
  start=$SECONDS
  poll_until 45 has_summary || { cat "$TEST_DIR/launch.out"; false; }
  echo "summary after $((SECONDS - start)) s"
  ((SECONDS - start <= 45))  # 30 s on an idle machine; a loaded 2-core one may take longer
  grep -q "run monitor: hang: rank 1 (pid [0-9]*) in stuck_here (hang_rank.py:[0-9]*), not in the collective, while rank 0 (pid [0-9]*) wait for it in all_reduce at main (hang_rank.py:[0-9]*)" "$TEST_DIR/launch.out"
  poll_until 10 has_bundle
  bundle=$(report_bundle)
  [[ $bundle == "$PRIMUS_WORKSPACE"/logs/primus-*-node0.hang-[0-9]* ]]
  grep -q "stuck_here" "$bundle/rank-1.txt" || { cat "$bundle/rank-1.txt" "$TEST_DIR/launch.out"; false; }
  grep -q "all_reduce" "$bundle/rank-0.txt"
  grep -q "read with: py-spy" "$bundle/rank-0.txt"
  # Stacks, command lines, environment names: the user's alone.
  [[ $(stat -c %a "$bundle") == 700 ]]
  [[ $(stat -c %a "$bundle"/rank-0.txt "$bundle"/summary.json | sort -u) == 600 ]]
  # Each rank's flight recorder, asked for on the verdict (gloo: the dump thread of
  # runner/helpers/pystartup/sitecustomize.py), and torch's analyzer on the dumps:
  # rank 1 never joined rank 0's all_reduce.
  poll_until 60 grep -q "run monitor: flight recorder: " "$TEST_DIR/launch.out" || { cat "$TEST_DIR/launch.out"; false; }
  grep "run monitor: flight recorder: " "$TEST_DIR/launch.out"
  grep -q "run monitor: flight recorder: torch's analyzer (fr_trace) on the dumps of rank(s) 0,1 (written [0-9.]* s after the ask): missing ranks 1: not all ranks joined the collective in gloo:all_reduce (collective sequence number [0-9]*); its output: $bundle/flight-recorder.txt" "$TEST_DIR/launch.out"
  [[ $(stat -c %a "$bundle"/flight-recorder/fr-rank-0 "$bundle"/flight-recorder/fr-rank-1 "$bundle"/flight-recorder.txt | sort -u) == 600 ]]
  grep -q "missing ranks: {1}" "$bundle/flight-recorder.txt"
  [[ ! -e $bundle/neuron-timeouts.txt ]]  # not a Neuron run
  # The summary is in the log too; report mode keeps the run going.
  log=${bundle%.hang-*}.log
  grep -q "SUSPECT rank 1: stuck_here" "$log"
  grep -q "run monitor: flight recorder: .*missing ranks 1" "$log"
  process_running "$launcher"
  kill -TERM "$launcher"
  wait "$launcher" || true
}

@test "hang with PRIMUS_HANG_ACTION=stop on a (fake) Trn1 host: the NEURON_RT_* timeouts in effect in the bundle first, then the launcher ends the job itself with exit code 86 and nothing is left" {
  # The Neuron layer on the trn1.2xlarge fixture (the workload still runs gloo on
  # CPU; gloo on the loopback, not the fixture's ens5).
  export PRIMUS_SYSFS_ROOT=$REPO_ROOT/tests/fixtures/sysfs/trn1.2xlarge PRIMUS_DEV_ROOT=$REPO_ROOT/tests/fixtures/sysfs/trn1.2xlarge
  status=0
  GLOO_SOCKET_IFNAME=lo NEURON_RT_EXEC_TIMEOUT=45 PRIMUS_HANG_ACTION=stop timeout 120 "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" hang \
    >"$TEST_DIR/launch.out" 2>&1 || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 86 ]]
  grep -q "accelerator=neuron" "$TEST_DIR/launch.out"
  has_summary
  bundle=$(report_bundle)
  grep -q "run monitor: the Neuron runtime's timeouts in effect: NEURON_RT_EXEC_TIMEOUT=45 (rank(s) 0,1) ($bundle/neuron-timeouts.txt)" "$TEST_DIR/launch.out"
  grep -qx "NEURON_RT_EXEC_TIMEOUT=45 (rank(s) 0,1)" "$bundle/neuron-timeouts.txt"
  [[ $(stat -c %a "$bundle/neuron-timeouts.txt") == 600 ]]
  grep -q "run monitor: PRIMUS_HANG_ACTION=stop: stopping the run on the hang verdict" "$TEST_DIR/launch.out"
  [[ $(grep -n "run monitor: the Neuron runtime's timeouts" "$TEST_DIR/launch.out" | cut -d: -f1) -lt $(grep -n "stopping the run on the hang verdict" "$TEST_DIR/launch.out" | cut -d: -f1) ]]
  grep -q "exit status 86" "$TEST_DIR/launch.out"
  poll_until 10 no_leftovers
  [[ -z $(pgrep -f -- "primus_runner.monitor .*$PRIMUS_WORKSPACE") ]]
}

@test "no false alarm: a rank printing every second for 20 s, with PRIMUS_HANG_TIMEOUT=6 and stop, exits 0" {
  status=0
  PRIMUS_HANG_TIMEOUT=6 PRIMUS_HANG_ACTION=stop "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" chatty 20 \
    >"$TEST_DIR/launch.out" 2>&1 || status=$?
  [[ $status -eq 0 ]] || { cat "$TEST_DIR/launch.out"; false; }
  [[ $(grep -c "run monitor" "$TEST_DIR/launch.out") -eq 0 ]]
  grep -q "rank 1 step 19" "$TEST_DIR/launch.out"
}

@test "no false alarm: silent ranks touching PRIMUS_HEARTBEAT_FILE every second, with PRIMUS_HANG_TIMEOUT=6 and stop, exit 0" {
  status=0
  PRIMUS_HANG_TIMEOUT=6 PRIMUS_HANG_ACTION=stop "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" heartbeat 20 \
    >"$TEST_DIR/launch.out" 2>&1 || status=$?
  [[ $status -eq 0 ]] || { cat "$TEST_DIR/launch.out"; false; }
  [[ $(grep -c "run monitor" "$TEST_DIR/launch.out") -eq 0 ]]
  # One heartbeat file per rank, under the log's .ranks directory.
  ls "$PRIMUS_WORKSPACE"/logs/primus-*-node0.ranks/rank-0.heartbeat
  ls "$PRIMUS_WORKSPACE"/logs/primus-*-node0.ranks/rank-1.heartbeat
}

@test "a rank that raises while the other waits: the report names the exception and shows the other rank's stack" {
  status=0
  PRIMUS_HANG_TIMEOUT=0 timeout 90 "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" raise \
    >"$TEST_DIR/launch.out" 2>&1 || status=$?
  cat "$TEST_DIR/launch.out"
  [[ $status -eq 1 ]]
  grep -q "failure report: global rank 1 .* failed first" "$TEST_DIR/launch.out"
  grep -q "RuntimeError: rank one broke" "$TEST_DIR/launch.out"
  grep -q "stacks of this node's other ranks when rank 1 raised RuntimeError" "$TEST_DIR/launch.out"
  grep -q "rank 0: main (hang_rank.py:[0-9]*) <- all_reduce" "$TEST_DIR/launch.out"
  grep -q "all_reduce" "$PRIMUS_WORKSPACE"/logs/primus-*-node0.failure-1/rank-0.txt
  poll_until 10 no_leftovers
}

@test "primus-cli stacks on a running 2-rank launch shows both stacks" {
  PRIMUS_HANG_TIMEOUT=0 "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" hang >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  poll_until 60 test -f "$OUT/ready.1"
  run "$PRIMUS_CLI" stacks
  kill -TERM "$launcher"
  wait "$launcher" || true
  echo "$output"
  [[ $status -eq 0 ]]
  [[ $output == *"stacks of the launch writing $PRIMUS_WORKSPACE/logs/primus-"*"-node0.log"*"2 live rank(s)"* ]]
  [[ $output == *"----- rank 0 -----"*"all_reduce (/"*"----- rank 1 -----"*"stuck_here (/"* ]]
  [[ $output == *"SUSPECT rank 1: stuck_here"* ]]
  [[ $output == *"run monitor: (no run monitor verdict: the verdicts are off, PRIMUS_HANG_TIMEOUT=0"* ]]
}

@test "primus-cli stacks gives the run monitor's verdict of now beside the stacks" {
  "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" hang >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  poll_until 60 test -f "$OUT/ready.1"
  poll_until 60 grep -q "run monitor: hang: rank 1" "$TEST_DIR/launch.out" || { cat "$TEST_DIR/launch.out"; false; }
  run "$PRIMUS_CLI" stacks
  kill -TERM "$launcher"
  wait "$launcher" || true
  echo "$output"
  [[ $status -eq 0 ]]
  [[ $output == *"run monitor: hang: rank 1 (pid "*") in stuck_here (hang_rank.py:"*"), not in the collective"* ]]
}

@test "primus-cli stacks with no launch of this workspace and a --log nobody writes: exit 1 naming the log" {
  run "$PRIMUS_CLI" stacks --log "$TEST_DIR/none.log"
  [[ $status -eq 1 ]]
  [[ $output == *"--log $TEST_DIR/none.log: no running launch writes that log on this node"* ]]
}

@test "primus-cli stacks given hostile input: a --log path with a space and a newline is quoted on one line; another user's pid, a pid that is not a number and a 1 GB summary are clear errors" {
  run "$PRIMUS_CLI" stacks --log $'/tmp/a b\nc.log'
  [[ $status -eq 1 ]]
  [[ ${#lines[@]} -eq 1 ]]
  [[ $output == *"--log '/tmp/a b\\nc.log': no running launch writes that log on this node"* ]]
  setpriv --reuid=65534 --regid=65534 --clear-groups sleep 60 &
  other=$!
  run "$PRIMUS_CLI" stacks --pid "$other"
  kill "$other"
  [[ $status -eq 1 ]]
  [[ $output == *"--pid $other: no running launch has that process (launcher or rank) on this node"* ]]
  run "$PRIMUS_CLI" stacks --pid '1;id'
  [[ $status -eq 2 ]]
  [[ $output == *"--pid '1;id' is not a process id"* ]]
  # The merge of the nodes' summaries (slurm stacks) given a 1 GB "bundle": refused unread.
  truncate -s 1G "$TEST_DIR/big.json"
  run env PYTHONPATH="$REPO_ROOT/python" timeout 20 "$REPO_ROOT/.venv/bin/python" -m primus_runner.diagnose merge "$TEST_DIR/big.json"
  [[ $status -eq 1 ]]
  [[ $output == *"merge: $TEST_DIR/big.json is 1073741824 bytes, not a node's summary.json (at most 16 MiB); left out"* ]]
}

@test "a dry run on a ROCm host (mi300x-2gpu fixture): the flight recorder under the installed torch's names (TORCH_FR_*), the dump path under the workspace; a user value of either name is kept" {
  export PRIMUS_SYSFS_ROOT=$REPO_ROOT/tests/fixtures/sysfs/mi300x-2gpu PRIMUS_DEV_ROOT=$REPO_ROOT/tests/fixtures/sysfs/mi300x-2gpu
  run "$PRIMUS_CLI" direct --dry-run --script "$WL" -- "$OUT" hang
  echo "$output"
  [[ $status -eq 0 ]]
  [[ $output =~ flight\ recorder:\ TORCH_FR_BUFFER_SIZE=20000\ \(default\)\ TORCH_NCCL_DUMP_ON_TIMEOUT=1\ \(default\)\ TORCH_FR_DUMP_TEMP_FILE=$PRIMUS_WORKSPACE/logs/primus-[0-9TZ]*-node0.ranks/flight-recorder-rank-\ \(default\) ]]
  [[ $output != *TORCH_NCCL_TRACE_BUFFER_SIZE* && $output != *TORCH_NCCL_DEBUG_INFO_TEMP_FILE* ]]
  [[ ! -e $PRIMUS_WORKSPACE ]]  # a dry run writes nothing
  TORCH_NCCL_TRACE_BUFFER_SIZE=5 run "$PRIMUS_CLI" direct --dry-run --script "$WL" -- "$OUT" hang
  [[ $output == *"TORCH_NCCL_TRACE_BUFFER_SIZE=5 (yours)"* && $output != *"TORCH_FR_BUFFER_SIZE="* ]]
  TORCH_FR_DUMP_TEMP_FILE=/tmp/mine- run "$PRIMUS_CLI" direct --dry-run --script "$WL" -- "$OUT" hang
  [[ $output == *"TORCH_FR_DUMP_TEMP_FILE=/tmp/mine- (yours)"* ]]
}

@test "a dry run on a ROCm host whose torch predates TORCH_FR_*: the older names TORCH_NCCL_TRACE_BUFFER_SIZE and TORCH_NCCL_DEBUG_INFO_TEMP_FILE" {
  export PRIMUS_SYSFS_ROOT=$REPO_ROOT/tests/fixtures/sysfs/mi300x-2gpu PRIMUS_DEV_ROOT=$REPO_ROOT/tests/fixtures/sysfs/mi300x-2gpu
  # A torch package as an older release lays it out (the probe reads files, imports nothing).
  local old=$TEST_DIR/oldtorch
  mkdir -p "$old/torch/distributed"
  : >"$old/torch/__init__.py"
  echo '__version__ = "2.4.0"' >"$old/torch/version.py"
  echo 'buffer_size = os.environ.get("TORCH_NCCL_TRACE_BUFFER_SIZE", "0")' >"$old/torch/distributed/distributed_c10d.py"
  PYTHONPATH=$old run "$PRIMUS_CLI" direct --dry-run --script "$WL" -- "$OUT" hang
  echo "$output"
  [[ $status -eq 0 ]]
  [[ $output == *"torch=2.4.0 ($old/torch)"* ]]
  [[ $output =~ flight\ recorder:\ TORCH_NCCL_TRACE_BUFFER_SIZE=20000\ \(default\)\ TORCH_NCCL_DUMP_ON_TIMEOUT=1\ \(default\)\ TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$PRIMUS_WORKSPACE/logs/primus-[0-9TZ]*-node0.ranks/flight-recorder-rank-\ \(default\) ]]
  [[ $output != *TORCH_FR_* ]]
}

@test "no flight-recorder variables on a host without a GPU" {
  run "$PRIMUS_CLI" direct --dry-run --script "$WL" -- "$OUT" hang
  [[ $status -eq 0 ]]
  [[ $output != *"flight recorder"* && $output != *TORCH_NCCL_DUMP_ON_TIMEOUT* ]]
}

@test "--single, a workload idle in stuck_here outside any collective: no hang verdict, PRIMUS_HANG_TIMEOUT=5 reports it (stack named), stop does not act" {
  printf 'import time\n\n\ndef stuck_here():\n    time.sleep(600)\n\n\nprint("up", flush=True)\nstuck_here()\n' \
    >"$OUT/single_hang.py"
  PRIMUS_HANG_TIMEOUT=5 PRIMUS_HANG_ACTION=stop "$PRIMUS_CLI" direct --single --script "$OUT/single_hang.py" \
    >"$TEST_DIR/launch.out" 2>&1 &
  launcher=$!
  poll_until 60 grep -q "SUSPECT rank 0: stuck_here (single_hang.py:5) <- time_sleep" "$TEST_DIR/launch.out" ||
    { cat "$TEST_DIR/launch.out"; false; }
  grep -q "run monitor: no output and no heartbeat from any local rank for [0-9]* s (PRIMUS_HANG_TIMEOUT=5) and no hang verdict: .*; a report only, nothing is stopped" "$TEST_DIR/launch.out"
  # Once its stack stayed the same: idle, not hung.
  # Settling takes 3 samples 4 s apart; on a loaded machine each sample (py-spy) takes longer.
  poll_until 120 grep -q "and no hang verdict: every rank is idle outside a collective" "$TEST_DIR/launch.out" ||
    { cat "$TEST_DIR/launch.out"; false; }
  ls "$PRIMUS_WORKSPACE"/logs/primus-*-node0.hang-1/rank-0.txt
  run ! grep -q "run monitor: hang:" "$TEST_DIR/launch.out"
  process_running "$launcher"
  kill -TERM "$launcher"
  status=0
  wait "$launcher" || status=$?
  [[ $status -eq 143 ]]
  poll_until 10 no_leftovers
}
