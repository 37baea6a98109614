#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; exports are per test
# The first hour, tried as a new user would: --module checked up
# front, the last line of every stop, the summary of --single, a missing
# experiment config, make demo on a free port, the console kept free of
# torchrun's internals, one output stream, "did you mean".
bats_require_minimum_version 1.5.0

setup() {
  load helpers/launcher
  launcher_setup
  export MASTER_PORT
  MASTER_PORT=$(free_port)
}

teardown() {
  [[ -z ${HOLDER:-} ]] || kill "$HOLDER" 2>/dev/null || true
  launcher_teardown
}

@test "--module the interpreter cannot import: exit 1 naming module and interpreter, nothing started" {
  run "$PRIMUS_CLI" direct --module mypkg.train -- x
  assert_failure 1
  assert_output --partial "module 'mypkg.train' (--module / config direct.module) cannot be imported"
  assert_output --partial "by the workload interpreter $REPO_ROOT/.venv/bin/python (chosen by PRIMUS_WORKLOAD_PYTHON"
  assert_output --partial "nothing was started"
  refute_output --partial "command:"
  run compgen -G "$PRIMUS_WORKSPACE/logs/*.ranks"  # no rank ever started
  assert_failure
  # The same for a package without __main__.py; a dry run notes it as the node's check.
  mkdir -p mypkg && touch mypkg/__init__.py
  run "$PRIMUS_CLI" direct --module mypkg -- x
  assert_failure 1
  assert_output --partial "module 'mypkg' (--module / config direct.module) cannot be imported (or is a package without __main__.py)"
  run "$PRIMUS_CLI" direct --dry-run --module mypkg -- x
  assert_success
  assert_output --partial "dry run: checked on the node, not here (a launch there stops with exit 1 unless fixed): module 'mypkg' (--module / config direct.module) cannot be imported"
  assert_output --regexp "command: .*-m mypkg x"
}

@test "--module found in the working directory, or through a PYTHONPATH given with --env, is accepted" {
  mkdir -p mypkg lib/other
  touch mypkg/__init__.py lib/other/__init__.py
  echo 'print("trained")' >mypkg/train.py
  echo 'print("other")' >lib/other/__main__.py
  run "$PRIMUS_CLI" direct --dry-run --module mypkg.train -- x
  assert_success
  assert_output --regexp "command: .* -m mypkg\.train x"
  # Not found by the probe (started before --env applies): asked again with the final environment.
  run "$PRIMUS_CLI" direct --dry-run --env "PYTHONPATH=$PWD/lib" --module other -- x
  assert_success
  assert_output --regexp "command: .* -m other x"
  GPUS_PER_NODE=1 run "$PRIMUS_CLI" direct --single --module mypkg.train -- x
  assert_success
  assert_output --partial "trained"
}

@test "--single with GPUS_PER_NODE=2: the summary says 1 process per node, and why" {
  GPUS_PER_NODE=2 run "$PRIMUS_CLI" direct --dry-run --single --module primus_runner -- preflight
  assert_success
  assert_output --partial "processes per node: 1 (run mode single, from --single: one process per node; GPUS_PER_NODE=2"
  refute_output --partial "processes per node: 2"
  assert_output --regexp "command: [^ ]*python -m primus_runner preflight"
  # torchrun mode keeps the count it starts.
  GPUS_PER_NODE=2 run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_output --partial "processes per node: 2"
  assert_output --partial "--nproc_per_node 2"
}

