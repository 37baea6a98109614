#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# primus-cli direct: the launch path (dry-run command, --env, hostile values,
# logs, exit codes, signals, validation, secrets).

setup() {
  load helpers/launcher
  launcher_setup
  export GPUS_PER_NODE=2 MASTER_PORT
  MASTER_PORT=$(free_port)
}

teardown() {
  launcher_teardown
}

@test "dry-run prints the torchrun command for the given distributed values" {
  # The pretrain hook checks the experiment config before anything starts.
  printf 'work_group: test\n' >cfg.yaml
  NNODES=4 NODE_RANK=3 MASTER_ADDR=10.1.2.3 MASTER_PORT=29400 GPUS_PER_NODE=8 \
    run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- train pretrain --config cfg.yaml
  assert_success
  assert_output --partial "helpers/torchrun_quiet.py --nproc_per_node 8 --nnodes 4 --node_rank 3 --master_addr 10.1.2.3 --master_port 29400"
  assert_output --regexp "-m primus_runner train pretrain --config cfg\.yaml"
}

@test "dry-run reads numbers as decimal: NODE_RANK=08 is 8" {
  mkdir -p "$PRIMUS_SYSFS_ROOT/etc" && echo "10.77.0.1 node0" >"$PRIMUS_SYSFS_ROOT/etc/hosts"
  NNODES=10 NODE_RANK=08 MASTER_ADDR=node0 run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
  assert_success
  assert_output --partial "--nnodes 10 --node_rank 8 "
}

@test "--single runs the workload interpreter without torchrun" {
  run "$PRIMUS_CLI" direct --module primus_runner --dry-run --single -- preflight
  assert_success
  refute_output --partial "torchrun"
  assert_output --regexp "command: .*python[0-9.]* -m primus_runner preflight"
}

@test "--env beats an exported value" {
  mkdir out
  PRIMUS_T_VAR=exported run "$PRIMUS_CLI" direct --env PRIMUS_T_VAR=from-cli \
    --script "$WORKLOADS/print_env.py" -- "$PWD/out" PRIMUS_T_VAR
  assert_success
  [[ $(<out/PRIMUS_T_VAR.0) == from-cli ]]
  [[ $(<out/PRIMUS_T_VAR.1) == from-cli ]]
}

@test "a hostile --env value arrives byte-identical and nothing in it runs" {
  mkdir out
  value='a b "dq" '\''sq'\'' $(touch pwned1) `touch pwned2` ; touch pwned3 * ? [x] ${HOME} \n end'
  run "$PRIMUS_CLI" direct --env "PRIMUS_T_HOSTILE=$value" \
    --script "$WORKLOADS/print_env.py" -- "$PWD/out" PRIMUS_T_HOSTILE
  assert_success
  [[ $(<out/PRIMUS_T_HOSTILE.0) == "$value" ]]
  [[ ! -e pwned1 && ! -e pwned2 && ! -e pwned3 ]]
  [[ ! -e $PRIMUS_WORKSPACE/pwned1 && ! -e $PRIMUS_WORKSPACE/pwned2 ]]
}

@test "an --env value holding a newline arrives byte-identical (single mode too)" {
  mkdir out
  value=$'line one\nline two; $(touch pwned)\n'
  run "$PRIMUS_CLI" direct --single --env "PRIMUS_T_NL=$value" \
    --script "$WORKLOADS/print_env.py" -- "$PWD/out" PRIMUS_T_NL
  assert_success
  cmp out/PRIMUS_T_NL.0 <(printf '%s' "$value")
  [[ ! -e pwned ]]
}

@test "--env FILE reads shell-style assignments: quotes stripped, \$VAR expanded, nothing run" {
  mkdir out
  printf '# comment\n\nPRIMUS_T_F1=one two\nPRIMUS_T_F2="quoted"\nPRIMUS_T_F4=$PRIMUS_T_F1/x\nPRIMUS_T_F5='"'"'$(touch pwned)'"'"'\n' >vars.env
  run "$PRIMUS_CLI" direct --single --env vars.env --script "$WORKLOADS/print_env.py" -- "$PWD/out" PRIMUS_T_F1 PRIMUS_T_F2 PRIMUS_T_F4 PRIMUS_T_F5
  assert_success
  [[ $(<out/PRIMUS_T_F1.0) == "one two" ]]
  [[ $(<out/PRIMUS_T_F2.0) == quoted ]]
  [[ $(<out/PRIMUS_T_F4.0) == "one two/x" ]]
  [[ $(<out/PRIMUS_T_F5.0) == '$(touch pwned)' ]]
  [[ ! -e pwned ]]
}

