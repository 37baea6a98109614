#!/usr/bin/env bats
# primus-env.sh: layer selection, validation and its switches.

load layers_helper

# load_env VAR=VALUE...: source primus-env.sh (detection done) and dump env.
load_env() {
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_PYTHON="$VENV_PY" "$@" -- \
    "source '$PRIMUS_ENV'; echo rc=\$?; env -0 >'$BATS_TEST_TMPDIR/env.dump'"
  assert_success
}

@test "each ROCm GPU model loads its own layer (case-insensitive model name), values of upstream AMD-AGI/Primus@fd1eeabb runner/helpers/envs/<model>.sh" {
  load_env PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=mi325x PRIMUS_SKIP_VALIDATION=1
  [[ $stderr == *"GPU-model layer MI325X.sh"* ]]  # every log line is on stderr
  refute_env RCCL_WARP_SPEED_AUTO
  refute_env HSA_XNACK
  refute_env GPU_MAX_HEAP_SIZE
  refute_env HSA_KERNARG_POOL_SIZE
  load_env PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI355X PRIMUS_SKIP_VALIDATION=1
  [[ $stderr == *"GPU-model layer MI355X.sh"* ]]
  assert_env RCCL_WARP_SPEED_AUTO 0
  refute_env HSA_XNACK
  refute_env HSA_ENABLE_INTERRUPT
  refute_env HSA_KERNARG_POOL_SIZE
  load_env PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI355X PRIMUS_SKIP_VALIDATION=1 RCCL_WARP_SPEED_AUTO=1
  assert_env RCCL_WARP_SPEED_AUTO 1
}

@test "unknown GPU model: a warning naming the accepted models, base defaults only" {
  load_env PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI250X PRIMUS_SKIP_VALIDATION=1
  assert_line rc=0
  [[ $stderr == *"GPU model 'MI250X' has no layer (accepted: MI300X, MI325X, MI355X); using the base defaults only"* ]]
  refute_env RCCL_WARP_SPEED_AUTO
  assert_env HSA_NO_SCRATCH_RECLAIM 1
  assert_env GPU_MAX_HW_QUEUES 2
}

@test "TORCH_COMPILE_CACHE_KEY_TAG is never set by the layers (Primus's Python patch owns it); a user value is untouched" {
  load_env PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X PRIMUS_SKIP_VALIDATION=1
  refute_env TORCH_COMPILE_CACHE_KEY_TAG
  load_env PRIMUS_ACCELERATOR=rocm PRIMUS_SKIP_VALIDATION=1 TORCH_COMPILE_CACHE_KEY_TAG=mine
  assert_env TORCH_COMPILE_CACHE_KEY_TAG mine
}

@test "PRIMUS_DETERMINISTIC=1: the deterministic set; a contradicting user value is kept and warned about" {
  load_env PRIMUS_ACCELERATOR=rocm PRIMUS_SKIP_VALIDATION=1 PRIMUS_DETERMINISTIC=1
  assert_env NCCL_ALGO Ring
  assert_env NVTE_ALLOW_NONDETERMINISTIC_ALGO 0
  assert_env ROCBLAS_DEFAULT_ATOMICS_MODE 0
  assert_env TORCH_COMPILE_DISABLE 1
  assert_env PRIMUS_TURBO_AUTO_TUNE 0
  refute_env CUBLAS_WORKSPACE_CONFIG
  load_env PRIMUS_ACCELERATOR=rocm PRIMUS_SKIP_VALIDATION=1 PRIMUS_DETERMINISTIC=1 TORCH_COMPILE_DISABLE=0
  assert_env TORCH_COMPILE_DISABLE 0
  [[ $stderr == *"PRIMUS_DETERMINISTIC=1 needs TORCH_COMPILE_DISABLE=1 but TORCH_COMPILE_DISABLE='0' is exported"* ]]
  load_env PRIMUS_ACCELERATOR=cuda PRIMUS_SKIP_VALIDATION=1 PRIMUS_DETERMINISTIC=1
  assert_env CUBLAS_WORKSPACE_CONFIG :4096:8
  load_env PRIMUS_ACCELERATOR=rocm PRIMUS_SKIP_VALIDATION=1
  refute_env NCCL_ALGO
  refute_env ROCBLAS_DEFAULT_ATOMICS_MODE
}

@test "validation: env check errors make the source return 2 (and a set -e caller stop)" {
  load_env PRIMUS_ACCELERATOR=cpu NNODES=abc
  assert_line rc=2
  [[ $stderr == *"NNODES='abc'"* ]]
  [[ $stderr == *"environment validation failed"* ]]
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_PYTHON="$VENV_PY" PRIMUS_ACCELERATOR=cpu NNODES=abc -- \
    "set -e; source '$PRIMUS_ENV'; echo not-reached"
  assert_failure 2
  refute_output --partial not-reached
}

@test "validation passes on a good environment; PRIMUS_SKIP_VALIDATION=1 skips it with a warning" {
  load_env PRIMUS_ACCELERATOR=cpu
  assert_line rc=0
  [[ $stderr != *WARN* ]] || fail "$stderr"
  load_env PRIMUS_ACCELERATOR=cpu NNODES=abc PRIMUS_SKIP_VALIDATION=1
  assert_line rc=0
  [[ $stderr == *"PRIMUS_SKIP_VALIDATION=1: environment validation skipped"* ]]
}

@test "PRIMUS_ENV_DEFER_VALIDATION=1 (the launcher's switch): no env check, no warning" {
  load_env PRIMUS_ACCELERATOR=cpu NNODES=abc PRIMUS_ENV_DEFER_VALIDATION=1
  assert_line rc=0
  [[ $stderr != *WARN* && $stderr != *ERROR* && $stderr != *"env check"* ]] || fail "$stderr"
}

@test "PRIMUS_DETECTED_VARS: launcher defaults are refined by a layer, user values are not" {
  load_env PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn1.32xlarge PRIMUS_NEURON_DEVICES=16 \
    PRIMUS_NEURON_CORES_PER_DEVICE=2 PRIMUS_NEURON_DEFAULT_LNC=1 PRIMUS_NEURON_LOGICAL_CORES=32 \
    GPUS_PER_NODE=8 "PRIMUS_DETECTED_VARS=GPUS_PER_NODE MASTER_ADDR" MASTER_ADDR=slurm-head \
    PRIMUS_ENV_DEFER_VALIDATION=1
  assert_env GPUS_PER_NODE 32
  assert_env MASTER_ADDR slurm-head
  load_env PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn1.32xlarge PRIMUS_NEURON_DEVICES=16 \
    PRIMUS_NEURON_CORES_PER_DEVICE=2 PRIMUS_NEURON_DEFAULT_LNC=1 PRIMUS_NEURON_LOGICAL_CORES=32 \
    GPUS_PER_NODE=8 PRIMUS_ENV_DEFER_VALIDATION=1
  assert_env GPUS_PER_NODE 8
}

@test "primus-env.sh twice in a row: XLA flags are not appended twice" {
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=rocm PRIMUS_FRAMEWORK=maxtext \
    PRIMUS_ENV_DEFER_VALIDATION=1 -- \
    "source '$PRIMUS_ENV'; first=\$XLA_FLAGS; source '$PRIMUS_ENV'; [[ \$XLA_FLAGS == \"\$first\" ]] && echo same"
  assert_output --partial same
}

@test "executed instead of sourced: exit 2; --help prints the layer order" {
  run bash "$PRIMUS_ENV" --help
  assert_success
  assert_output --partial "base_env.sh"
  assert_output --partial "jax_xla.sh"
  run bash "$PRIMUS_ENV"
  assert_failure 2
}
