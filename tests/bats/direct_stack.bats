#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; exports are per test
# primus-cli direct: what runs and with which interpreter, without
# the user environments: missing entries, missing interpreters, run modes, and
# workload arguments that look like options.

setup() {
  load helpers/launcher
  launcher_setup
  export GPUS_PER_NODE=2 MASTER_PORT
  MASTER_PORT=$(free_port)
  mkdir out
}

teardown() {
  launcher_teardown
}

@test "no --script/--module and no primus/cli/main.py: exit 1, nothing trained, naming the fix" {
  run "$PRIMUS_CLI" direct -- train pretrain --config "$REPO_ROOT/examples/cpu_pretrain.yaml"
  assert_failure 1
  assert_output --partial "training script 'primus/cli/main.py' (the default) not found"
  assert_output --partial "has no installed module primus.cli.main to fall back to"
  assert_output --partial "--script path/to/train.py or --module package.module"
  refute_output --partial "[train]"
  # Nothing trained; the only file is the log of the failed launch (every
  # outcome leaves a log), which names the error.
  run find "$PRIMUS_WORKSPACE" -type f
  assert_output --regexp "^$PRIMUS_WORKSPACE/logs/primus-[0-9TZ]+-node0\.log$"
  grep -q "training script 'primus/cli/main.py'" "$PRIMUS_WORKSPACE"/logs/*.log
  # A dry run (which may run on a submit host without the checkout) notes it
  # and prints the command upstream Primus would run.
  run "$PRIMUS_CLI" direct --dry-run -- train pretrain
  assert_success
  assert_output --partial "dry run: checked on the node, not here (a launch there stops with exit 1 unless fixed): training script 'primus/cli/main.py' (the default) not found"
  assert_output --regexp "command: .*-m primus.cli.main train pretrain"
}

@test "the default primus/cli/main.py runs when it exists in the working directory" {
  mkdir -p primus/cli
  cp "$WORKLOADS/argv.py" primus/cli/main.py
  export PRIMUS_T_ARGV_OUT=$PWD/out/argv
  run "$PRIMUS_CLI" direct --single -- train pretrain
  assert_success
  diff <(tr '\0' '\n' <out/argv.0) <(printf '%s\n' train pretrain)
}

@test "a configured direct.script that does not exist: exit 1 naming it" {
  printf 'direct:\n  script: %s\n' "$TEST_DIR/missing_train.py" >cfg.yaml
  run "$PRIMUS_CLI" direct --config cfg.yaml -- x
  assert_failure 1
  assert_output --partial "'$TEST_DIR/missing_train.py' (config direct.script) not found"
  run "$PRIMUS_CLI" direct --config cfg.yaml --dry-run -- x
  assert_success
  assert_output --partial "dry run: checked on the node, not here (a launch there stops with exit 1 unless fixed): training script '$TEST_DIR/missing_train.py' (config direct.script) not found"
}

@test "config direct.module runs python -m; --script and --module together exit 2" {
  printf 'direct:\n  module: primus_runner\n' >cfg.yaml
  run "$PRIMUS_CLI" direct --config cfg.yaml --dry-run -- preflight
  assert_success
  assert_output --regexp "command: .*-m primus_runner preflight"
  run "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/argv.py" --module primus_runner -- x
  assert_failure 2
  assert_output --partial "give one of them"
}

@test "a workload interpreter that does not exist: exit 1 naming it and how it was chosen" {
  run "$PRIMUS_CLI" direct --python "$TEST_DIR/no/python" --module primus_runner -- preflight
  assert_failure 1
  assert_output --partial "workload interpreter '$TEST_DIR/no/python' (chosen by --python) not found"
  PRIMUS_WORKLOAD_PYTHON=no-such-python-$RANDOM run "$PRIMUS_CLI" direct --module primus_runner -- preflight
  assert_failure 1
  assert_output --partial "(chosen by PRIMUS_WORKLOAD_PYTHON) not found"
  # A dry run notes it as the node's check (once) and prints the command.
  run "$PRIMUS_CLI" direct --dry-run --python "$TEST_DIR/no/python" --module primus_runner -- preflight
  assert_success
  assert_output --partial "dry run: checked on the node, not here (a launch there stops with exit 1 unless fixed): workload interpreter '$TEST_DIR/no/python' (chosen by --python) not found"
  [[ $(grep -c "checked on the node" <<<"$output") == 1 ]]
  assert_output --regexp "command: $TEST_DIR/no/python .*-m primus_runner preflight"
}

@test "PRIMUS_TORCHRUN replaces '<python> runner/helpers/torchrun_quiet.py'" {
  PRIMUS_TORCHRUN=/opt/my/torchrun run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "command: /opt/my/torchrun --nproc_per_node 2"
}

# run_argv WORDS...: launch argv.py in single mode with WORDS after `--`; the
# script writes what it received to out/argv.0.
run_argv() {
  export PRIMUS_T_ARGV_OUT=$PWD/out/argv
  run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/argv.py" -- "$@"
}

# assert_argv WORDS...: the workload received exactly WORDS.
assert_argv() {
  assert_success
  diff <(tr '\0' '\n' <out/argv.0) <(printf '%s\n' "$@")
}

@test "workload word -m reaches the workload verbatim" {
  run_argv -m json.tool --indent 2
  assert_argv -m json.tool --indent 2
}

@test "workload word --help reaches the workload (the launcher's help is not printed)" {
  run_argv --help
  assert_argv --help
  refute_output --partial "Usage: primus-cli direct"
}

@test "workload word --dry-run reaches the workload and the launch is real" {
  run_argv --dry-run x
  assert_argv --dry-run x
  refute_output --partial "dry run: nothing was started"
}

@test "workload words --hooks-dir DIR select no hooks directory and reach the workload" {
  mkdir -p evil
  printf 'touch %q\necho env.PRIMUS_T_EVIL=1\n' "$PWD/evil-ran" >evil/00_evil.sh
  run_argv --hooks-dir "$PWD/evil" a b
  assert_argv --hooks-dir "$PWD/evil" a b
  [[ ! -e evil-ran ]]
}

@test "workload words --max_steps 5 --config x.yaml pass the hook runner and reach the workload" {
  run_argv --max_steps 5 --config x.yaml
  assert_argv --max_steps 5 --config x.yaml
}

@test "run mode single exports RANK=NODE_RANK, WORLD_SIZE=NNODES, LOCAL_RANK=0, LOCAL_WORLD_SIZE=1 and the JAX coordinator" {
  mkdir -p "$PRIMUS_SYSFS_ROOT/etc" && echo "10.77.0.1 node0" >"$PRIMUS_SYSFS_ROOT/etc/hosts"  # node0 must resolve here
  NNODES=3 NODE_RANK=2 MASTER_ADDR=node0 run "$PRIMUS_CLI" direct --single --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "run_mode=single (--single)"
  # no node 0 runs here: the cross-node cluster check is switched off for this run
  NNODES=3 NODE_RANK=2 MASTER_ADDR=10.0.0.1 PRIMUS_SKIP_MAIN_LAUNCH=0 PRIMUS_CLUSTER_CHECK=0 \
    run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/print_env.py" -- "$PWD/out" \
    RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE JAX_COORDINATOR_IP JAX_COORDINATOR_PORT JAX_COORDINATOR_ADDRESS RUN_MODE
  assert_success
  [[ $(<out/RANK.2) == 2 && $(<out/WORLD_SIZE.2) == 3 && $(<out/LOCAL_RANK.2) == 0 && $(<out/LOCAL_WORLD_SIZE.2) == 1 ]]
  [[ $(<out/JAX_COORDINATOR_IP.2) == 10.0.0.1 && $(<out/JAX_COORDINATOR_PORT.2) == "$MASTER_PORT" ]]
  [[ $(<out/JAX_COORDINATOR_ADDRESS.2) == "10.0.0.1:$MASTER_PORT" && $(<out/RUN_MODE.2) == single ]]
}

@test "JAX coordinator only with NNODES > 1 in single mode; never exported in torchrun mode" {
  run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/print_env.py" -- "$PWD/out" JAX_COORDINATOR_ADDRESS
  assert_success
  [[ $(<out/JAX_COORDINATOR_ADDRESS.0) == "<unset>" ]]
  PRIMUS_FRAMEWORK=jax run "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" JAX_COORDINATOR_PORT RUN_MODE
  assert_success
  [[ $(<out/JAX_COORDINATOR_PORT.0) == "<unset>" && $(<out/RUN_MODE.1) == torchrun ]]
}

@test "torchrun mode with a JAX coordinator on MASTER_PORT or MASTER_PORT+1: env check refuses, exit 2" {
  for port in "$MASTER_PORT" "$((MASTER_PORT + 1))"; do
    JAX_COORDINATOR_PORT=$port run "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
    assert_failure 2
    assert_output --partial "JAX_COORDINATOR_PORT"
    assert_output --partial "torchrun's rendezvous store already listens"
    [[ -z $(ls -A out) ]]
  done
  # the same value is fine in single mode (no torchrun store on that port)
  JAX_COORDINATOR_PORT=$MASTER_PORT run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  assert_success
  # and `env check` by hand judges it from RUN_MODE
  RUN_MODE=torchrun MASTER_PORT=29500 JAX_COORDINATOR_PORT=29501 run "$PRIMUS_CLI" env check
  assert_failure 2
  assert_output --partial "JAX_COORDINATOR_PORT"
}

@test "run mode: a hook's env.RUN_MODE=single beats --single's absence and direct.run_mode; node_smoke defaults to single" {
  mkdir -p hooks
  printf 'echo env.RUN_MODE=single\n' >hooks/00_mode.sh
  printf 'direct:\n  run_mode: torchrun\n' >cfg.yaml
  PRIMUS_HOOKS_DIR=$PWD/hooks run "$PRIMUS_CLI" direct --config cfg.yaml --dry-run --module primus_runner -- train pretrain
  assert_success
  assert_output --partial "run_mode=single (RUN_MODE)"
  refute_output --partial "torchrun_quiet.py"
  run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- node_smoke
  assert_success
  assert_output --partial "run_mode=single (node_smoke default)"
  run "$PRIMUS_CLI" direct --config cfg.yaml --dry-run --module primus_runner -- node_smoke
  assert_success
  assert_output --partial "run_mode=torchrun (config direct.run_mode)"
  printf 'direct:\n  run_mode: mpi\n' >bad.yaml
  run "$PRIMUS_CLI" direct --config bad.yaml --dry-run --module primus_runner -- x
  assert_failure 2
  assert_output --partial "run mode 'mpi' (from config direct.run_mode) is not known; accepted: torchrun, single"
}

# hold_port PORT: a process listening on PORT (all IPv4 addresses) until the test ends.
hold_port() {
  "$REPO_ROOT/.venv/bin/python" -c '
import socket, sys, time
s = socket.socket(); s.bind(("", int(sys.argv[1]))); s.listen(1)
open(sys.argv[2], "w").write("up")
time.sleep(120)' "$1" "$TEST_DIR/holder.up" &
  HOLDER=$!
  for _ in $(seq 1 100); do [[ -e $TEST_DIR/holder.up ]] && break; sleep 0.05; done
}

@test "MASTER_PORT held by another process: exit 2 before torchrun, naming the port and the holder" {
  hold_port "$MASTER_PORT"
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  kill "$HOLDER"
  assert_failure 2
  assert_output --partial "MASTER_PORT=$MASTER_PORT cannot be bound on node 0"
  assert_output --partial "held by pid $HOLDER"
  refute_output --partial "torch.distributed"
  refute_output --partial "Traceback"
  [[ -z $(ls -A out) ]]
  # PRIMUS_SKIP_VALIDATION=1 skips the pre-check (torchrun then fails on its own)
  hold_port "$MASTER_PORT"
  PRIMUS_SKIP_VALIDATION=1 run "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  kill "$HOLDER"
  assert_success
}

@test "MASTER_PORT=auto picks a free port on a single node and the launch works; with NNODES=2 it exits 2" {
  MASTER_PORT=auto run "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" MASTER_PORT
  assert_success
  port=$(<out/MASTER_PORT.0)
  [[ $port =~ ^[0-9]+$ && $port -ge 1024 ]]
  [[ $(<out/MASTER_PORT.1) == "$port" ]]
  assert_output --partial "--master_port $port"
  MASTER_PORT=auto NNODES=2 MASTER_ADDR=127.0.0.1 run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "MASTER_PORT=auto with NNODES=2"
}

@test "node 0 with a MASTER_ADDR that does not resolve, or is another host: exit 2 with the fix" {
  MASTER_ADDR=no-such-host.invalid run "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  assert_failure 2
  assert_output --partial "MASTER_ADDR='no-such-host.invalid' does not resolve on node 0"
  # 192.0.2.1 (TEST-NET-1, RFC 5737) is never an address of this host
  NNODES=2 MASTER_ADDR=192.0.2.1 run "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" X
  assert_failure 2
  assert_output --partial "MASTER_ADDR='192.0.2.1' resolves to 192.0.2.1, none of them an address of this host"
  assert_output --partial "Fix: export MASTER_ADDR="
  [[ -z $(ls -A out) ]]
}

@test "3 processes, rank 1 (not echoed) raises ValueError('boom'): exit 1, the report names rank 1 and the exception; torchrun's traceback only in the log" {
  export GPUS_PER_NODE=3
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/fail_one_rank.py" -- 1
  assert_failure 1
  # Local ranks 0 and 2 reach the console, rank 1 does not.
  refute_output --partial "[default1]:"
  assert_output --partial "failure report: global rank 1 (local rank 1 of node 0) failed first, exit code 1."
  assert_output --partial "exception: ValueError: boom"
  assert_output --partial "| ValueError: boom"
  assert_output --regexp "ranks of this node that ended after it: 0 \(exit code 143.*\), 2 \(exit code 143"
  # No traceback of torchrun's own: the only one shown is rank 1's, quoted.
  [[ $(grep -c '^Traceback' <<<"$output") == 0 ]]
  refute_output --regexp 'File ".*torch/distributed/'
  assert_output --partial "torchrun: ChildFailedError: a worker failed"
  # The full output of rank 1 is the file the report names.
  rank_log=$(sed -n 's/.*full output of rank 1: \([^ ]*\).*/\1/p' <<<"$output")
  [[ $rank_log == "$PRIMUS_WORKSPACE"/logs/*.ranks/rank-1.log ]]
  grep -q "ValueError: boom" "$rank_log"
  # torchrun's own error report (ChildFailedError table) is kept in the log.
  log=$(ls "$PRIMUS_WORKSPACE"/logs/*.log)
  grep -q "torchrun's error report (not shown on the console)" "$log"
  grep -q "torch.distributed.elastic.multiprocessing.errors.ChildFailedError" "$log"
  grep -q "failure report: global rank 1" "$log"
}

@test "a rank's own exit code (7) is the launch's, and the report names that rank" {
  export GPUS_PER_NODE=3
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/exit_with.py" -- 7 2
  assert_failure 7
  assert_output --partial "failure report: global rank 2 (local rank 2 of node 0) failed first, exit code 7."
}