@test "--env FILE: the one parser (envfile.py) for every mode: 'export ' lines accepted, a bad line is exit 2 naming file and line, the same verdict as env check" {
  mkdir out
  printf 'export PRIMUS_T_F3=three\n' >ok.env
  run "$PRIMUS_CLI" direct --single --env ok.env --script "$WORKLOADS/print_env.py" -- "$PWD/out" PRIMUS_T_F3
  assert_success
  [[ $(<out/PRIMUS_T_F3.0) == three ]]
  printf 'PRIMUS_T_OK=1\n9BAD=2\n' >bad.env
  run "$PRIMUS_CLI" direct --single --env bad.env --script "$WORKLOADS/print_env.py" -- "$PWD/out" PRIMUS_T_OK
  assert_failure 2
  assert_output --partial "--env file bad.env line 2 is not KEY=VALUE with a valid name: '9BAD'"
  [[ ! -e out/PRIMUS_T_OK.0 ]]
  run "$PRIMUS_CLI" env check --env-file bad.env
  assert_failure 2
  assert_output --partial "bad.env line 2 is not KEY=VALUE with a valid name: '9BAD'"
}

@test "--env FILE is read by the launch helper: a helper that cannot run is exit 1, never an empty file" {
  # --env items enter the helper's precedence step; no second parser process.
  printf 'PRIMUS_T_OK=1\n' >ok.env
  PRIMUS_PYTHON=/bin/false run "$PRIMUS_CLI" direct --dry-run --env ok.env --module primus_runner -- preflight
  assert_failure 1
  refute_output --partial "dry run: nothing was started"
}

@test "--env without '=' that is not a file exits 2 naming it" {
  run "$PRIMUS_CLI" direct --module primus_runner --env NOT_A_PAIR -- preflight
  assert_failure 2
  assert_output --partial "--env 'NOT_A_PAIR'"
}

@test "--env with an invalid variable name exits 2 naming it" {
  run "$PRIMUS_CLI" direct --module primus_runner --env '1BAD-NAME=x' -- preflight
  assert_failure 2
  assert_output --partial "'1BAD-NAME' is not a valid variable name"
}

@test "an unknown launcher option before -- exits 2 naming it" {
  run "$PRIMUS_CLI" direct --module primus_runner --nproc 4 -- preflight
  assert_failure 2
  assert_output --partial "unknown option '--nproc'"
}

@test "dry-run leaves the working directory and the workspace unchanged" {
  mkdir -p "$PRIMUS_WORKSPACE/logs"
  echo keep >"$PRIMUS_WORKSPACE/logs/old.log"
  before_cwd=$(tree_listing "$PWD")
  before_ws=$(tree_listing "$PRIMUS_WORKSPACE")
  run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- train pretrain --config "$REPO_ROOT/examples/cpu_pretrain.yaml"
  assert_success
  assert_output --partial "dry run: nothing was started"
  [[ $(tree_listing "$PWD") == "$before_cwd" ]]
  [[ $(tree_listing "$PRIMUS_WORKSPACE") == "$before_ws" ]]
}

@test "dry-run in a fresh directory creates no workspace at all" {
  run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
  assert_success
  [[ ! -e $PRIMUS_WORKSPACE ]]
  [[ -z $(ls -A "$PWD") ]]
}

@test "a log file is written, and a second run does not overwrite it" {
  run "$PRIMUS_CLI" direct --single --log_file "$TEST_DIR/run.log" --script "$WORKLOADS/exit_with.py" -- 0
  assert_success
  [[ -s $TEST_DIR/run.log ]]
  first=$(<"$TEST_DIR/run.log")
  grep -q "launch configuration" "$TEST_DIR/run.log"
  run "$PRIMUS_CLI" direct --single --log_file "$TEST_DIR/run.log" --script "$WORKLOADS/exit_with.py" -- 0
  assert_success
  [[ $(<"$TEST_DIR/run.log") == "$first" ]]
  [[ -s $TEST_DIR/run-1.log ]]
}

@test "the default log file lands under the workspace, named with UTC time and node rank" {
  run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/exit_with.py" -- 0
  assert_success
  run compgen -G "$PRIMUS_WORKSPACE/logs/primus-*T*Z-node0.log"
  assert_success
}

