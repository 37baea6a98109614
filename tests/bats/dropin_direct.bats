#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats subshells; single-quoted $PATH is activate-script text
# a Primus user's direct launches work unchanged. Items 1 (VENV_ACTIVATE),
# 4 (the installed primus.cli.main when primus/cli/main.py is absent), 5
# (upstream's own .primus.yaml, quoted values and numa: "auto"), 6 (per-mode
# debug:/dry_run: keys), and the NUMA decision on --dry-run. Real runs use the
# project's .venv interpreter (torch, CPU) with --single; nothing is mocked.

bats_require_minimum_version 1.5.0

setup() {
  load helpers/launcher
  launcher_setup
  export PRIMUS_ACCELERATOR=cpu GPUS_PER_NODE=1
  unset VENV_ACTIVATE ENABLE_NUMA_BINDING PRIMUS_DRY_RUN
  # Upstream Primus's runner/.primus.yaml (AMD-AGI/Primus fd1eeabb), its content
  # as data: quoted booleans, numa: "auto", per-mode debug/dry_run keys.
  cat >"$TEST_DIR/upstream.yaml" <<'YAML'
main:
  debug: false
  dry_run: false
slurm:
  debug: false
  dry_run: false
  nodes: 1
  gpus_per_node: 8
  time: "4:00:00"
container:
  debug: false
  dry_run: false
  options:
    image: "rocm/primus:v26.5"
    ipc: "host"
    network: "host"
    name: "primus-training"
    privileged: "true"
    security-opt: "seccomp=unconfined"
    group-add: "video"
    ulimit: "nofile=1048576:1048576"
    device:
      - "/dev/kfd"
      - "/dev/dri"
      - "/dev/infiniband"
    cap-add:
      - "SYS_PTRACE"
      - "CAP_SYS_ADMIN"
    volume: []
    env:
      - "MASTER_ADDR"
      - "MASTER_PORT"
      - "NNODES"
      - "NODE_RANK"
      - "GPUS_PER_NODE"
      - "DOCKER_IMAGE"
      - "HF_TOKEN"
      - "ENABLE_NUMA_BINDING"
      - "NCCL_IB_HCA"
      - "HIPBLASLT_TUNING_OVERRIDE_FILE"
direct:
  debug: false
  gpus_per_node: 8
  master_port: 1234
  nnodes: 1
  master_addr: "localhost"
  script: "primus/cli/main.py"
  numa: "auto"
  log_file: ""
  patch: []
  env: []
YAML
  printf 'import os, sys\nprint("ARGS", sys.argv[1:])\nprint("MARK", os.environ.get("VENV_MARK", "-"))\nprint("EXE", sys.executable)\n' >"$TEST_DIR/show.py"
}

teardown() {
  launcher_teardown
}

@test "item 1: VENV_ACTIVATE is sourced before the interpreter is picked; its python3 runs the workload" {
  unset PRIMUS_WORKLOAD_PYTHON
  mkdir -p "$TEST_DIR/venv/bin"
  ln -s "$REPO_ROOT/.venv/bin/python" "$TEST_DIR/venv/bin/python3"
  printf 'export VENV_MARK=activated\nPATH=%q:$PATH\nexport PATH\n' "$TEST_DIR/venv/bin" >"$TEST_DIR/venv/bin/activate"
  VENV_ACTIVATE=$TEST_DIR/venv/bin/activate run "$PRIMUS_CLI" direct --single --script "$TEST_DIR/show.py" -- a b
  assert_success
  assert_output --partial "VENV_ACTIVATE: sourced $TEST_DIR/venv/bin/activate"
  assert_output --partial "python3 on PATH is now $TEST_DIR/venv/bin/python3"
  assert_output --partial "MARK activated"
  assert_output --partial "ARGS ['a', 'b']"
}

@test "item 1: VENV_ACTIVATE naming a missing file is exit 1 before anything starts" {
  VENV_ACTIVATE=$TEST_DIR/nope/bin/activate run "$PRIMUS_CLI" direct --single --script "$TEST_DIR/show.py"
  assert_failure 1
  assert_output --partial "VENV_ACTIVATE='$TEST_DIR/nope/bin/activate' is set but that file does not exist"
  assert_output --partial "unset VENV_ACTIVATE"
  refute_output --partial "ARGS"
}

