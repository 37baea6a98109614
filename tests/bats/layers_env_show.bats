#!/usr/bin/env bats
# runner/helpers/envs/env-show.sh (`primus-cli env show`): values and origins.

load layers_helper

SHOW=$ENVS/env-show.sh

# show VAR=VALUE... -- ARGS...: env-show.sh --format tsv with a clean environment.
show() {
  local -a vars=()
  while (($#)) && [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  run --separate-stderr env -i PATH=/usr/bin:/bin PRIMUS_LOG_COLOR=0 PRIMUS_DETECTION_DONE=1 \
    "${vars[@]}" "$SHOW" --format tsv "$@"
}

@test "origins: reference default, GPU-model layer, user export, --env; secrets masked" {
  show PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI355X NCCL_IB_GID_INDEX=1 HF_TOKEN=hf_secret_value -- \
    --all --env NCCL_DEBUG=INFO --env MY_API_KEY=abcdef123
  assert_success
  assert_line "$(printf 'NCCL_PXN_DISABLE\tdefault (base_env.sh)\t1')"
  assert_line "$(printf 'RCCL_WARP_SPEED_AUTO\tgpu layer (MI355X.sh)\t0')"
  assert_line "$(printf 'NCCL_IB_GID_INDEX\tuser export\t1')"
  assert_line "$(printf 'NCCL_DEBUG\t--env\tINFO')"
  assert_line "$(printf 'HF_TOKEN\tuser export\t****')"
  assert_line "$(printf 'MY_API_KEY\t--env\t****')"
  refute_output --partial TORCH_COMPILE_CACHE_KEY_TAG
  refute_output --partial hf_secret_value
  refute_output --partial abcdef123
}

@test "origins: Neuron layer, JAX layer, appended user value" {
  show PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn1.32xlarge PRIMUS_NEURON_DEVICES=16 \
    PRIMUS_NEURON_CORES_PER_DEVICE=2 PRIMUS_NEURON_DEFAULT_LNC=1 PRIMUS_NEURON_LOGICAL_CORES=32 \
    NNODES=2 MASTER_ADDR=n0 "XLA_FLAGS=--a=1" -- --env XLA_FLAGS_APPEND=--b=2 -- train --config maxtext/x.yaml
  assert_success
  assert_line "$(printf 'GPUS_PER_NODE\tneuron layer (neuron.sh)\t32')"
  assert_line "$(printf 'NEURON_RT_ROOT_COMM_ID\tneuron layer (neuron.sh)\tn0:1235')"
  assert_line "$(printf 'XLA_FLAGS\tuser export + XLA_FLAGS_APPEND\t--a=1 --b=2')"
  assert_line "$(printf 'JAX_COORDINATOR_IP\tjax layer (jax_xla.sh)\tn0')"
  assert_line "$(printf 'PRIMUS_FRAMEWORK\tdetected\tmaxtext')"
}

@test "inside a loaded environment: origins recorded by the loader and primus_env_note_origin (hook)" {
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=cpu PRIMUS_ENV_DEFER_VALIDATION=1 -- \
    "source '$PRIMUS_ENV'; export NCCL_DEBUG=WARN; primus_env_note_origin NCCL_DEBUG hook; '$SHOW' --format table"
  assert_success
  assert_line --regexp '^NAME +ORIGIN +VALUE$'
  assert_line --regexp '^NCCL_DEBUG +hook +WARN$'
  assert_line --regexp '^MASTER_PORT +default \(base_env.sh\) +1234$'
}

@test "bad options: exit 2 with the accepted values" {
  run "$SHOW" --format xml
  assert_failure 2
  assert_output --partial "accepted: table, tsv"
  run "$SHOW" --env NOEQUALS
  assert_failure 2
  assert_output --partial "is not KEY=VALUE"
  run "$SHOW" --help
  assert_success
  assert_output --partial "Usage: env-show.sh"
}
