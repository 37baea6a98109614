#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# primus-cli container: the exact docker arguments (a stub records them: no
# docker engine runs here; the real-runtime suite is container_podman.bats),
# passthrough, config mapping, devices, forwarding, runtime choice.

setup() {
  load helpers/launcher
  launcher_setup
  export STUB_RECORD_DIR=$TEST_DIR/stub
  mkdir -p "$STUB_RECORD_DIR"
  export PATH=$REPO_ROOT/tests/fixtures/stubs:$PATH
  unset DOCKER_IMAGE NCCL_IB_HCA NCCL_DEBUG TE_HIPBLASLT_ALGO_SELECTION DOCKER_HOST PRIMUS_KILL_GRACE
  export PRIMUS_ACCELERATOR=cpu
  STUB=$REPO_ROOT/tests/fixtures/stubs/docker
}

teardown() {
  launcher_teardown
}

# recorded_args: the stub's argv, one per line.
recorded_args() {
  local -a words
  mapfile -d '' -t words <"$STUB_RECORD_DIR/args.nul"
  printf '%s\n' "${words[@]}"
}

# dry_args ARGS...: the runtime argv of a dry-run (from its "command:" line).
dry_args() {
  run "$PRIMUS_CLI" --dry-run container --runtime docker "$@"
  assert_success
  line=$(grep -o 'command: .*' <<<"$output")
  # The printed command is %q-quoted; read it back as words (data, not code).
  read -r -a words <<<"${line#command: }"
  printf '%s\n' "${words[@]}"
}

@test "container runs the direct entry in the image with the exact docker arguments" {
  NCCL_IB_HCA=mlx5_0:1 HF_TOKEN=hf_secret_x NCCL_DEBUG=INFO PRIMUS_GPU_MODEL=MI300X \
    run "$PRIMUS_CLI" container --runtime docker --image rocm/primus:test --name job \
      --volume /data:/data -- --single -- preflight
  assert_success
  name=$(sed -n 4p <(recorded_args))
  [[ $name =~ ^job-[0-9]{8}T[0-9]{6}-[0-9]+-0$ ]]
  expected=(run --rm --name "$name" --label io.primus-runner.managed=1 --label io.primus-runner.name=job
    --ipc host --network host --ulimit nofile=1048576:1048576 --ulimit memlock=-1 --ulimit stack=67108864
    --group-add video --cap-add SYS_PTRACE --security-opt seccomp=unconfined --init
    --volume /data:/data --volume "$REPO_ROOT:$REPO_ROOT" --volume "$PWD:$PWD"
    --volume "$PRIMUS_WORKSPACE:$PRIMUS_WORKSPACE" --workdir "$PWD"
    --env HF_TOKEN --env NCCL_IB_HCA --env NCCL_DEBUG --env PRIMUS_ACCELERATOR --env PRIMUS_DEV_ROOT
    --env PRIMUS_GPU_MODEL --env PRIMUS_LOG_COLOR --env PRIMUS_LOG_TIMESTAMP --env PRIMUS_SYSFS_ROOT
    --env PRIMUS_WORKSPACE --env PRIMUS_PYTHON
    rocm/primus:test "$REPO_ROOT/runner/primus-cli" direct --single -- preflight)
  diff <(recorded_args) <(printf '%s\n' "${expected[@]}")
  # The forwarded values reached the client's environment, not its command line.
  mapfile -d '' -t envs <"$STUB_RECORD_DIR/env.nul"
  [[ " ${envs[*]} " == *" HF_TOKEN=hf_secret_x "* ]]
  [[ " ${envs[*]} " == *" PRIMUS_PYTHON=python3 "* ]]
  refute_output --partial hf_secret_x
}

@test "runtime options pass through: --key=value, --key value, bare flags; CLI replaces a value, adds to a list" {
  mapfile -t words < <(dry_args --image img --ipc=private --shm-size 16G --cap-add IPC_LOCK --privileged \
    --ulimit nofile=1024:2048 -v /a:/b -- -- preflight)
  printf '%s\n' "${words[@]}" >words.txt
  grep -qx -- --ipc=private words.txt
  refute grep -qx -- --ipc words.txt
  # ipc is no longer host, so the shm size applies (podman refuses it with --ipc host).
  grep -A1 -x -- --shm-size words.txt | grep -qx 16G
  [[ $(grep -c -x -- --cap-add words.txt) -eq 2 ]]
  grep -qx IPC_LOCK words.txt
  grep -qx -- --privileged words.txt
  grep -qx nofile=1024:2048 words.txt
  grep -qx memlock=-1 words.txt
  grep -A1 -x -- --volume words.txt | grep -qx /a:/b
}