@test "item 4: no primus/cli/main.py here and no installed primus.cli.main: exit 1, nothing runs in its place" {
  run "$PRIMUS_CLI" direct --single -- train pretrain
  assert_failure 1
  assert_output --partial "has no installed module primus.cli.main to fall back to"
  assert_output --partial "--script path/to/train.py or --module package.module"
}

@test "item 4: the installed module primus.cli.main runs when the interpreter can import it, and the summary says so" {
  mkdir -p "$TEST_DIR/site/primus/cli"
  : >"$TEST_DIR/site/primus/__init__.py"
  : >"$TEST_DIR/site/primus/cli/__init__.py"
  cp "$TEST_DIR/show.py" "$TEST_DIR/site/primus/cli/main.py"
  PYTHONPATH=$TEST_DIR/site run "$PRIMUS_CLI" direct --dry-run --single -- train pretrain
  assert_success
  assert_output --partial "entry=-m primus.cli.main (installed module $TEST_DIR/site/primus/cli/main.py, because primus/cli/main.py is not in"
  refute_output --partial "ARGS"
  PYTHONPATH=$TEST_DIR/site run "$PRIMUS_CLI" direct --single -- train pretrain
  assert_success
  assert_output --partial "ARGS ['train', 'pretrain']"
}

@test "item 5: upstream's own .primus.yaml (quoted values, numa: \"auto\") is accepted without a warning" {
  run "$PRIMUS_CLI" direct --dry-run --config "$TEST_DIR/upstream.yaml" --single --script "$TEST_DIR/show.py"
  assert_success
  refute_output --partial "unknown config key"
  refute_output --partial "is a string"
  assert_output --partial "numa binding: off (default, config direct.numa: auto;"
  ENABLE_NUMA_BINDING=1 run "$PRIMUS_CLI" direct --dry-run --config "$TEST_DIR/upstream.yaml" --single --script "$TEST_DIR/show.py"
  assert_output --partial "numa binding: on (ENABLE_NUMA_BINDING=1)"
  assert_output --regexp "command: [^ ]*/helpers/numa_bind.sh 0 -- "
  run "$PRIMUS_CLI" config show --config "$TEST_DIR/upstream.yaml"
  assert_success
}

@test "--dry-run shows the NUMA binding decision and where it came from" {
  run "$PRIMUS_CLI" direct --dry-run --numa --single --script "$TEST_DIR/show.py"
  assert_output --partial "numa binding: on (--numa)"
  ENABLE_NUMA_BINDING=1 run "$PRIMUS_CLI" direct --dry-run --no-numa --single --script "$TEST_DIR/show.py"
  assert_output --partial "numa binding: off (--no-numa)"
  printf 'direct:\n  numa: "true"\n' >"$TEST_DIR/n.yaml"
  run "$PRIMUS_CLI" direct --dry-run --config "$TEST_DIR/n.yaml" --single --script "$TEST_DIR/show.py"
  assert_output --partial "numa binding: on (config direct.numa: true)"
  # A config that says false is not overridden by an exported ENABLE_NUMA_BINDING=1
  # (docs/run-on-one-node.md's --numa row, docs/coming-from-upstream.md).
  printf 'direct:\n  numa: false\n' >"$TEST_DIR/off.yaml"
  ENABLE_NUMA_BINDING=1 run "$PRIMUS_CLI" direct --dry-run --config "$TEST_DIR/off.yaml" --single --script "$TEST_DIR/show.py"
  assert_output --partial "numa binding: off (config direct.numa: false)"
  refute_output --partial "numa_bind.sh"
}

