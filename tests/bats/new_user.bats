#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell; hook bodies are single-quoted
# What a new user hit: one test per bullet of the issue's "Why",
# each reproducing the command and asserting the corrected behaviour.
bats_require_minimum_version 1.5.0

load helpers/launcher

setup() {
  launcher_setup
  SECRET=hf_NewUserSecret_${RANDOM}${RANDOM}
  export HF_TOKEN=$SECRET
}

teardown() {
  launcher_teardown
}

# no_secret_in PATH...: fail when a file under PATH holds the secret.
no_secret_in() {
  local found
  found=$(grep -rlF -- "$SECRET" "$@" 2>/dev/null || true)
  [[ -z $found ]] || fail "secret value found in: $found"
}

@test "secrets in clear: a failing hook, a PRIMUS_DEBUG=1 run and a set -x sourcing never show the secret" {
  mkdir hooks
  printf 'echo "token=$HF_TOKEN"\necho "oops $HF_TOKEN" >&2\nexit 1\n' >hooks/00_fail.sh
  run --separate-stderr env PRIMUS_HOOKS_DIR="$PWD/hooks" "$PRIMUS_CLI" direct --module primus_runner -- train pretrain
  assert_failure 3
  [[ "$output$stderr" == *"token=****"* ]] || fail "hook output not masked: $stderr"
  [[ "$output$stderr" != *"$SECRET"* ]] || fail "secret shown: $stderr"
  no_secret_in "$PRIMUS_WORKSPACE"
  # PRIMUS_DEBUG=1 traces the layers: through the masking filter.
  run --separate-stderr env PRIMUS_DEBUG=1 "$PRIMUS_CLI" direct --dry-run --env "MY_API_KEY=$SECRET" \
    --module primus_runner -- preflight
  assert_success
  [[ $stderr == *"+ "* ]] || fail "PRIMUS_DEBUG=1 traced nothing"
  [[ "$output$stderr" != *"$SECRET"* ]] || fail "secret in the trace"
  # A caller's set -x: base_env traces neither its ~1,000 lines nor a secret.
  run --separate-stderr bash -c "set -x; source '$REPO_ROOT/runner/helpers/envs/base_env.sh'; LOG_INFO \"t=\$HF_TOKEN\" 2>&1"
  assert_success
  local traced
  traced=$(grep -c '^+' <<<"$stderr" || true)
  ((traced < 100)) || fail "set -x sourcing printed $traced trace lines"
  [[ $output == *"t=****"* ]] || fail "log line not masked: $output"
  [[ $(grep -v '^+ LOG_INFO' <<<"$stderr$output") != *"$SECRET"* ]] || fail "secret traced: $stderr"
  # And the trace filter itself masks a secret assigned under PRIMUS_DEBUG=1.
  run bash -c "source '$REPO_ROOT/runner/lib/common.sh'; PRIMUS_DEBUG=1; primus_debug_trace_begin
    LATE_TOKEN=late_value_123; primus_debug_trace_end; sleep 0.2" 
  assert_success
  refute_output --partial late_value_123
}

@test "the log file holds the start (config warnings, base_env lines) and a failing hook still leaves a log" {
  printf 'direct:\n  bogus_key: 1\n' >cfg.yaml
  run --separate-stderr "$PRIMUS_CLI" direct --config cfg.yaml --single --script "$WORKLOADS/exit_with.py" -- 0
  assert_success
  local log
  log=$(find "$PRIMUS_WORKSPACE/logs" -name '*.log' -type f)
  [[ -n $log ]] || fail "no log"
  grep -q "unknown config key 'direct.bogus_key'" "$log"
  grep -q "base_env cluster:" "$log"
  # Every console line is in the log.
  local line
  while IFS= read -r line; do
    grep -qF -- "$line" "$log" || fail "console line missing from the log: $line"
  done <<<"$output"$'\n'"$stderr"
  rm -rf "$PRIMUS_WORKSPACE"
  mkdir hooks
  printf 'echo hook-ran\nexit 3\n' >hooks/00_fail.sh
  run --separate-stderr env PRIMUS_HOOKS_DIR="$PWD/hooks" "$PRIMUS_CLI" direct --module primus_runner -- train pretrain
  assert_failure 3
  log=$(find "$PRIMUS_WORKSPACE/logs" -name '*.log' -type f)
  [[ -n $log ]] || fail "a failing hook left no log"
  grep -q "hook-ran" "$log"
  grep -q "launch stopped before the workload started (exit code 3); log: $log" "$log"
  [[ $stderr == *"launch stopped before the workload started (exit code 3); log: "* ]]
}