@test "the default --shm-size is dropped with --ipc host; --ulimit host replaces every ulimit" {
  mapfile -t words < <(dry_args --image img --ulimit host -- -- preflight)
  printf '%s\n' "${words[@]}" >words.txt
  refute grep -qx -- --shm-size words.txt
  [[ $(grep -c -x -- --ulimit words.txt) -eq 1 ]]
  grep -A1 -x -- --ulimit words.txt | grep -qx host
  run "$PRIMUS_CLI" --dry-run container --runtime docker --image img --shm-size 8G -- preflight
  assert_success
  assert_output --partial "--shm-size dropped: --ipc host"
}

@test "the reference launcher's .primus.yaml container section works unchanged" {
  mkdir -p "$PRIMUS_DEV_ROOT/dev/kfd" "$PRIMUS_DEV_ROOT/dev/dri"
  cat >ref.yaml <<'EOF'
container:
  options:
    image: "rocm/primus:v26.5"
    ipc: host
    network: host
    privileged: true
    security-opt: seccomp=unconfined
    group-add: video
    ulimit: nofile=1048576:1048576
    device: [/dev/kfd, /dev/dri]
    cap-add: [SYS_PTRACE, CAP_SYS_ADMIN]
    init: false
    env: [NNODES, "FIXED=1"]
EOF
  NNODES=1 run "$PRIMUS_CLI" --config ref.yaml container --runtime docker -- -- preflight
  assert_success
  local args
  args=$(recorded_args)
  grep -qx rocm/primus:v26.5 <<<"$args"
  grep -qx -- --privileged <<<"$args"
  refute grep -qx -- --init <<<"$args"
  grep -qx CAP_SYS_ADMIN <<<"$args"
  grep -qx nofile=1048576:1048576 <<<"$args"
  refute grep -qx memlock=-1 <<<"$args"
  grep -qx /dev/kfd <<<"$args"
  grep -qx FIXED <<<"$args"
  refute grep -q '^FIXED=' <<<"$args"
  mapfile -d '' -t envs <"$STUB_RECORD_DIR/env.nul"
  [[ " ${envs[*]} " == *" FIXED=1 "* ]]
  refute_output --partial "unknown config key"
}

@test "devices by accelerator and existence: ROCm kfd/dri, Neuron neuron0..N-1, infiniband only when present" {
  mkdir -p "$PRIMUS_DEV_ROOT/dev/dri"
  touch "$PRIMUS_DEV_ROOT/dev/kfd"
  PRIMUS_ACCELERATOR=rocm run "$PRIMUS_CLI" --dry-run container --runtime docker --image img -- preflight
  assert_success
  assert_output --partial "--device /dev/kfd --device /dev/dri --volume"
  refute_output --partial /dev/infiniband
  mkdir -p "$PRIMUS_DEV_ROOT/dev/infiniband"
  touch "$PRIMUS_DEV_ROOT/dev/neuron0" "$PRIMUS_DEV_ROOT/dev/neuron1"
  PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn1.2xlarge \
    run "$PRIMUS_CLI" --dry-run container --runtime docker --image img -- preflight
  assert_success
  assert_output --partial "--device /dev/neuron0 --device /dev/neuron1 --device /dev/infiniband --volume"
  refute_output --partial /dev/kfd
}

