#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; exports are per test
# The user's own stack: a second virtual environment (torch from the
# same wheel, jax/jaxlib CPU, lightning; tests/userenv/setup.sh), distinct from
# the runner's .venv, activated as a user would; real torchrun.

setup() {
  load helpers/launcher
  load helpers/userenv
  launcher_setup
  userenv_require
  export GPUS_PER_NODE=2 MASTER_PORT
  MASTER_PORT=$(free_port)
  mkdir out
}

teardown() {
  launcher_teardown
}

@test "activated user env: every rank of a 2-process launch runs that env's python and torch" {
  userenv_activate "$USERENV_TORCH"
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/whoami.py" -- "$PWD/out"
  assert_success
  expected_torch=$(cd / && "$USERENV_TORCH/bin/python3" -c 'import torch; print(torch.__file__)')
  for rank in 0 1; do
    mapfile -t who <"out/who.$rank"
    assert_equal "${who[0]}" "$USERENV_TORCH/bin/python3"
    assert_equal "${who[1]}" "$expected_torch"
  done
  # torchrun itself is the env's own, and the summary says so.
  assert_output --partial "command: $USERENV_TORCH/bin/python3 $REPO_ROOT/runner/helpers/torchrun_quiet.py --nproc_per_node 2"
  assert_output --partial "python=$USERENV_TORCH/bin/python3 (python3 on PATH) torch=2.13.0"
}

@test "--python beats PRIMUS_WORKLOAD_PYTHON, which beats config direct.python and PATH" {
  userenv_activate "$USERENV_NOTORCH"
  printf 'direct:\n  python: %s\n' "$USERENV_NOTORCH/bin/python" >cfg.yaml
  run "$PRIMUS_CLI" direct --config cfg.yaml --dry-run --python "$USERENV_TORCH/bin/python" --script "$WORKLOADS/whoami.py" -- x
  assert_success
  assert_output --partial "python=$USERENV_TORCH/bin/python (--python)"
  PRIMUS_WORKLOAD_PYTHON=$USERENV_TORCH/bin/python run "$PRIMUS_CLI" direct --config cfg.yaml --dry-run --script "$WORKLOADS/whoami.py" -- x
  assert_success
  assert_output --partial "python=$USERENV_TORCH/bin/python (PRIMUS_WORKLOAD_PYTHON)"
  run "$PRIMUS_CLI" direct --config cfg.yaml --dry-run --single --script "$WORKLOADS/whoami.py" -- x
  assert_success
  assert_output --partial "python=$USERENV_NOTORCH/bin/python (config direct.python) torch=none"
}

@test "Lightning Trainer(accelerator=cpu, devices=2, strategy=ddp) trains to world size 2" {
  userenv_activate "$USERENV_TORCH"
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/lightning_ddp.py" -- "$PWD/out"
  assert_success
  for rank in 0 1; do
    assert_equal "$(<"out/lightning.$rank")" "world_size=2 global_rank=$rank steps=3"
  done
}

@test "--module runs a package module with relative imports on every rank" {
  userenv_activate "$USERENV_TORCH"
  export PYTHONPATH=$WORKLOADS
  run "$PRIMUS_CLI" direct --module userpkg.train -- "$PWD/out"
  assert_success
  assert_output --regexp "command: .* -m userpkg\.train $PWD/out"
  for rank in 0 1; do
    assert_equal "$(<"out/module.$rank")" "__main__ hello from userpkg.helper"
  done
}

@test "-- --max_steps 3 --help reaches the script verbatim on every rank" {
  userenv_activate "$USERENV_TORCH"
  export PRIMUS_T_ARGV_OUT=$PWD/out/argv
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/argv.py" -- --max_steps 3 --help
  assert_success
  for rank in 0 1; do
    diff <(tr '\0' '\n' <"out/argv.$rank") <(printf '%s\n' --max_steps 3 --help)
  done
}

@test "an activated env without torch: exit 1 before any worker starts, naming the interpreter" {
  userenv_activate "$USERENV_NOTORCH"
  run "$PRIMUS_CLI" direct --log_file "$TEST_DIR/run.log" --script "$WORKLOADS/whoami.py" -- "$PWD/out"
  assert_failure 1
  assert_output --partial "workload interpreter $USERENV_NOTORCH/bin/python3 (chosen by python3 on PATH) cannot import torch"
  assert_output --partial "--python"
  [[ -z $(ls -A out) ]]
  # an early stop still leaves a complete log holding the same error
  grep -q "cannot import torch" "$TEST_DIR/run.log"
  # A dry run (which may run on a submit host) notes it as the node's check.
  run "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/whoami.py" -- "$PWD/out"
  assert_success
  assert_output --partial "[WARN] dry run: checked on the node, not here (a launch there stops with exit 1 unless fixed): workload interpreter $USERENV_NOTORCH/bin/python3 (chosen by python3 on PATH) cannot import torch"
  assert_output --partial "command: "
  [[ -z $(ls -A out) ]]
}

@test "a dry run on a host without torch or a Primus checkout prints the command and exits 0, running nothing" {
  userenv_activate "$USERENV_NOTORCH"
  printf 'open("%s/ran", "w")\n' "$PWD/out" >x.py
  # The global --dry-run before the mode, as the upstream runner accepts it.
  run "$PRIMUS_CLI" --dry-run direct --script x.py
  assert_success
  assert_output --partial "checked on the node, not here (a launch there stops with exit 1 unless fixed): workload interpreter $USERENV_NOTORCH/bin/python3 (chosen by python3 on PATH) cannot import torch"
  assert_line --regexp "command: .* x\.py$"
  assert_output --partial "dry run: nothing was started"
  run "$PRIMUS_CLI" --dry-run direct -- echo hi
  assert_success
  assert_output --partial "training script 'primus/cli/main.py' (the default) not found"
  assert_line --regexp "command: .*-m primus\.cli\.main echo hi$"
  [[ -z $(ls -A out) ]]
  [[ ! -e "$PRIMUS_WORKSPACE/logs" ]]
  # The launch itself still stops there, before anything starts.
  run "$PRIMUS_CLI" direct --script x.py
  assert_failure 1
  [[ -z $(ls -A out) ]]
}

@test "an env without torch runs in single mode (no torchrun, nothing needs torch)" {
  userenv_activate "$USERENV_NOTORCH"
  export PRIMUS_T_ARGV_OUT=$PWD/out/argv
  run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/argv.py" -- a
  assert_success
  [[ -f out/argv.0 ]]
}

@test "JAX on CPU: two launchers (NNODES=2, one machine) in single mode form one world with a cross-process psum" {
  userenv_activate "$USERENV_TORCH"
  export NNODES=2 MASTER_ADDR=127.0.0.1 JAX_PLATFORMS=cpu
  NODE_RANK=1 "$PRIMUS_CLI" direct --single --script "$WORKLOADS/jax_world.py" -- "$PWD/out" >node1.out 2>&1 &
  node1=$!
  status0=0
  NODE_RANK=0 timeout 180 "$PRIMUS_CLI" direct --single --script "$WORKLOADS/jax_world.py" -- "$PWD/out" >node0.out 2>&1 || status0=$?
  status1=0
  wait "$node1" || status1=$?
  cat node0.out node1.out
  [[ $status0 -eq 0 && $status1 -eq 0 ]]
  assert_equal "$(<out/jax.0)" "process_count=2 psum=3"
  assert_equal "$(<out/jax.1)" "process_count=2 psum=3"
  grep -q "run_mode=single (--single)" node0.out
}
