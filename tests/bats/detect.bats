#!/usr/bin/env bats
# shellcheck disable=SC2016 # single-quoted $ in the scripts given to clean_bash is meant for that shell
# One detection path: `python3 -m primus_runner detect` is the code the
# launcher and base_env.sh use, so the same host gives the same values from every
# entry point. The 2-GPU machine (tests/fixtures/sysfs/mi300x-2gpu) must give
# GPUS_PER_NODE=2 everywhere; every fixture machine must give detect's values
# when base_env.sh is sourced by hand.

load layers_helper

setup() {
  DUMP="$BATS_TEST_TMPDIR/env.dump"
  TWO=$SYSFS/mi300x-2gpu
  CFG=$REPO_ROOT/examples/cpu_pretrain.yaml
}

detect() { PYTHONPATH="$REPO_ROOT/python" "$VENV_PY" -m primus_runner detect "$@"; }

# on_host MACHINE CMD...: CMD under env -i on a fixture machine.
on_host() {
  local root=$SYSFS/$1
  shift
  env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$BATS_TEST_TMPDIR" PRIMUS_LOG_COLOR=0 \
    PRIMUS_LOG_TIMESTAMP=0 PRIMUS_SYSFS_ROOT="$root" PRIMUS_DEV_ROOT="$root" \
    PRIMUS_WORKSPACE="$BATS_TEST_TMPDIR/ws" PRIMUS_WORKLOAD_PYTHON="$VENV_PY" "$@"
}

@test "the 2-GPU machine: GPUS_PER_NODE=2 from detect, base_env.sh, primus-env.sh, direct and slurm-entry" {
  run on_host mi300x-2gpu PYTHONPATH="$REPO_ROOT/python" "$VENV_PY" -m primus_runner detect
  assert_success
  assert_line "export GPUS_PER_NODE=2"
  assert_line "export PRIMUS_GPU_COUNT=2"
  assert_line "export PRIMUS_GPU_MODEL=MI300X"

  run on_host mi300x-2gpu PRIMUS_PYTHON="$VENV_PY" bash --norc -c \
    "source '$BASE_ENV'; echo \"GPUS=\$GPUS_PER_NODE HIP=\$HIP_VISIBLE_DEVICES\""
  assert_success
  assert_line "GPUS=2 HIP=0,1"

  run on_host mi300x-2gpu PRIMUS_PYTHON="$VENV_PY" bash --norc -c \
    "source '$PRIMUS_ENV'; echo \"GPUS=\$GPUS_PER_NODE\""
  assert_success
  assert_line "GPUS=2"

  run on_host mi300x-2gpu "$REPO_ROOT/runner/primus-cli" direct --dry-run --module primus_runner -- train pretrain --config "$CFG"
  assert_success
  assert_output --partial "GPUS_PER_NODE=2 "
  assert_output --partial "--nproc_per_node 2 "

  run on_host mi300x-2gpu SLURM_JOB_ID=7 SLURM_NNODES=1 SLURM_NODEID=0 SLURM_PROCID=0 \
    SLURM_NODELIST=gpuvm-01 "$REPO_ROOT/runner/primus-cli-slurm-entry.sh" --dry-run direct --module primus_runner -- \
    train pretrain --config "$CFG"
  assert_success
  assert_output --partial "GPUS_PER_NODE=2 "
  assert_output --partial "--nproc_per_node 2 "
}

@test "detect and sourcing base_env.sh give the same values on every fixture machine" {
  local machine name value line checked
  for machine in mi300x-2gpu mi300x-roce ib-node trn1.32xlarge trn2.48xlarge inf2 no-accel; do
    run on_host "$machine" PYTHONPATH="$REPO_ROOT/python" "$VENV_PY" -m primus_runner detect --format json
    assert_success
    local expected=$output
    on_host "$machine" PRIMUS_PYTHON="$VENV_PY" bash --norc -c "source '$BASE_ENV'; env -0 >'$DUMP'" >/dev/null
    checked=0
    while IFS= read -r line; do
      name=${line%%=*} value=${line#*=}
      [[ $name == PRIMUS_DETECTION_DONE || $name == PRIMUS_DETECTED_VARS ]] && continue
      if [[ $(env_value "$name") != "$value" ]]; then
        echo "$machine: $name: detect says '$value', base_env.sh exported '$(env_value "$name")'"
        return 1
      fi
      checked=$((checked + 1))
    done < <("$VENV_PY" -c 'import json, sys; [print(f"{k}={v}") for k, v in json.load(sys.stdin)["env"].items()]' <<<"$expected")
    ((checked >= 8)) || { echo "$machine: only $checked values compared"; return 1; }
  done
}

@test "detect keeps exported values and says where each value came from" {
  run on_host mi300x-2gpu GPUS_PER_NODE=1 NCCL_SOCKET_IFNAME=lo PYTHONPATH="$REPO_ROOT/python" \
    "$VENV_PY" -m primus_runner detect --format json
  assert_success
  run "$VENV_PY" -c 'import json, sys
d = json.loads(sys.argv[1])
print(d["env"]["GPUS_PER_NODE"], d["origins"]["GPUS_PER_NODE"], "NCCL_SOCKET_IFNAME" in d["env"],
      d["origins"]["PRIMUS_GPU_COUNT"], d["failures"])' "$output"
  assert_output "1 exported False detected []"
}

@test "detect --sysfs-root and --format shell: export lines quoted for bash" {
  run detect --sysfs-root "$TWO" --dev-root "$TWO" --format shell
  assert_success
  assert_line "export GPUS_PER_NODE=2"
  assert_line "export IP_INTERFACE=eth0"
  run detect --sysfs-root /nonexistent
  assert_failure 2
  assert_output --partial "--sysfs-root '/nonexistent' is not a directory"
}

@test "a failing step is reported, the others still run (exit 2 names the culprit)" {
  # Slurm batch shell of 2 nodes, no step: the rank of this node is unknown.
  run --separate-stderr on_host mi300x-2gpu SLURM_JOB_ID=9 SLURM_NNODES=2 SLURM_NODELIST='n[1-2]' \
    PYTHONPATH="$REPO_ROOT/python" "$VENV_PY" -m primus_runner detect
  assert_failure 2
  assert_line "export PRIMUS_GPU_COUNT=2"
  [[ $stderr == *"detect: ranks: inside Slurm job 9 of 2 nodes but neither SLURM_NODEID nor SLURM_PROCID is set"* ]]
  # Sourcing base_env.sh there: one warning with the same reason, rc 0, GPU facts applied.
  run --separate-stderr on_host mi300x-2gpu SLURM_JOB_ID=9 SLURM_NNODES=2 SLURM_NODELIST='n[1-2]' \
    PRIMUS_PYTHON="$VENV_PY" bash --norc -c "source '$BASE_ENV'; echo rc=\$? GPUS=\$GPUS_PER_NODE"
  assert_success
  assert_line "rc=0 GPUS=2"
  [[ $stderr == *"[WARN] base_env: inside Slurm job 9 of 2 nodes but neither SLURM_NODEID nor SLURM_PROCID is set"* ]]
}