@test "the families the references use are forwarded on every host; the summary names the ones the registry does not know" {
  NEURON_RT_LOG_LEVEL=INFO FI_PROVIDER=efa FI_SOME_NEW_KNOB=warn TORCH_NCCL_SOME_NEW_KNOB=1 TORCH_FR_BUFFER_SIZE=2000 \
    TORCH_FR_SOME_NEW_KNOB=1 NVTE_SOME_NEW_KNOB=0 HSA_SOME_NEW_KNOB=1 TE_UNKNOWN_KNOB=1 \
    run "$PRIMUS_CLI" --dry-run container --runtime docker --image img -- preflight
  assert_success
  command_line=$(grep 'command: ' <<<"$output")
  local name
  for name in FI_PROVIDER FI_SOME_NEW_KNOB NEURON_RT_LOG_LEVEL TORCH_NCCL_SOME_NEW_KNOB TORCH_FR_BUFFER_SIZE \
    TORCH_FR_SOME_NEW_KNOB NVTE_SOME_NEW_KNOB HSA_SOME_NEW_KNOB; do
    [[ $command_line == *"--env $name "* ]]
  done
  # Names only, never values; registered names (FI_PROVIDER, NEURON_RT_LOG_LEVEL) are not listed.
  assert_output --partial "host variable(s) the registry does not know (under a forwarded prefix or family; \`primus-cli env list\` has the known ones): FI_SOME_NEW_KNOB HSA_SOME_NEW_KNOB NVTE_SOME_NEW_KNOB"
  unknown=$(grep 'the registry does not know' <<<"$output")
  [[ $unknown == *" TORCH_FR_SOME_NEW_KNOB TORCH_NCCL_SOME_NEW_KNOB" ]]
  [[ $unknown != *FI_PROVIDER* && $unknown != *NEURON_RT_LOG_LEVEL* && $unknown != *=* ]]
  # Outside every family: not forwarded, named with the fix.
  [[ $command_line != *"--env TE_UNKNOWN_KNOB "* ]]
  assert_output --partial "1 host variable(s) do not reach the container"
  assert_output --regexp "do not reach the container.*: TE_UNKNOWN_KNOB\. Fix: pass them with --env NAME"
}

@test "a configured device that does not exist is exit 2 naming it (flag and config)" {
  run "$PRIMUS_CLI" --dry-run container --runtime docker --image img --device /dev/nothere -- preflight
  assert_failure 2
  assert_output --partial "device '/dev/nothere'"
  printf 'container:\n  options:\n    device: [/dev/gone0]\n' >c.yaml
  run "$PRIMUS_CLI" --dry-run --config c.yaml container --runtime docker --image img -- preflight
  assert_failure 2
  assert_output --partial "device '/dev/gone0' given by config container.options.device"
}

@test "registered variables that are not forwarded get a WARNING with the --env fix; prefixes are forwarded" {
  value='a "b" $(touch pwned) ; *'
  TE_HIPBLASLT_ALGO_SELECTION=1 OMP_NUM_THREADS=4 HIP_VISIBLE_DEVICES=0 NCCL_NET_PLUGIN=none PRIMUS_SKIP_VALIDATION=0 \
    PRIMUS_ACCELERATOR=rocm run "$PRIMUS_CLI" container --runtime docker --image img --env "MY_VAR=$value" -- preflight
  assert_success
  assert_output --regexp "WARNING OMP_NUM_THREADS=.*--env OMP_NUM_THREADS"
  assert_output --partial "TE_HIPBLASLT_ALGO_SELECTION"
  local args
  args=$(recorded_args)
  refute grep -qx OMP_NUM_THREADS <<<"$args"
  grep -qx HIP_VISIBLE_DEVICES <<<"$args"
  grep -qx NCCL_NET_PLUGIN <<<"$args"
  grep -qx PRIMUS_SKIP_VALIDATION <<<"$args"
  mapfile -d '' -t envs <"$STUB_RECORD_DIR/env.nul"
  [[ " ${envs[*]} " == *" MY_VAR=$value "* ]]
  [[ ! -e pwned ]]
}

@test "inner --env NAME=VALUE becomes runtime environment: the secret is on no argv and masked in the dry-run" {
  run "$PRIMUS_CLI" --dry-run container --runtime docker --image img -- --env HF_TOKEN=hf_inner_secret -- preflight
  assert_success
  refute_output --partial hf_inner_secret
  assert_output --partial "--env HF_TOKEN --env PRIMUS_PYTHON img"
  assert_output --partial "direct --env HF_TOKEN -- preflight"
}