@test "workload exit 7 through torchrun gives launcher exit 7" {
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/exit_with.py" -- 7
  assert_failure 7
}

@test "workload exit 7 on one rank only gives launcher exit 7" {
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/exit_with.py" -- 7 1
  assert_failure 7
}

@test "workload exit 7 with --single gives launcher exit 7" {
  run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/exit_with.py" -- 7
  assert_failure 7
}

@test "SIGTERM to the launcher mid-run: exit 143 and no process of the run remains" {
  mkdir out
  marker=primus-sleeper-$RANDOM$RANDOM
  "$PRIMUS_CLI" direct --script "$WORKLOADS/sleeper.py" -- "$PWD/out" "$marker" >launch.out 2>&1 &
  launcher=$!
  # Readiness, with room for a loaded host (a ready run costs no wait).
  for _ in $(seq 1 1200); do
    [[ -s out/pid.0 && -s out/pid.1 ]] && break
    sleep 0.1
  done
  [[ -s out/pid.0 && -s out/pid.1 ]] || { cat launch.out; false; }
  kill -TERM "$launcher"
  status=0
  wait "$launcher" || status=$?
  [[ $status -eq 143 ]]
  # The launcher waited for its run: nothing may be left at once.
  run pgrep -f "$marker"
  assert_failure 1
  refute process_running "$(<out/pid.0)"
  refute process_running "$(<out/pid.1)"
}

@test "NODE_RANK >= NNODES exits 2 naming NODE_RANK and the accepted range" {
  NNODES=2 NODE_RANK=2 MASTER_ADDR=node0 run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
  assert_failure 2
  assert_output --partial "NODE_RANK='2'"
  assert_output --regexp "0( to |\.\.)1"
}

@test "MASTER_PORT=80 exits 2 naming MASTER_PORT and 1024-65535" {
  MASTER_PORT=80 run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
  assert_failure 2
  assert_output --partial "MASTER_PORT"
  assert_output --regexp "1024.{1,4}65535"
}

@test "NNODES=0 exits 2 naming NNODES" {
  NNODES=0 run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
  assert_failure 2
  assert_output --partial "NNODES"
}

@test "non-numeric NNODES, NODE_RANK, GPUS_PER_NODE and MASTER_PORT exit 2 naming each" {
  for var in NNODES NODE_RANK GPUS_PER_NODE MASTER_PORT; do
    run env "$var=two" "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
    assert_failure 2
    assert_output --partial "$var"
  done
}

@test "an HF_TOKEN value never appears in dry-run output, console or log file" {
  secret=hf_PrimusTestSecret_$RANDOM$RANDOM
  HF_TOKEN=$secret run "$PRIMUS_CLI" direct --module primus_runner --dry-run --env "HF_TOKEN=$secret" --env "MY_API_KEY=$secret" -- preflight
  assert_success
  refute_output --partial "$secret"
  assert_output --partial "HF_TOKEN=****"
  HF_TOKEN=$secret run "$PRIMUS_CLI" direct --single --debug --log_file "$TEST_DIR/s.log" \
    --env "HF_TOKEN=$secret" --script "$WORKLOADS/exit_with.py" -- 0
  assert_success
  refute_output --partial "$secret"
  refute grep -q "$secret" "$TEST_DIR/s.log"
}

@test "a missing --script exits 1 naming the file" {
  run "$PRIMUS_CLI" direct --script "$TEST_DIR/nope.py" -- x
  assert_failure 1
  assert_output --partial "$TEST_DIR/nope.py"
}

@test "PRIMUS_KILL_GRACE reaches arithmetic only as digits: anything else exits 2 and runs nothing" {
  PRIMUS_KILL_GRACE='a[$(touch pwned)]' run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
  assert_failure 2
  assert_output --partial "PRIMUS_KILL_GRACE"
  [[ ! -e pwned ]]
}

@test "ENABLE_NUMA_BINDING=1 turns NUMA binding on; --no-numa turns it off" {
  mkdir out
  ENABLE_NUMA_BINDING=1 run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/print_env.py" -- "$PWD/out" PRIMUS_NUMA_BIND
  assert_success
  [[ $(<out/PRIMUS_NUMA_BIND.0) == 1 ]]
  assert_output --partial "numa_bind.sh 0 --"
  ENABLE_NUMA_BINDING=1 PRIMUS_NUMA_BIND=1 run "$PRIMUS_CLI" direct --single --no-numa \
    --script "$WORKLOADS/print_env.py" -- "$PWD/out" PRIMUS_NUMA_BIND
  assert_success
  [[ $(<out/PRIMUS_NUMA_BIND.0) == 0 ]]
  refute_output --partial "numa_bind.sh"
}

