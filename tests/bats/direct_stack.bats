#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; exports are per test
# primus-cli direct (issue 10): what runs and with which interpreter, without
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
  assert_output --partial "training script 'primus/cli/main.py' (the default (direct.script)) not found"
  assert_output --partial "--module primus_runner"
  refute_output --partial "[train]"
  [[ ! -e $PRIMUS_WORKSPACE ]]
  run "$PRIMUS_CLI" direct --dry-run -- train pretrain
  assert_failure 1
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
  run "$PRIMUS_CLI" direct --config cfg.yaml --dry-run -- x
  assert_failure 1
  assert_output --partial "'$TEST_DIR/missing_train.py' (config direct.script) not found"
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
  run "$PRIMUS_CLI" direct --dry-run --python "$TEST_DIR/no/python" --module primus_runner -- preflight
  assert_failure 1
  assert_output --partial "workload interpreter '$TEST_DIR/no/python' (chosen by --python) not found"
  PRIMUS_WORKLOAD_PYTHON=no-such-python-$RANDOM run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_failure 1
  assert_output --partial "(chosen by PRIMUS_WORKLOAD_PYTHON) not found"
}

@test "PRIMUS_TORCHRUN replaces '<python> -m torch.distributed.run'" {
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