@test "train pretrain --config missing.yaml: one clear error naming the file, exit 1, before any hook" {
  run "$PRIMUS_CLI" direct --module primus_runner -- train pretrain --config missing.yaml
  assert_failure 1
  assert_output --partial "experiment config 'missing.yaml' (train pretrain --config) does not exist (relative paths are read from the working directory $PWD)"
  refute_output --partial "exit code 78"
  refute_output --partial "stdout -----"
  refute_output --partial "Bad file descriptor"
  refute_output --regexp "hook .* done in"
  # The last line names the log, which holds the cause.
  assert_line --index -1 --regexp "launch stopped before the workload started \(exit code 1\); log: "
  grep -q "experiment config 'missing.yaml'" "$PRIMUS_WORKSPACE"/logs/*.log
  run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- train pretrain --config=missing.yaml
  assert_failure 1
}

@test "a failing hook that printed nothing on stdout: no empty stdout box" {
  mkdir -p hooks/train/pretrain
  printf '#!/bin/bash\necho "my hook: cannot reach the data mount" >&2\nexit 5\n' >hooks/train/pretrain/00_fail.sh
  PRIMUS_HOOKS_DIR=$PWD/hooks run "$REPO_ROOT/runner/helpers/execute_hooks.sh" train pretrain
  assert_failure 3
  assert_output --partial "my hook: cannot reach the data mount"
  assert_output --partial "failed with exit code 5; the cause is its stderr above (no stdout)."
  refute_output --partial "stdout -----"
}

# hold_port PORT: a listener on PORT until the test ends (or another process
# already holds it); returns once the port is taken.
hold_port() {
  "$REPO_ROOT/.venv/bin/python" -c 'import socket, sys, time
s = socket.socket()
try:
    s.bind(("", int(sys.argv[1]))); s.listen()
except OSError:
    pass  # held by another process already
open(sys.argv[2], "w").close()
time.sleep(600)' "$1" "$TEST_DIR/held" &
  HOLDER=$!
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -e $TEST_DIR/held ]] && break
    sleep 0.1
  done
  ! "$REPO_ROOT/.venv/bin/python" -c 'import socket, sys; socket.socket().bind(("", int(sys.argv[1])))' "$1" 2>/dev/null
}

@test "make demo passes while another process holds port 1234 (it picks a free port)" {
  unset MASTER_PORT
  hold_port 1234
  PRIMUS_TRAIN_STEPS=8 run make -C "$REPO_ROOT" --no-print-directory demo
  assert_success
  assert_output --partial "demo OK: "
  refute_output --partial "MASTER_PORT=1234"
  assert_output --regexp "MASTER_PORT=[0-9]+"
}

# refute_internals FILE: none of torchrun's or the wrappers' own lines in FILE.
refute_internals() {
  run grep -E "^[WE][0-9]{4} [0-9:.]+ [0-9]+ .*(api|run)\.py:[0-9]+\]|Terminated$|Killed$|supervise\.sh: line|run_worker\.sh: line" "$1"
  assert_failure
}

@test "a rank killed by SIGKILL: the OOM hint; torchrun's and bash's own lines stay in the log, off the console" {
  export GPUS_PER_NODE=2
  # The hint reads this fake cgroup and kernel log (PRIMUS_SYSFS_ROOT / PRIMUS_DEV_ROOT).
  mkdir -p "$PRIMUS_SYSFS_ROOT/proc/self" "$PRIMUS_SYSFS_ROOT/sys/fs/cgroup/job" "$PRIMUS_DEV_ROOT/dev"
  echo "0::/job" >"$PRIMUS_SYSFS_ROOT/proc/self/cgroup"
  printf 'oom 1\noom_kill 1\n' >"$PRIMUS_SYSFS_ROOT/sys/fs/cgroup/job/memory.events"
  echo "3,5,9,-;Memory cgroup out of memory: Killed process 77 (python)" >"$PRIMUS_DEV_ROOT/dev/kmsg"
  "$PRIMUS_CLI" direct --script "$WORKLOADS/kill_self.py" -- 1 >"$TEST_DIR/console" 2>&1 && status=0 || status=$?
  cat "$TEST_DIR/console"
  [[ $status -eq 137 ]]
  grep -q "global rank 1 (local rank 1 of node 0) failed first, exit code 137 (killed by SIGKILL)" "$TEST_DIR/console"
  grep -q "hint: a rank killed by SIGKILL that the launcher did not stop was most often killed by the kernel's out-of-memory killer" "$TEST_DIR/console"
  grep -qF "cgroup /job memory.events: oom_kill 1" "$TEST_DIR/console"
  grep -qF "kernel log: Memory cgroup out of memory: Killed process 77 (python)" "$TEST_DIR/console"
  refute_internals "$TEST_DIR/console"
  # torchrun's own lines are in the log, between markers.
  log=$(echo "$PRIMUS_WORKSPACE"/logs/*.log)
  grep -q "^----- torchrun's own log lines (not shown on the console) -----" "$log"
  grep -qE "^W[0-9]{4} .*Sending process [0-9]+ closing signal SIGTERM" "$log"
}

@test "--single, the workload killed by SIGKILL: the same failure report and OOM hint as torchrun runs; the requeue code is no failure" {
  mkdir -p "$PRIMUS_SYSFS_ROOT/proc/self" "$PRIMUS_SYSFS_ROOT/sys/fs/cgroup/job" "$PRIMUS_DEV_ROOT/dev"
  echo "0::/job" >"$PRIMUS_SYSFS_ROOT/proc/self/cgroup"
  printf 'oom 1\noom_kill 1\n' >"$PRIMUS_SYSFS_ROOT/sys/fs/cgroup/job/memory.events"
  echo "3,5,9,-;Memory cgroup out of memory: Killed process 77 (python)" >"$PRIMUS_DEV_ROOT/dev/kmsg"
  "$PRIMUS_CLI" direct --single --script "$WORKLOADS/kill_self.py" -- 0 >"$TEST_DIR/console" 2>&1 && status=0 || status=$?
  cat "$TEST_DIR/console"
  [[ $status -eq 137 ]]
  grep -q "failure report: the workload (run mode single: global rank 0, the one process of node 0) failed, exit code 137 (killed by SIGKILL)" "$TEST_DIR/console"
  grep -q "hint: a rank killed by SIGKILL that the launcher did not stop was most often killed by the kernel's out-of-memory killer" "$TEST_DIR/console"
  grep -qF "kernel log: Memory cgroup out of memory: Killed process 77 (python)" "$TEST_DIR/console"
  grep -q "| rank 0 up" "$TEST_DIR/console"
  refute_internals "$TEST_DIR/console"
  "$PRIMUS_CLI" direct --single --script "$WORKLOADS/exit_with.py" -- 85 >"$TEST_DIR/requeue" 2>&1 && status=0 || status=$?
  [[ $status -eq 85 ]]
  run grep -q "failure report" "$TEST_DIR/requeue"
  assert_failure
  grep -q "workload exited with the requeue code 85" "$TEST_DIR/requeue"
}

@test "a stop: no [defaultN]:Terminated, no torchrun lines on the console" {
  export GPUS_PER_NODE=2 PRIMUS_KILL_GRACE=8
  mkdir -p "$TEST_DIR/out"
  # sleeper.py keeps SIGTERM's default action: killed by it, as most scripts are.
  setsid "$PRIMUS_CLI" direct --script "$WORKLOADS/sleeper.py" -- "$TEST_DIR/out" first-hour >"$TEST_DIR/console" 2>&1 &
  launcher=$!
  local i
  for ((i = 0; i < 300; i++)); do
    [[ -f $TEST_DIR/out/pid.0 && -f $TEST_DIR/out/pid.1 ]] && break
    sleep 0.1
  done
  [[ -f $TEST_DIR/out/pid.1 ]]
  kill -TERM -- "-$launcher"
  wait "$launcher" && status=0 || status=$?
  cat "$TEST_DIR/console"
  [[ $status -eq 143 ]]
  refute_internals "$TEST_DIR/console"
  grep -q "Received 15 death signal" "$PRIMUS_WORKSPACE"/logs/*.log
  [[ $(tail -n 1 "$TEST_DIR/console") == *"stop: SIGTERM"*"ranks 0, 1 still running at the stop"* ]]
}

@test "did you mean: mistyped modes, options and subcommands in primus-cli, direct, slurm, container, env, config" {
  run "$PRIMUS_CLI" dierct
  assert_failure 2
  assert_output --partial "unknown mode 'dierct'; accepted: config, container, direct, doctor, env, k8s, report, slurm-entry, slurm, stacks; did you mean 'direct'?"
  run "$PRIMUS_CLI" --dryrun direct
  assert_failure 2
  assert_output --partial "did you mean '--dry-run'?"
  run "$PRIMUS_CLI" direct --modul mypkg -- x
  assert_failure 2
  assert_output --partial "unknown option '--modul' for 'primus-cli direct'; did you mean '--module'?"
  run "$PRIMUS_CLI" --dry-run slurm srun -N 2 -- dierct -- preflight
  assert_failure 2
  assert_output --partial "'dierct' after '--' is not a mode"
  assert_output --partial "did you mean 'direct'?"
  run "$PRIMUS_CLI" --dry-run container --imag rocm/x -- preflight
  assert_output --partial "'--imag' is not an option of primus-cli container: it is passed to the container runtime as its own; did you mean '--image'?"
  run "$PRIMUS_CLI" env chek
  assert_failure 2
  assert_output --partial "did you mean 'check'?"
  run "$PRIMUS_CLI" config shwo
  assert_failure 2
  assert_output --partial "did you mean 'show'?"
  run "$PRIMUS_CLI" env list --formt json
  assert_output --partial "did you mean '--format'?"
}

@test "one stream: every launcher line is on stderr, stdout stays the workload's and the commands' data" {
  export GPUS_PER_NODE=1
  run --separate-stderr "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_success
  [[ -z $output ]] || fail "launcher lines on stdout: $output"
  [[ $stderr == *"[INFO] launch configuration:"* && $stderr == *"dry run: nothing was started"* ]]
  # A real launch: the workload's own lines on stdout, the launcher's on stderr.
  run --separate-stderr "$PRIMUS_CLI" direct --single --script "$WORKLOADS/exit_with.py" -- 0
  assert_success
  run grep -c "\[INFO\]\|\[WARN\]\|\[ERROR\]" <<<"$output"
  assert_output 0
  # env list's table is data: stdout.
  run --separate-stderr "$PRIMUS_CLI" env list
  assert_success
  [[ $output == *GPUS_PER_NODE* ]]
}