@test "JAX coordinator (launch/jax_layer.py, asked through the launch helper): single mode, NNODES=2, IPv6 MASTER_ADDR" {
  # The workload sees the coordinator the launcher decided after the hooks:
  # [fd00::10]:PORT (an IPv6 host in brackets before :port). Node 1 of 2 runs
  # alone here: the cross-node cluster check is switched off for this run.
  mkdir out
  NNODES=2 NODE_RANK=1 MASTER_ADDR=fd00::10 PRIMUS_CLUSTER_CHECK=0 PRIMUS_FRAMEWORK=jax \
    run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/print_env.py" -- "$PWD/out" \
    JAX_COORDINATOR_IP JAX_COORDINATOR_PORT JAX_COORDINATOR_ADDRESS PRIMUS_ENV_ORIGINS
  assert_success
  [[ $(<out/JAX_COORDINATOR_IP.1) == fd00::10 && $(<out/JAX_COORDINATOR_PORT.1) == "$MASTER_PORT" ]]
  [[ $(<out/JAX_COORDINATOR_ADDRESS.1) == "[fd00::10]:$MASTER_PORT" ]]
  # who set what: the JAX layer the IP and port, the launcher the address
  [[ " $(<out/PRIMUS_ENV_ORIGINS.1) " == *" JAX_COORDINATOR_IP:jax_xla "* ]]
  [[ " $(<out/PRIMUS_ENV_ORIGINS.1) " == *" JAX_COORDINATOR_ADDRESS:launcher "* ]]
  # A user's address is kept as given.
  rm out/*
  NNODES=2 NODE_RANK=1 MASTER_ADDR=fd00::10 PRIMUS_CLUSTER_CHECK=0 PRIMUS_FRAMEWORK=jax \
    JAX_COORDINATOR_ADDRESS=coord:7000 run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/print_env.py" -- \
    "$PWD/out" JAX_COORDINATOR_ADDRESS
  assert_success
  [[ $(<out/JAX_COORDINATOR_ADDRESS.1) == coord:7000 ]]
}

@test "JAX coordinator in torchrun mode with NNODES=2: the JAX layer's MASTER_PORT default is dropped after the hooks" {
  # Left in place it would be JAX_COORDINATOR_PORT=MASTER_PORT, which env check
  # refuses in torchrun mode (jax_coordinator_port_clash, exit 2).
  mkdir -p "$PRIMUS_SYSFS_ROOT/etc" && echo "10.77.0.1 node0" >"$PRIMUS_SYSFS_ROOT/etc/hosts"
  NNODES=2 NODE_RANK=1 MASTER_ADDR=node0 PRIMUS_FRAMEWORK=jax \
    run "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/argv.py"
  assert_success
  assert_output --partial "run_mode=torchrun"
  # a user's value on that port stays and is refused
  NNODES=2 NODE_RANK=1 MASTER_ADDR=node0 PRIMUS_FRAMEWORK=jax JAX_COORDINATOR_PORT=$MASTER_PORT \
    run "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/argv.py"
  assert_failure 2
  assert_output --partial "JAX_COORDINATOR_PORT='$MASTER_PORT': puts the JAX coordinator on port"
}

@test "the workload interpreter's probe runs at nice +10, below the launch's own work (one start of the interpreter)" {
  local real=$REPO_ROOT/.venv/bin/python own
  # A workload interpreter that records its niceness (/proc/PID/stat field 19).
  cat >"$TEST_DIR/py" <<STUB
#!/usr/bin/env bash
read -r -a f </proc/\$\$/stat
echo "\${f[18]}" >>"$TEST_DIR/nice.log"
exec "$real" "\$@"
STUB
  chmod +x "$TEST_DIR/py"
  read -r -a f </proc/$$/stat
  own=${f[18]}
  run "$PRIMUS_CLI" direct --dry-run --python "$TEST_DIR/py" --module primus_runner -- preflight
  assert_success
  run head -1 "$TEST_DIR/nice.log"
  assert_output "$((own + 10 > 19 ? 19 : own + 10))"
  [[ $(wc -l <"$TEST_DIR/nice.log") == 1 ]]
}