@test "runtime auto-detection: docker without a reachable engine is skipped with a note" {
  mkdir bin
  ln -s "$STUB" bin/docker
  printf '#!/bin/sh\nexit 0\n' >bin/podman
  chmod +x bin/podman
  DOCKER_HOST=unix://$TEST_DIR/no.sock PATH=$PWD/bin:$PATH run "$PRIMUS_CLI" --dry-run container --image img -- preflight
  assert_success
  assert_output --partial "docker ($PWD/bin/docker) skipped: its engine does not answer at $TEST_DIR/no.sock"
  assert_output --partial "command: $PWD/bin/podman run"
}

@test "no runtime at all exits 1 with the fix, in dry-run too; an unsupported one exits 2" {
  mkdir bin
  for f in /usr/bin/* /bin/*; do
    case ${f##*/} in docker | podman) ;; *) ln -sf "$f" "bin/${f##*/}" ;; esac
  done
  PATH=$PWD/bin run "$PRIMUS_CLI" --dry-run container --image img -- preflight
  assert_failure 1
  assert_output --partial "no container runtime found"
  assert_output --partial "apt-get install podman"
  PATH=$PWD/bin run "$PRIMUS_CLI" --dry-run container --runtime podman --image img -- preflight
  assert_failure 1
  assert_output --partial "'podman' (--runtime) not found on PATH"
  run "$PRIMUS_CLI" container --image img --runtime lxc -- preflight
  assert_failure 2
  assert_output --partial "accepted: docker, podman"
}

@test "no image (the upstream default configured away) exits 2 with the fix" {
  printf 'container:\n  options:\n    image: ""\n' >noimg.yaml
  run "$PRIMUS_CLI" --config noimg.yaml container --runtime docker -- preflight
  assert_failure 2
  assert_output --partial "--image"
}

@test "dry-run prints the command and does not call the runtime" {
  run "$PRIMUS_CLI" --dry-run container --runtime docker --image img -- preflight
  assert_success
  assert_output --partial "command: $STUB run --rm"
  [[ ! -e $STUB_RECORD_DIR/args.nul ]]
}

@test "an invalid variable stops the container launch with exit 2 before the runtime runs" {
  MASTER_PORT=80 run "$PRIMUS_CLI" container --runtime docker --image img -- preflight
  assert_failure 2
  assert_output --partial "MASTER_PORT"
  [[ ! -e $STUB_RECORD_DIR/args.nul ]]
}

@test "under a PyTorchJob the ranks are mapped on the host by the same code as direct" {
  PET_NNODES=2 PET_NODE_RANK=1 PET_MASTER_ADDR=trainer-master-0 PET_MASTER_PORT=23456 \
    run "$PRIMUS_CLI" container --runtime docker --image img -- preflight
  assert_success
  assert_output --partial "scheduler ranks mapped on the host (pytorchjob)"
  mapfile -d '' -t envs <"$STUB_RECORD_DIR/env.nul"
  [[ " ${envs[*]} " == *" NNODES=2 "* ]]
  [[ " ${envs[*]} " == *" NODE_RANK=1 "* ]]
  [[ " ${envs[*]} " == *" MASTER_ADDR=trainer-master-0 "* ]]
  recorded_args | grep -q -- '-1$'
}

@test "a training-operator v1 pod (MASTER_ADDR, WORLD_SIZE, RANK, no PET_*) is mapped on the host too (scheduler/variables.py detect_source)" {
  MASTER_ADDR=job-master-0 MASTER_PORT=23456 WORLD_SIZE=2 RANK=1 KUBERNETES_SERVICE_HOST=10.0.0.1 \
    run "$PRIMUS_CLI" container --runtime docker --image img -- preflight
  assert_success
  assert_output --partial "scheduler ranks mapped on the host (pytorchjob-v1)"
  mapfile -d '' -t envs <"$STUB_RECORD_DIR/env.nul"
  [[ " ${envs[*]} " == *" NNODES=2 "* ]]
  [[ " ${envs[*]} " == *" NODE_RANK=1 "* ]]
}

@test "direct --env NAME takes the value NAME has in the environment (how the container hands values in)" {
  HANDED_IN=handed-in-value run "$PRIMUS_CLI" direct --dry-run --env HANDED_IN --module primus_runner -- preflight
  assert_success
  assert_output --partial 'env HANDED_IN=handed-in-value'
  run "$PRIMUS_CLI" direct --dry-run --env NOT_SET_ANYWHERE -- preflight
  assert_failure 2
  assert_output --partial "nor a variable set in the environment"
}