@test "item 5: a quoted boolean is read as the boolean; another word is still exit 2 naming the key" {
  printf 'direct:\n  log_all_ranks: "yes"\n' >"$TEST_DIR/b.yaml"
  run "$PRIMUS_CLI" config show --config "$TEST_DIR/b.yaml"
  assert_success
  printf 'direct:\n  numa: "sometimes"\n' >"$TEST_DIR/bad.yaml"
  run "$PRIMUS_CLI" direct --dry-run --config "$TEST_DIR/bad.yaml" --single --script "$TEST_DIR/show.py"
  assert_failure 2
  assert_output --partial "config key 'direct.numa'"
  assert_output --partial "'numa: auto'"
}

@test "item 6: direct.dry_run: true really is a dry run (nothing runs, nothing written)" {
  printf 'direct:\n  dry_run: "true"\n  debug: true\n' >"$TEST_DIR/d.yaml"
  run "$PRIMUS_CLI" direct --config "$TEST_DIR/d.yaml" --single --script "$TEST_DIR/show.py"
  assert_success
  assert_output --partial "dry run: config direct.dry_run is true"
  assert_output --partial "debug logging: config direct.debug is true"
  assert_output --partial "dry run: nothing was started"
  refute_output --partial "ARGS"
  [[ ! -e $PRIMUS_WORKSPACE/logs ]]
}

@test "item 6: slurm.dry_run: true does not submit; under the entry it makes the mode a dry run" {
  printf 'slurm:\n  dry_run: true\n' >"$TEST_DIR/s.yaml"
  run "$REPO_ROOT/runner/primus-cli-slurm.sh" --config "$TEST_DIR/s.yaml" srun -N 1 -- direct --single --script "$TEST_DIR/show.py"
  assert_success
  assert_output --partial "dry run: config slurm.dry_run is true"
  assert_output --partial "dry run: nothing was submitted."
  export SLURM_JOB_ID=5 SLURM_STEP_ID=0 SLURM_JOB_NUM_NODES=1 SLURM_NNODES=1 SLURM_STEP_NUM_NODES=1
  export SLURM_NODELIST=n1 SLURM_STEP_NODELIST=n1 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_NTASKS=1
  export PRIMUS_SLURM_FIRST_HOST=n1
  run "$REPO_ROOT/runner/primus-cli-slurm-entry.sh" --config "$TEST_DIR/s.yaml" direct --single --script "$TEST_DIR/show.py"
  assert_success
  assert_output --partial "dry run: config slurm.dry_run is true"
  refute_output --partial "ARGS"
}

@test "item 6: container.dry_run: true prints the runtime command and starts nothing" {
  export STUB_RECORD_DIR=$TEST_DIR/stub PATH=$REPO_ROOT/tests/fixtures/stubs:$PATH
  mkdir -p "$STUB_RECORD_DIR"
  printf 'container:\n  dry_run: "true"\n  runtime: docker\n  image: img:1\n' >"$TEST_DIR/c.yaml"
  run "$PRIMUS_CLI" container --config "$TEST_DIR/c.yaml" -- --single --script "$TEST_DIR/show.py"
  assert_success
  assert_output --partial "dry run: config container.dry_run is true"
  assert_output --partial "dry run: nothing was started or removed."
  [[ ! -e $STUB_RECORD_DIR/args.nul ]]
}

@test "item 9: container --env FILE uses the same parser: \$VAR expanded, quotes stripped; \$(...) refused, never run" {
  export STUB_RECORD_DIR=$TEST_DIR/stub PATH=$REPO_ROOT/tests/fixtures/stubs:$PATH
  mkdir -p "$STUB_RECORD_DIR"
  printf '%s\n' 'export FOO=/opt' 'BAZ=$FOO/x' 'Q="x \"y\""' "L='\$HOME'" 'D=${NOPE:-dflt}' >job.env
  run "$PRIMUS_CLI" container --runtime docker --image img:1 --env job.env -- --single --script "$TEST_DIR/show.py"
  assert_success
  values=$(tr '\0' '\n' <"$STUB_RECORD_DIR/env.nul")
  grep -qx 'BAZ=/opt/x' <<<"$values"
  grep -qx 'Q=x "y"' <<<"$values"
  grep -qx 'L=$HOME' <<<"$values"
  grep -qx 'D=dflt' <<<"$values"
  rm -f "$STUB_RECORD_DIR/args.nul"
  printf '%s\n' 'OK=1' 'BAD=`touch pwned`' >bad.env
  run "$PRIMUS_CLI" container --runtime docker --image img:1 --env bad.env -- --single --script "$TEST_DIR/show.py"
  assert_failure 2
  assert_output --partial "bad.env line 2 (BAD): backticks are command substitution, never executed here"
  [[ ! -e pwned && ! -e $STUB_RECORD_DIR/args.nul ]]
}

