#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# the upstream Primus runner's Slurm call forms work
# unchanged. The entry's own call form `ENTRY -- <mode> ...` (upstream
# primus-cli-slurm.sh:328, primus-cli-slurm-entry.sh:224-236) and, with no mode
# named, the container mode with the words as its workload. The container
# runtime is the recording docker stub (no engine here); the entry runs in
# dry-run with the Slurm variables srun sets.

setup() {
  load helpers/launcher
  launcher_setup
  unset_scheduler_vars
  export STUB_RECORD_DIR=$TEST_DIR/stub
  mkdir -p "$STUB_RECORD_DIR"
  export PATH=$REPO_ROOT/tests/fixtures/stubs:$PATH
  unset DOCKER_IMAGE
  export PRIMUS_ACCELERATOR=cpu GPUS_PER_NODE=1
  export SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_JOB_NUM_NODES=1 SLURM_NNODES=1
  export SLURM_STEP_NUM_NODES=1 SLURM_NODELIST=node1 SLURM_JOB_NODELIST=node1
  export SLURM_STEP_NODELIST=node1 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0
  export SLURM_NTASKS=1 SLURM_STEP_NUM_TASKS=1 SLURM_STEP_TASKS_PER_NODE='1(x1)'
  export PRIMUS_SLURM_FIRST_HOST=node1
  printf 'container:\n  runtime: docker\n' >"$TEST_DIR/rt.yaml"
}

teardown() {
  launcher_teardown
}

@test "item 2: ENTRY -- container -- train pretrain runs container mode with train pretrain as the workload" {
  run "$ENTRY" --dry-run --config "$TEST_DIR/rt.yaml" -- container --image img:1 -- train pretrain
  assert_success
  assert_output --partial "mode container"
  # the image, then the inner direct with the workload words: nothing else
  assert_output --regexp "img:1 [^ ]*/runner/primus-cli direct --config [^ ]*/rt.yaml train pretrain"
  refute_output --partial "container -- train"
}

@test "item 2: ENTRY -- direct -- ... runs direct, the leading -- dropped" {
  run "$ENTRY" --dry-run -- direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "mode direct"
  assert_output --regexp "command: .* -m primus_runner preflight"
}

@test "item 3: no mode named runs the container mode; -- preflight --quick is its workload" {
  run "$ENTRY" --dry-run --config "$TEST_DIR/rt.yaml" -- --image img:2 -- preflight --quick
  assert_success
  assert_output --partial "mode container"
  assert_output --regexp "img:2 [^ ]*/runner/primus-cli direct --config [^ ]*/rt.yaml preflight --quick"
  DOCKER_IMAGE=img:3 run "$ENTRY" --dry-run --config "$TEST_DIR/rt.yaml" -- preflight --quick
  assert_success
  assert_output --partial "mode container"
  assert_output --regexp "img:3 [^ ]*/runner/primus-cli direct --config [^ ]*/rt.yaml preflight --quick"
}

@test "item 3: slurm.mode: direct in the config makes the no-mode form run direct" {
  printf 'slurm:\n  mode: direct\n' >"$TEST_DIR/d.yaml"
  run "$ENTRY" --dry-run --config "$TEST_DIR/d.yaml" -- --module primus_runner -- preflight
  assert_success
  assert_output --partial "mode direct"
  assert_output --regexp "command: .* -m primus_runner preflight"
}

@test "item 3: primus-cli slurm srun -N 4 -- preflight --quick hands the entry the container mode" {
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/rt.yaml" srun -N 4 -- preflight --quick
  call=$(sed -n '/dry run: would run/{n;p;q}' <<<"$output")
  [[ $call == *"primus-cli-slurm-entry.sh --config $TEST_DIR/rt.yaml --no-srun-native container -- preflight --quick" ]]
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/rt.yaml" srun -N 2 -- --image X -- train
  call=$(sed -n '/dry run: would run/{n;p;q}' <<<"$output")
  [[ $call == *" --no-srun-native container --image X -- train" ]]
}
