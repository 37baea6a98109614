#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# primus-cli container: the docker/podman command (a stub records it: no
# container engine can run here), the allowlist, --env values, dry-run.

setup() {
  load helpers/launcher
  launcher_setup
  export STUB_RECORD_DIR=$TEST_DIR/stub
  mkdir -p "$STUB_RECORD_DIR"
  export PATH=$REPO_ROOT/tests/fixtures/stubs:$PATH
  unset DOCKER_IMAGE NCCL_IB_HCA TE_HIPBLASLT_ALGO_SELECTION
}

teardown() {
  launcher_teardown
}

@test "container runs the direct entry in the image with the exact docker arguments" {
  NCCL_IB_HCA=mlx5_0:1 HF_TOKEN=hf_secret_x \
    run "$PRIMUS_CLI" container --image rocm/primus:test --volume /data:/data -- --single -- preflight
  assert_success
  mapfile -d '' -t args <"$STUB_RECORD_DIR/args.nul"
  expected=(run --rm --ipc host --network host --shm-size 64G
    --device /dev/kfd --device /dev/dri --device /dev/infiniband
    --cap-add SYS_PTRACE --security-opt seccomp=unconfined --group-add video
    --volume /data:/data --volume "$REPO_ROOT:$REPO_ROOT" --volume "$PWD:$PWD" --workdir "$PWD"
    --env HF_TOKEN --env NCCL_IB_HCA --env PRIMUS_PYTHON=python3 rocm/primus:test
    "$REPO_ROOT/runner/primus-cli" direct --single -- preflight)
  diff <(printf '%s\n' "${args[@]}") <(printf '%s\n' "${expected[@]}")
  # The forwarded values reached the client's environment, not its command line.
  mapfile -d '' -t envs <"$STUB_RECORD_DIR/env.nul"
  diff <(printf '%s\n' "${envs[@]}") <(printf '%s\n' HF_TOKEN=hf_secret_x NCCL_IB_HCA=mlx5_0:1)
  refute_output --partial hf_secret_x
}

@test "TE_* variables are not forwarded (with a warning saying how); an --env value is, byte for byte" {
  value='a "b" $(touch pwned) ; *'
  TE_HIPBLASLT_ALGO_SELECTION=1 run "$PRIMUS_CLI" container --image img --env "MY_VAR=$value" -- preflight
  assert_success
  assert_output --partial "TE_HIPBLASLT_ALGO_SELECTION"
  assert_output --partial "--env"
  refute grep -qx TE_HIPBLASLT_ALGO_SELECTION "$STUB_RECORD_DIR/args.txt"
  mapfile -d '' -t envs <"$STUB_RECORD_DIR/env.nul"
  [[ " ${envs[*]} " == *" MY_VAR=$value "* ]]
  [[ ! -e pwned ]]
}

@test "config container.* fills what flags do not give; flags win" {
  printf 'container:\n  image: from/config:1\n  name: cfgname\n  options:\n    env: [NNODES]\n    device: []\n' >"$TEST_DIR/c.yaml"
  NNODES=3 run "$PRIMUS_CLI" --config "$TEST_DIR/c.yaml" container --name flagname -- preflight
  assert_success
  grep -qx from/config:1 "$STUB_RECORD_DIR/args.txt"
  grep -qx flagname "$STUB_RECORD_DIR/args.txt"
  refute grep -qx cfgname "$STUB_RECORD_DIR/args.txt"
  refute grep -qx /dev/kfd "$STUB_RECORD_DIR/args.txt"
  [[ $(grep -c -x -- --env "$STUB_RECORD_DIR/args.txt") -eq 2 ]]
}

@test "dry-run prints the command and does not call the runtime" {
  run "$PRIMUS_CLI" --dry-run container --image img -- preflight
  assert_success
  assert_output --partial "command: docker run --rm"
  [[ ! -e $STUB_RECORD_DIR/args.nul ]]
}

@test "no image exits 2 with the fix" {
  run "$PRIMUS_CLI" container -- preflight
  assert_failure 2
  assert_output --partial "--image"
}

@test "an unsupported runtime exits 2; a missing one exits 1" {
  run "$PRIMUS_CLI" container --image img --runtime lxc -- preflight
  assert_failure 2
  assert_output --partial "accepted: docker, podman"
  PATH=/usr/bin:/bin run "$PRIMUS_CLI" container --image img --runtime podman -- preflight
  assert_failure 1
  assert_output --partial "'podman' not found"
}

@test "an invalid variable stops the container launch with exit 2 before the runtime runs" {
  MASTER_PORT=80 run "$PRIMUS_CLI" container --image img -- preflight
  assert_failure 2
  assert_output --partial "MASTER_PORT"
  [[ ! -e $STUB_RECORD_DIR/args.nul ]]
}

@test "the container's exit code is the launcher's" {
  STUB_EXIT=9 run "$PRIMUS_CLI" container --image img -- preflight
  assert_failure 9
}

@test "under Slurm the ranks are mapped on the host and forwarded (SLURM_* is not on the allowlist)" {
  SLURM_JOB_ID=42 SLURM_NNODES=2 SLURM_JOB_NODELIST='gpu[07-08]' SLURM_NODEID=1 SLURM_PROCID=1 \
    run "$PRIMUS_CLI" container --image img -- preflight
  assert_success
  mapfile -d '' -t envs <"$STUB_RECORD_DIR/env.nul"
  [[ " ${envs[*]} " == *" NNODES=2 "* ]]
  [[ " ${envs[*]} " == *" NODE_RANK=1 "* ]]
  [[ " ${envs[*]} " == *" MASTER_ADDR=gpu07 "* ]]
  refute grep -q '^SLURM_' "$STUB_RECORD_DIR/args.txt"
}