@test "item 11: container names the job settings it does not forward, once; MASTER_PORT=auto is accepted as in direct" {
  export STUB_RECORD_DIR=$TEST_DIR/stub PATH=$REPO_ROOT/tests/fixtures/stubs:$PATH
  mkdir -p "$STUB_RECORD_DIR"
  # TORCH_NCCL_* and NVTE_* are families the references use: forwarded, named as
  # unknown to the registry; TE_* and TORCHINDUCTOR_* are not forwarded: named once.
  TORCH_NCCL_ASYNC_ERROR_HANDLING=1 NVTE_SOME_NEW_KNOB=0 TE_SOME_NEW_KNOB=1 TORCHINDUCTOR_X=1 \
    NCCL_DEBUG=INFO MASTER_PORT=auto \
    run "$PRIMUS_CLI" container --runtime docker --image img:1 -- --single --script "$TEST_DIR/show.py"
  assert_success
  [[ $(grep -c 'do not reach the container' <<<"$output") == 1 ]]
  assert_output --partial "TE_SOME_NEW_KNOB TORCHINDUCTOR_X. Fix: pass them with --env NAME"
  assert_output --partial "the registry does not know (under a forwarded prefix or family; \`primus-cli env list\` has the known ones): NVTE_SOME_NEW_KNOB TORCH_NCCL_ASYNC_ERROR_HANDLING"
  values=$(tr '\0' '\n' <"$STUB_RECORD_DIR/env.nul")
  grep -qx 'MASTER_PORT=auto' <<<"$values"   # the inner direct picks the free port
  grep -qx 'NCCL_DEBUG=INFO' <<<"$values"
  grep -qx 'TORCH_NCCL_ASYNC_ERROR_HANDLING=1' <<<"$values"
  grep -q '^TE_SOME_NEW_KNOB=' <<<"$values" && false
  NNODES=2 MASTER_PORT=auto run "$PRIMUS_CLI" container --runtime docker --image img:1 -- --single --script "$TEST_DIR/show.py"
  assert_failure 2
  assert_output --partial "MASTER_PORT=auto with NNODES=2"
}