@test "under Slurm the ranks are mapped on the host and passed in; the name carries job id and node rank" {
  SLURM_JOB_ID=42 SLURM_NNODES=2 SLURM_JOB_NODELIST='gpu[07-08]' SLURM_NODEID=1 SLURM_PROCID=1 \
    run "$PRIMUS_CLI" container --runtime docker --image img -- preflight
  assert_success
  mapfile -d '' -t envs <"$STUB_RECORD_DIR/env.nul"
  [[ " ${envs[*]} " == *" NNODES=2 "* ]]
  [[ " ${envs[*]} " == *" NODE_RANK=1 "* ]]
  [[ " ${envs[*]} " == *" MASTER_ADDR=gpu07 "* ]]
  recorded_args | grep -qx primus-training-42-1
  refute grep -q '^SLURM_' "$STUB_RECORD_DIR/args.txt"
}

@test "an option the launcher also adds by default is passed once (--cap-add SYS_PTRACE, CAP_ spelling, --group-add, a repository mount)" {
  run dry_args --image img --cap-add SYS_PTRACE --cap-add=CAP_SYS_PTRACE --cap-add NET_ADMIN \
    --group-add video --security-opt seccomp=unconfined --volume "$REPO_ROOT:$REPO_ROOT" -- preflight
  assert_success
  [[ $(grep -cx -- SYS_PTRACE <<<"$output") == 1 ]]
  [[ $(grep -cxi -- '--cap-add=CAP_SYS_PTRACE' <<<"$output") == 0 ]]
  [[ $(grep -cx -- NET_ADMIN <<<"$output") == 1 ]]
  [[ $(grep -cx -- video <<<"$output") == 1 ]]
  [[ $(grep -cx -- seccomp=unconfined <<<"$output") == 1 ]]
  [[ $(grep -cx -- "$REPO_ROOT:$REPO_ROOT" <<<"$output") == 1 ]]
}

# findings: the env check lines of $output (the findings and their count).
findings() {
  grep '^\[env check\]' <<<"$output" || true
}

@test "env check --container gives exactly the findings of container --dry-run (clean: none; with problems: the same)" {
  export PRIMUS_ACCELERATOR=rocm PRIMUS_SYSFS_ROOT=$REPO_ROOT/tests/fixtures/sysfs/mi300x-2gpu
  # Clean: the launcher's own defaults (base_env.sh's layer, set inside the
  # container) are not the host's variables: no finding either way.
  run "$PRIMUS_CLI" env check --container
  assert_success
  local check=$output
  assert_output "[env check] no problems found"
  run "$PRIMUS_CLI" --dry-run container --runtime docker --image img -- preflight
  assert_success
  [[ -z $(findings) ]]
  refute_output --partial WARN
  [[ $check != *WARNING* ]]
  # With problems: one error, warnings; the same lines and the same exit code.
  export OMP_NUM_THREADS=4 TE_HIPBLASLT_ALGO_SELECTION=1 MASTER_PORT=80 TE_UNKNOWN_KNOB=1
  run "$PRIMUS_CLI" env check --container --env NCCL_PXN_DISABLE=7
  assert_failure 2
  check=$(findings)
  [[ $check == *"ERROR MASTER_PORT='80'"* && $check == *"ERROR NCCL_PXN_DISABLE='7'"* ]]
  [[ $check == *"WARNING OMP_NUM_THREADS='4'"* && $check == *"WARNING TE_HIPBLASLT_ALGO_SELECTION='1'"* ]]
  assert_output --partial "do not reach the container"
  run "$PRIMUS_CLI" --dry-run container --runtime docker --image img --env NCCL_PXN_DISABLE=7 -- preflight
  assert_failure 2
  [[ $(findings) == "$check" ]]
  # No image and no runtime needed by env check.
  mkdir bin
  for f in /usr/bin/* /bin/*; do
    case ${f##*/} in docker | podman) ;; *) ln -sf "$f" "bin/${f##*/}" ;; esac
  done
  PATH=$PWD/bin run "$PRIMUS_CLI" env check --container --format json --strict
  assert_failure 2
  [[ $output == *'"exit_code": 2'* && $output == *'"strict": true'* ]]
}
