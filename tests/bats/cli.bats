#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# primus-cli entry: help, version, unknown mode/options, config show/render.

setup() {
  load helpers/launcher
  launcher_setup
}

teardown() {
  launcher_teardown
}

@test "primus-cli --help lists the modes and exits 0" {
  run "$PRIMUS_CLI" --help
  assert_success
  assert_output --partial "Usage: primus-cli"
  for mode in direct slurm container env config; do
    assert_output --partial "  $mode "
  done
}

@test "primus-cli --version prints the package version" {
  version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$REPO_ROOT/pyproject.toml")
  [[ -n $version ]]
  run "$PRIMUS_CLI" --version
  assert_success
  assert_output "primus-cli $version"
}

@test "an unknown mode exits 2 and names it" {
  run "$PRIMUS_CLI" launch-everything
  assert_failure 2
  assert_output --partial "unknown mode 'launch-everything'"
}

@test "an unknown global option exits 2 and names it" {
  run "$PRIMUS_CLI" --turbo direct
  assert_failure 2
  assert_output --partial "'--turbo'"
}

@test "no mode at all exits 2 with the usage" {
  run "$PRIMUS_CLI"
  assert_failure 2
  assert_output --partial "Usage: primus-cli"
}

@test "direct --help describes the options" {
  run "$PRIMUS_CLI" direct --help
  assert_success
  for opt in --config --dry-run --single --script --env --patch --log_file --numa --no-numa --silent --accelerator; do
    assert_output --partial "$opt"
  done
}

@test "config show names the file each value came from; --config wins over ~/.primus.yaml" {
  printf 'direct:\n  nnodes: 3\n  master_port: 2000\n' >"$HOME/.primus.yaml"
  printf 'direct:\n  nnodes: 5\n' >"$TEST_DIR/exp.yaml"
  run "$PRIMUS_CLI" --config "$TEST_DIR/exp.yaml" config show
  assert_success
  assert_line --regexp "^direct\.nnodes +5 +# $TEST_DIR/exp.yaml$"
  assert_line --regexp "^direct\.master_port +2000 +# $HOME/.primus.yaml$"
  assert_line --regexp "^direct\.master_addr +localhost +# $REPO_ROOT/runner/.primus.yaml$"
}

@test "config show warns about an unknown key and suggests the closest" {
  printf 'direct:\n  nnode: 3\n' >"$TEST_DIR/exp.yaml"
  run "$PRIMUS_CLI" --config "$TEST_DIR/exp.yaml" config show
  assert_success
  assert_output --partial "unknown config key 'direct.nnode'"
  assert_output --partial "Did you mean 'direct.nnodes'?"
}

@test "malformed YAML exits 2 naming the file and line" {
  printf 'direct:\n  nnodes: 2\n  env: [a,\n' >"$TEST_DIR/bad.yaml"
  run "$PRIMUS_CLI" --config "$TEST_DIR/bad.yaml" config show
  assert_failure 2
  assert_output --regexp "$TEST_DIR/bad.yaml:[0-9]+"
}

@test "config render substitutes \${VAR} and \${VAR:default}" {
  printf 'a: ${PRIMUS_T_A}\nb: ${PRIMUS_T_B:fallback}\nc: "${PRIMUS_T_C:x y}"\n' >"$TEST_DIR/t.yaml"
  PRIMUS_T_A='has space' run "$PRIMUS_CLI" config render "$TEST_DIR/t.yaml"
  assert_success
  assert_line "a: has space"
  assert_line "b: fallback"
  assert_line 'c: "x y"'
}

@test "config render of a missing required variable exits 2 naming it and the file" {
  printf 'a: ${PRIMUS_T_MISSING}\n' >"$TEST_DIR/t.yaml"
  run "$PRIMUS_CLI" config render "$TEST_DIR/t.yaml"
  assert_failure 2
  assert_output --partial "PRIMUS_T_MISSING"
  assert_output --partial "$TEST_DIR/t.yaml"
}

@test "global flags before the mode work as after it: --dry-run, --debug and --config before direct, container, slurm" {
  printf 'print("the-script-ran")\n' >x.py
  printf 'direct:\n  run_mode: single\n' >cfg.yaml
  MASTER_PORT=$(free_port)
  export MASTER_PORT
  run "$PRIMUS_CLI" --dry-run direct --script x.py
  assert_success
  assert_output --partial "command: "
  assert_output --partial "dry run: nothing was started and nothing was written."
  refute_output --partial "the-script-ran"
  [[ ! -e $PRIMUS_WORKSPACE ]]
  # Before the mode or after it: the same launch, word for word.
  run "$PRIMUS_CLI" --dry-run --debug --config cfg.yaml direct --log_file "$TEST_DIR/x.log" --script x.py
  assert_success
  before=$(sed -E 's/done in [0-9.]+ s/done in T s/' <<<"$output")
  assert_output --partial "run_mode=single (config direct.run_mode)"
  assert_output --partial "[DEBUG]"
  run "$PRIMUS_CLI" direct --dry-run --debug --config cfg.yaml --log_file "$TEST_DIR/x.log" --script x.py
  assert_success
  [[ $(sed -E 's/done in [0-9.]+ s/done in T s/' <<<"$output") == "$before" ]]
  run "$PRIMUS_CLI" --dry-run --config cfg.yaml container --runtime docker --image img -- --script x.py
  assert_success
  assert_output --partial "dry run: nothing was started or removed."
  assert_output --regexp "command: .* direct --config $TEST_DIR/work/cfg.yaml --script x.py"
  run "$PRIMUS_CLI" --dry-run slurm srun -N 2 -- direct --script x.py
  assert_success
  assert_output --partial "dry run: nothing was submitted."
  [[ ! -e $PRIMUS_WORKSPACE ]]
}
