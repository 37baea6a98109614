#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell; exports are per test
# The first hour, tried as a new user would (issue 28): --module checked up
# front, the last line of every stop, the summary of --single, a missing
# experiment config, the console kept free of torchrun's internals.

setup() {
  load helpers/launcher
  launcher_setup
  export MASTER_PORT
  MASTER_PORT=$(free_port)
}

teardown() {
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
  # The same in a dry run, and for a package without __main__.py.
  mkdir -p mypkg && touch mypkg/__init__.py
  run "$PRIMUS_CLI" direct --dry-run --module mypkg -- x
  assert_failure 1
  assert_output --partial "module 'mypkg' (--module / config direct.module) cannot be imported (or is a package without __main__.py)"
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
  assert_output --partial "processes per node: 1 (run mode single, from --single: one process per node, no torchrun; GPUS_PER_NODE=2"
  refute_output --partial "processes per node: 2"
  assert_output --regexp "command: [^ ]*python -m primus_runner preflight"
  # torchrun mode keeps the count it starts.
  GPUS_PER_NODE=2 run "$PRIMUS_CLI" direct --dry-run --module primus_runner -- preflight
  assert_output --partial "processes per node: 2"
  assert_output --partial "--nproc_per_node 2"
}
