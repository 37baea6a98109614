#!/usr/bin/env bats
# The JAX/XLA layer (Primus docs, environment variables, section 14) through primus-env.sh.

load layers_helper

MANAGED="--xla_gpu_memory_limit_slop_factor=95 --xla_gpu_reduce_scatter_combine_threshold_bytes=8589934592 --xla_gpu_all_gather_combine_threshold_bytes=8589934592 --xla_gpu_enable_command_buffer='' --xla_gpu_enable_latency_hiding_scheduler=true --xla_gpu_enable_triton_gemm=false --xla_gpu_enable_cublaslt=true --xla_gpu_autotune_level=4 --xla_gpu_enable_all_gather_combine_by_dim=false"

# with_jax [VAR=VALUE...] [-- ARGS]: source primus-env.sh as a ROCm MI300X host
# with detection done and validation deferred; dump the environment.
with_jax() {
  local -a vars=() args=()
  while (($#)) && [[ $1 != -- ]]; do vars+=("$1"); shift; done
  (($#)) && shift && args=("$@")
  local quoted=""
  ((${#args[@]})) && quoted=$(printf ' %q' -- "${args[@]}")
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=rocm \
    PRIMUS_GPU_MODEL=MI300X PRIMUS_ENV_DEFER_VALIDATION=1 "${vars[@]}" -- \
    "source '$PRIMUS_ENV'$quoted; echo rc=\$?; env -0 >'$BATS_TEST_TMPDIR/env.dump'"
}

@test "order: inherited flags, then managed, then XLA_FLAGS_APPEND; APPEND is consumed" {
  with_jax PRIMUS_FRAMEWORK=maxtext "XLA_FLAGS=--xla_gpu_autotune_level=0 --xla_dump_hlo_as_text" \
    "XLA_FLAGS_APPEND=--xla_gpu_enable_triton_gemm=true"
  assert_success
  assert_line rc=0
  assert_env XLA_FLAGS "--xla_gpu_autotune_level=0 --xla_dump_hlo_as_text $MANAGED --xla_gpu_enable_triton_gemm=true"
  refute_env XLA_FLAGS_APPEND
}

@test "no inherited flags: the managed string alone, and the set-if-unset values" {
  with_jax PRIMUS_FRAMEWORK=jax
  assert_env XLA_FLAGS "$MANAGED"
  assert_env XLA_PYTHON_CLIENT_MEM_FRACTION .97
  assert_env TF_CPP_MIN_LOG_LEVEL 2
  refute_env JAX_COORDINATOR_IP
  refute_env JAX_COORDINATOR_PORT
}

@test "user values of the set-if-unset variables are kept" {
  with_jax PRIMUS_FRAMEWORK=maxtext XLA_PYTHON_CLIENT_MEM_FRACTION=.5 TF_CPP_MIN_LOG_LEVEL=0
  assert_env XLA_PYTHON_CLIENT_MEM_FRACTION .5
  assert_env TF_CPP_MIN_LOG_LEVEL 0
}

@test "XLA_FLAGS owned by config env (PRIMUS_XLA_FLAGS_OWNED=1): no managed flags; APPEND still last" {
  with_jax PRIMUS_FRAMEWORK=maxtext PRIMUS_XLA_FLAGS_OWNED=1 "XLA_FLAGS=--mine=1" \
    "XLA_FLAGS_APPEND=--xla_dump_to=/d"
  assert_env XLA_FLAGS "--mine=1 --xla_dump_to=/d"
  refute_env XLA_FLAGS_APPEND
}

@test "XLA_GPU_AUTOTUNE_LEVEL parameterises the managed flag; 0 or a non-number is the rules engine's error (return 2)" {
  with_jax PRIMUS_FRAMEWORK=maxtext XLA_GPU_AUTOTUNE_LEVEL=5
  assert_env XLA_FLAGS "${MANAGED/autotune_level=4/autotune_level=5}"
  # The layer refuses nothing itself (validation deferred: it only sets values) ...
  with_jax PRIMUS_FRAMEWORK=maxtext XLA_GPU_AUTOTUNE_LEVEL=0
  assert_line rc=0
  [[ $stderr != *"[ERROR]"* ]]
  # ... the validation step names the rule's finding and returns 2.
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X \
    PRIMUS_PYTHON="$VENV_PY" PRIMUS_FRAMEWORK=maxtext XLA_GPU_AUTOTUNE_LEVEL=0 -- "source '$PRIMUS_ENV'; echo rc=\$?"
  assert_line rc=2
  [[ $stderr == *"ERROR XLA_GPU_AUTOTUNE_LEVEL='0': must be >= 1"* ]]
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X \
    PRIMUS_PYTHON="$VENV_PY" PRIMUS_FRAMEWORK=maxtext XLA_GPU_AUTOTUNE_LEVEL=x -- "source '$PRIMUS_ENV'; echo rc=\$?"
  assert_line rc=2
  [[ $stderr == *"ERROR XLA_GPU_AUTOTUNE_LEVEL='x'"* ]]
}

@test "DUMP_HLO=1 adds --xla_dump_to (default dir, then DUMP_HLO_DIR)" {
  with_jax PRIMUS_FRAMEWORK=maxtext DUMP_HLO=1
  assert_env XLA_FLAGS "$MANAGED --xla_dump_to=output/xla_dump_hlo"
  with_jax PRIMUS_FRAMEWORK=maxtext DUMP_HLO=1 "DUMP_HLO_DIR=/tmp/my dumps"
  assert_env XLA_FLAGS "$MANAGED --xla_dump_to=/tmp/my dumps"
}

@test "JAX_COORDINATOR_IP/PORT only when NNODES > 1, from MASTER_ADDR/PORT" {
  with_jax PRIMUS_FRAMEWORK=maxtext NNODES=2 MASTER_ADDR=node-0 MASTER_PORT=2345
  assert_env JAX_COORDINATOR_IP node-0
  assert_env JAX_COORDINATOR_PORT 2345
  with_jax PRIMUS_FRAMEWORK=maxtext NNODES=1 MASTER_ADDR=node-0
  refute_env JAX_COORDINATOR_IP
}

# counting_python: a PRIMUS_PYTHON that notes each start in python.starts.
counting_python() {
  local wrapper=$BATS_TEST_TMPDIR/counting-python
  printf '#!/bin/bash\necho "$*" >>%q\nexec %q "$@"\n' "$BATS_TEST_TMPDIR/python.starts" "$VENV_PY" >"$wrapper"
  chmod +x "$wrapper"
  echo "$wrapper"
}

@test "by hand, NNODES=2 and an IPv6 MASTER_ADDR: jax_layer.py's coordinator, one python3 start; one node: none" {
  local py
  py=$(counting_python)
  with_jax PRIMUS_PYTHON="$py" PRIMUS_FRAMEWORK=jax NNODES=2 MASTER_ADDR=fd00::10 MASTER_PORT=2345
  assert_line rc=0
  assert_env JAX_COORDINATOR_IP fd00::10
  assert_env JAX_COORDINATOR_PORT 2345
  # the address is the launcher's (run mode single), not the layer's
  refute_env JAX_COORDINATOR_ADDRESS
  [[ $(<"$BATS_TEST_TMPDIR/python.starts") == "-m primus_runner layer jax" ]]
  # who set what: the layer; a user's value is kept and stays the user's
  [[ " $(env_value PRIMUS_ENV_ORIGINS) " == *" JAX_COORDINATOR_IP:jax_xla "* ]]
  with_jax PRIMUS_PYTHON="$py" PRIMUS_FRAMEWORK=jax NNODES=2 MASTER_ADDR=fd00::10 JAX_COORDINATOR_IP=mine
  assert_env JAX_COORDINATOR_IP mine
  assert_env JAX_COORDINATOR_PORT 1234
  [[ " $(env_value PRIMUS_ENV_ORIGINS) " != *" JAX_COORDINATOR_IP:jax_xla "* ]]
  # One node (NNODES=1 or unset): nothing to decide, and no Python start for it.
  rm "$BATS_TEST_TMPDIR/python.starts"
  with_jax PRIMUS_PYTHON="$py" PRIMUS_FRAMEWORK=jax NNODES=1 MASTER_ADDR=fd00::10
  assert_line rc=0
  refute_env JAX_COORDINATOR_IP
  with_jax PRIMUS_PYTHON="$py" PRIMUS_FRAMEWORK=jax MASTER_ADDR=fd00::10
  refute_env JAX_COORDINATOR_IP
  [[ ! -e $BATS_TEST_TMPDIR/python.starts ]]
}

@test "by hand, the coordinator's decision cannot run: a warning that says why, no coordinator" {
  with_jax PRIMUS_PYTHON=/bin/false PRIMUS_FRAMEWORK=jax NNODES=2 MASTER_ADDR=node-0
  assert_line rc=0
  refute_env JAX_COORDINATOR_IP
  [[ $stderr == *"jax_xla: the JAX coordinator's decision could not run ("*"no coordinator was set"* ]]
}

@test "JAX workload recognised from the arguments after --; others get no JAX layer" {
  with_jax -- train pretrain --config examples/maxtext/llama3_8B.yaml
  assert_env PRIMUS_FRAMEWORK maxtext
  assert_env XLA_FLAGS "$MANAGED"
  with_jax -- train pretrain --config examples/megatron/llama3_8B.yaml
  refute_env PRIMUS_FRAMEWORK
  refute_env XLA_FLAGS
  with_jax PRIMUS_FRAMEWORK=megatron "XLA_FLAGS_APPEND=--x=1" -- maxtext
  refute_env XLA_FLAGS
}

@test "MaxDiffusion: no managed defaults, only XLA_FLAGS_APPEND" {
  with_jax PRIMUS_FRAMEWORK=maxdiffusion "XLA_FLAGS=--a=1" "XLA_FLAGS_APPEND=--b=2"
  assert_env XLA_FLAGS "--a=1 --b=2"
  refute_env XLA_PYTHON_CLIENT_MEM_FRACTION
}

@test "Neuron host: xla_gpu_* managed flags are not applied (XLA would reject them)" {
  with_jax PRIMUS_FRAMEWORK=maxtext PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn1.32xlarge \
    "XLA_FLAGS=--a=1" "XLA_FLAGS_APPEND=--b=2"
  assert_env XLA_FLAGS "--a=1 --b=2"
  assert_env TF_CPP_MIN_LOG_LEVEL 2
}

@test "primus_xla_apply_append after --env: appended once, consumed, idempotent" {
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=rocm PRIMUS_FRAMEWORK=maxtext \
    PRIMUS_ENV_DEFER_VALIDATION=1 PRIMUS_LOG_LEVEL=ERROR -- \
    "source '$PRIMUS_ENV'
     export XLA_FLAGS_APPEND='--late=1'; primus_xla_apply_append
     export XLA_FLAGS_APPEND='--late=1'; primus_xla_apply_append
     printf '%s|%s\n' \"\$XLA_FLAGS\" \"\${XLA_FLAGS_APPEND-gone}\""
  assert_success
  assert_output "$MANAGED --late=1|gone"
}