@test "config type mistakes are exit 2 naming key, type seen and type wanted; suggestions stay in section and type" {
  local bad
  for bad in 'direct:\n  env: "T_FOO=bar"\n' 'direct:\n  numa: maybe\n' 'direct:\n  log_all_ranks: perhaps\n' 'direct: 5\n'; do
    printf "%b" "$bad" >cfg.yaml
    run --separate-stderr "$PRIMUS_CLI" direct --dry-run --config cfg.yaml --module primus_runner -- preflight
    assert_failure 2
    [[ $stderr == *"config key 'direct"*"in cfg.yaml is a"*"; wanted "* ]] || fail "unclear: $stderr"
  done
  printf 'direct:\n  env: "T_FOO=bar"\n' >cfg.yaml
  run --separate-stderr "$PRIMUS_CLI" direct --dry-run --config cfg.yaml --module primus_runner -- preflight
  [[ $stderr == *"'direct.env' in cfg.yaml is a string ('T_FOO=bar'); wanted a list"* ]]
  printf 'direct:\n  bogus: x\n' >cfg.yaml
  run --separate-stderr "$PRIMUS_CLI" direct --dry-run --config cfg.yaml --module primus_runner -- preflight
  assert_success
  [[ $stderr == *"unknown config key 'direct.bogus'"* && $stderr != *"direct.nnodes"* ]] || fail "$stderr"
}

@test "--log_file naming a directory is exit 2 and writes no <dir>-1.log" {
  mkdir "$TEST_DIR/logdir"
  run --separate-stderr "$PRIMUS_CLI" direct --log_file "$TEST_DIR/logdir" --single --script "$WORKLOADS/exit_with.py" -- 0
  assert_failure 2
  [[ $stderr == *"log file '$TEST_DIR/logdir' (--log_file / config direct.log_file) is a directory"* ]]
  [ ! -e "$TEST_DIR/logdir-1.log" ]
}

@test "--accelerator tpu is a primus-cli error, not a helper's usage" {
  run --separate-stderr "$PRIMUS_CLI" direct --dry-run --accelerator tpu --module primus_runner -- preflight
  assert_failure 2
  [[ $stderr == *"--accelerator 'tpu' is not supported; accepted: auto, rocm, cuda, neuron, cpu"* ]]
  [[ "$output$stderr" != *"usage: python3 -m primus_runner"* && "$output$stderr" != *"launch serve"* ]]
}

@test "PRIMUS_PYTHON=/nonexistent: exit 1 naming PRIMUS_PYTHON, no bash line number" {
  local mode
  for mode in "direct --dry-run --module primus_runner -- preflight" "env check" "config show"; do
    # shellcheck disable=SC2086 # the words of the mode on purpose
    run --separate-stderr env PRIMUS_PYTHON=/nonexistent "$PRIMUS_CLI" $mode
    assert_failure 1
    [[ $stderr == *"PRIMUS_PYTHON='/nonexistent' is not an executable Python"* ]] || fail "$mode: $stderr"
    [[ ! $stderr =~ line\ [0-9]+: ]] || fail "bash line number: $stderr"
  done
}

@test "primus-cli --dry-run env docs --out FILE writes nothing" {
  run --separate-stderr "$PRIMUS_CLI" --dry-run env docs --out "$TEST_DIR/env.md"
  assert_success
  [ ! -e "$TEST_DIR/env.md" ]
  [[ $stderr == *"dry run: would write $TEST_DIR/env.md"* ]]  # a launcher line: stderr
}

@test "the README's hostlist command works as written from the repository root" {
  local cmd
  cmd=$(grep -o "PYTHONPATH=python .venv/bin/python -m primus_runner hostlist expand 'n\[1-3\]'" "$REPO_ROOT/README.md" | head -n 1)
  [[ -n $cmd ]] || fail "README no longer documents the invocation"
  cd "$REPO_ROOT"
  run env PYTHONPATH=python .venv/bin/python -m primus_runner hostlist expand 'n[1-3]'
  assert_success
  assert_output "$(printf 'n1\nn2\nn3')"
}

@test "a host with no accelerator starts 1 process by default, and the summary says why" {
  run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "--nproc_per_node 1 "
  assert_output --partial "processes per node: 1 (no accelerator detected: 1"
  run env GPUS_PER_NODE=3 "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_output --partial "--nproc_per_node 3 "
  assert_output --partial "processes per node: 3 (GPUS_PER_NODE exported)"
}