@test "item 7: --silent sends the launcher's own stdout to the log too; warnings and errors stay on stderr" {
  printf 'import sys\nprint("WORKLOAD-OUT")\nprint("WORKLOAD-ERR", file=sys.stderr)\n' >"$TEST_DIR/w.py"
  run --separate-stderr "$PRIMUS_CLI" direct --silent --single --script "$TEST_DIR/w.py"
  assert_success
  [[ -z $output ]]                     # nothing on stdout: no INFO line, no workload output
  log=$(ls "$PRIMUS_WORKSPACE"/logs/*.log)
  grep -q 'launch configuration:' "$log"
  grep -q 'WORKLOAD-OUT' "$log"
  [[ $stderr == *WORKLOAD-ERR* ]]
  run --separate-stderr "$PRIMUS_CLI" direct --silent --single --script "$TEST_DIR/missing.py"
  assert_failure 1
  [[ -z $output && $stderr == *"training script '$TEST_DIR/missing.py' (--script) not found"* ]]
}

@test "item 8: the default container image is upstream's; a config's container.options.image (upstream layout) or DOCKER_IMAGE beats it" {
  export PATH=$REPO_ROOT/tests/fixtures/stubs:$PATH
  run "$PRIMUS_CLI" container --dry-run --runtime docker -- --single --script "$TEST_DIR/show.py"
  assert_success
  assert_output --regexp "command: .* rocm/primus:v26.5 [^ ]*/runner/primus-cli direct"
  # upstream's device list must exist (ours: exit 2 naming a missing one); a fake /dev tree
  mkdir -p "$PRIMUS_DEV_ROOT/dev/dri" "$PRIMUS_DEV_ROOT/dev/infiniband"
  : >"$PRIMUS_DEV_ROOT/dev/kfd"
  run "$PRIMUS_CLI" container --dry-run --runtime docker --config "$TEST_DIR/upstream.yaml" -- --single --script "$TEST_DIR/show.py"
  assert_success
  assert_output --regexp "command: .* --privileged .* rocm/primus:v26.5 "
  printf 'container:\n  options:\n    image: "my/img:2"\n' >"$TEST_DIR/i.yaml"
  run "$PRIMUS_CLI" container --dry-run --runtime docker --config "$TEST_DIR/i.yaml" -- --single --script "$TEST_DIR/show.py"
  assert_output --regexp "command: .* my/img:2 "
  DOCKER_IMAGE=env/img:3 run "$PRIMUS_CLI" container --dry-run --runtime docker --config "$TEST_DIR/i.yaml" -- --single --script "$TEST_DIR/show.py"
  assert_output --regexp "command: .* env/img:3 "
}

@test "item 10: base_env exports ENABLE_NUMA_BINDING=0 when unset; upstream's use_ainic.yaml ships as examples/use_ainic.yaml" {
  run bash -c 'source "$1/runner/helpers/envs/base_env.sh" >/dev/null 2>&1; printf "E=%s\n" "${ENABLE_NUMA_BINDING-unset}"; env | grep "^ENABLE_NUMA_BINDING="' _ "$REPO_ROOT"
  assert_success
  assert_line "E=0"
  assert_line "ENABLE_NUMA_BINDING=0"
  ENABLE_NUMA_BINDING=1 run bash -c 'source "$1/runner/helpers/envs/base_env.sh" >/dev/null 2>&1; printf "E=%s\n" "$ENABLE_NUMA_BINDING"' _ "$REPO_ROOT"
  assert_line "E=1"
  export PATH=$REPO_ROOT/tests/fixtures/stubs:$PATH
  run "$PRIMUS_CLI" container --dry-run --runtime docker --config "$REPO_ROOT/examples/use_ainic.yaml" -- --single --script "$TEST_DIR/show.py"
  assert_success
  refute_output --partial "unknown config key"
  assert_output --regexp "command: .* --env USING_AINIC .* rocm/jax-training:maxtext-v26.5 "
  assert_output --partial "by --env: USING_AINIC NCCL_PXN_DISABLE NCCL_IB_GID_INDEX"
}

@test "item 10: PRIMUS_PATH is the working directory when it is a Primus checkout (DATA_PATH under it, as upstream); elsewhere unset; a user value is kept" {
  local show='cd "$2"; source "$1/runner/helpers/envs/base_env.sh" >/dev/null 2>&1; printf "P=%s\nD=%s\n" "${PRIMUS_PATH-unset}" "$DATA_PATH"; env | grep "^PRIMUS_PATH=" || true'
  mkdir -p "$TEST_DIR/Primus/primus/cli" "$TEST_DIR/plain"
  : >"$TEST_DIR/Primus/primus/cli/main.py"
  unset PRIMUS_PATH DATA_PATH
  run bash -c "$show" _ "$REPO_ROOT" "$TEST_DIR/Primus"
  assert_success
  assert_line "P=$TEST_DIR/Primus"
  assert_line "D=$TEST_DIR/Primus/data"
  assert_line "PRIMUS_PATH=$TEST_DIR/Primus"
  run bash -c "$show" _ "$REPO_ROOT" "$TEST_DIR/plain"
  assert_line "P=unset"
  assert_line "D=$REPO_ROOT/data"
  PRIMUS_PATH="$TEST_DIR/my primus" run bash -c "$show" _ "$REPO_ROOT" "$TEST_DIR/Primus"
  assert_line "P=$TEST_DIR/my primus"
  assert_line "D=$TEST_DIR/my primus/data"
}