@test "env check says so on success; a bad SLURM_STEP_NODELIST is named; an --env newline is shown quoted; a signal before the workload ends with one closing line" {
  run --separate-stderr "$PRIMUS_CLI" env check
  assert_success
  assert_output "[env check] no problems found"
  run --separate-stderr env SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_NNODES=2 SLURM_NODEID=0 SLURM_PROCID=0 \
    SLURM_NODELIST='n[1-' SLURM_STEP_NODELIST='n[1-' "$REPO_ROOT/runner/primus-cli-slurm-entry.sh" --dry-run \
    direct --module primus_runner -- preflight
  assert_failure 2
  [[ $stderr == *"SLURM_STEP_NODELIST: invalid hostlist 'n[1-'"* ]] || fail "$stderr"
  run "$PRIMUS_CLI" direct --dry-run --env $'X=a\n[NODE-0(x)] [INFO] fake' --module primus_runner -- preflight
  assert_success
  assert_output --partial "env X=\$'a\\n[NODE-0(x)] [INFO] fake'"
  refute_line "[NODE-0(x)] [INFO] fake"
  # A stop while a hook runs: exit 143, one closing line naming the signal and the log.
  mkdir hooks
  printf 'touch "%s/hook-started"; sleep 30\n' "$TEST_DIR" >hooks/00_slow.sh
  PRIMUS_HOOKS_DIR=$PWD/hooks setsid "$PRIMUS_CLI" direct --module primus_runner -- train pretrain \
    >"$TEST_DIR/console" 2>&1 &
  local pid=$! n=0
  until [[ -e $TEST_DIR/hook-started ]] || ((n++ > 300)); do sleep 0.1; done
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  ((rc == 143)) || fail "exit $rc: $(cat "$TEST_DIR/console")"
  run grep -c "launch interrupted by signal 15 before the workload started (exit code 143); log: " "$TEST_DIR/console"
  assert_output 1
}

@test "no interpreter traceback: a hook protocol error, and a stop of a running torchrun" {
  mkdir hooks
  printf 'echo "env.1BAD=x"\n' >hooks/00_bad.sh
  run --separate-stderr env PRIMUS_HOOKS_DIR="$PWD/hooks" "$PRIMUS_CLI" direct --module primus_runner -- train pretrain
  assert_failure 2
  [[ "$output$stderr" != *Traceback* && "$output$stderr" != *"Exception ignored"* ]] || fail "$stderr"
  rm -rf hooks
  mkdir "$TEST_DIR/out"
  setsid "$PRIMUS_CLI" direct --script "$WORKLOADS/sleeper.py" -- "$TEST_DIR/out" marker >"$TEST_DIR/console" 2>&1 &
  local pid=$! n=0
  until [[ -e $TEST_DIR/out/pid.0 ]] || ((n++ > 600)); do sleep 0.1; done
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  ((rc == 143)) || fail "exit $rc: $(cat "$TEST_DIR/console")"
  run grep -E "Traceback|SignalException|Exception ignored" "$TEST_DIR/console"
  assert_failure
}

@test "make demo needs no npm and prints one line per set-up step" {
  run make -C "$REPO_ROOT" -n -W pyproject.toml demo
  assert_success
  refute_output --partial npm
  refute_output --partial node_modules
  assert_output --partial 'echo "setup [1/4]'
  assert_output --partial 'echo "setup [4/4]'
  run grep -c '^echo "demo \[' "$REPO_ROOT/examples/demo.sh"
  assert_output 2
}

@test "--log-all-ranks keeps per-rank logs: rank-<RANK>.log for every rank, stdout and stderr in one file, with and without --log-all-ranks" {
  export GPUS_PER_NODE=3
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/fail_one_rank.py" -- 9 --duration 0
  assert_success
  local dir
  dir=$(ls -d "$PRIMUS_WORKSPACE"/logs/*.ranks)
  for r in 0 1 2; do
    [[ -L $dir/rank-$r.log ]]
    grep -q "rank $r up" "$dir/rank-$r.log"       # stdout
    grep -q "rank $r stderr" "$dir/rank-$r.log"   # stderr, same file
  done
  refute_output --partial "[default1]:"
  rm -rf "$PRIMUS_WORKSPACE/logs"
  run "$PRIMUS_CLI" direct --log-all-ranks --script "$WORKLOADS/fail_one_rank.py" -- 9 --duration 0
  assert_success
  assert_output --partial "[default1]:rank 1 up"
  dir=$(ls -d "$PRIMUS_WORKSPACE"/logs/*.ranks)
  grep -q "rank 1 up" "$dir/rank-1.log"
}
