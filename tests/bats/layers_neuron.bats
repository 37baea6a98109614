#!/usr/bin/env bats
# The Neuron layer (issue 5 section 3) through primus-env.sh, with the instance
# facts as the launcher exports them (PRIMUS_DETECTION_DONE=1). trn1.32xlarge:
# 16 devices x 2 NeuronCores, LNC 1 (reference: "1 on Trn1"); trn2.48xlarge:
# 16 x 8, LNC 2.

load layers_helper

TRN1=(PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn1.32xlarge
  PRIMUS_NEURON_DEVICES=16 PRIMUS_NEURON_CORES_PER_DEVICE=2 PRIMUS_NEURON_DEFAULT_LNC=1
  PRIMUS_NEURON_LOGICAL_CORES=32 PRIMUS_ENV_DEFER_VALIDATION=1)
TRN2=(PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn2.48xlarge
  PRIMUS_NEURON_DEVICES=16 PRIMUS_NEURON_CORES_PER_DEVICE=8 PRIMUS_NEURON_DEFAULT_LNC=2
  PRIMUS_NEURON_LOGICAL_CORES=64 PRIMUS_ENV_DEFER_VALIDATION=1)

# neuron_env VAR=VALUE...: source primus-env.sh with these values; dump env.
neuron_env() {
  run --separate-stderr clean_bash "$@" -- \
    "source '$PRIMUS_ENV'; echo rc=\$?; env -0 >'$BATS_TEST_TMPDIR/env.dump'"
  assert_success
}

@test "NNODES=2: NEURON_RT_ROOT_COMM_ID = master:MASTER_PORT+1 on both nodes, longer timeout" {
  local rank
  for rank in 0 1; do
    neuron_env "${TRN1[@]}" NNODES=2 NODE_RANK=$rank MASTER_ADDR=trn-node-0 MASTER_PORT=29500
    assert_line rc=0
    assert_env NEURON_RT_ROOT_COMM_ID trn-node-0:29501
    assert_env NEURON_RT_EXEC_TIMEOUT 600
    assert_env MASTER_PORT 29500
  done
}

@test "root comm port: PRIMUS_NEURON_ROOT_COMM_PORT wins; MASTER_PORT=65535 gives 65534; user value kept" {
  neuron_env "${TRN1[@]}" NNODES=2 MASTER_ADDR=m PRIMUS_NEURON_ROOT_COMM_PORT=46820
  assert_env NEURON_RT_ROOT_COMM_ID m:46820
  neuron_env "${TRN1[@]}" NNODES=2 MASTER_ADDR=m MASTER_PORT=65535
  assert_env NEURON_RT_ROOT_COMM_ID m:65534
  neuron_env "${TRN1[@]}" NNODES=2 MASTER_ADDR=m NEURON_RT_ROOT_COMM_ID=10.0.0.1:7000 NEURON_RT_EXEC_TIMEOUT=45
  assert_env NEURON_RT_ROOT_COMM_ID 10.0.0.1:7000
  assert_env NEURON_RT_EXEC_TIMEOUT 45
}

@test "single node: no NEURON_RT_ROOT_COMM_ID, runtime's own exec timeout" {
  neuron_env "${TRN1[@]}" NNODES=1
  refute_env NEURON_RT_ROOT_COMM_ID
  refute_env NEURON_RT_EXEC_TIMEOUT
  assert_env NEURON_LOGICAL_NC_CONFIG 1
  assert_env GPUS_PER_NODE 32
}

@test "family default without facts: PRIMUS_NEURON_INSTANCE override alone (trn2 -> LNC 2)" {
  neuron_env PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn2.48xlarge \
    PRIMUS_ENV_DEFER_VALIDATION=1
  assert_env NEURON_LOGICAL_NC_CONFIG 2
  # Core count unknown: GPUS_PER_NODE keeps the reference default, with a warning.
  assert_env GPUS_PER_NODE 8
  [[ $stderr == *"NeuronCores of instance 'trn2.48xlarge' are unknown"* ]]
}

@test "user GPUS_PER_NODE and NEURON_RT_VISIBLE_CORES are kept; GPUS_PER_NODE follows the visible cores" {
  neuron_env "${TRN2[@]}" GPUS_PER_NODE=4
  assert_env GPUS_PER_NODE 4
  neuron_env "${TRN2[@]}" NEURON_RT_VISIBLE_CORES=0-7,16-23
  assert_env GPUS_PER_NODE 16
  assert_env NEURON_RT_VISIBLE_CORES 0-7,16-23
}

@test "core slices inside the user's NEURON_RT_VISIBLE_CORES" {
  neuron_env "${TRN2[@]}" NEURON_RT_VISIBLE_CORES=8-11,20,22,24,26 PRIMUS_NEURON_CORES_PER_PROC=4
  assert_env GPUS_PER_NODE 2
  assert_env PRIMUS_NEURON_CORE_SLICES "8-11 20,22,24,26"
}

@test "deprecated NEURON_RT_VIRTUAL_CORE_SIZE: warning naming NEURON_LOGICAL_NC_CONFIG, value carried over" {
  neuron_env "${TRN2[@]}" NEURON_RT_VIRTUAL_CORE_SIZE=1
  [[ $stderr == *"NEURON_RT_VIRTUAL_CORE_SIZE is deprecated (still applied); use NEURON_LOGICAL_NC_CONFIG instead"* ]]
  assert_env NEURON_LOGICAL_NC_CONFIG 1
  assert_env NEURON_RT_VIRTUAL_CORE_SIZE 1
  assert_env GPUS_PER_NODE 128
  neuron_env "${TRN2[@]}" NEURON_RT_VIRTUAL_CORE_SIZE=1 NEURON_LOGICAL_NC_CONFIG=2
  [[ $stderr == *"ignored by the runtime because NEURON_LOGICAL_NC_CONFIG='2' is set"* ]]
  assert_env NEURON_LOGICAL_NC_CONFIG 2
}

@test "deprecated NEURON_RT_NUM_CORES: warning naming NEURON_RT_VISIBLE_CORES; cores per process" {
  neuron_env "${TRN1[@]}" NEURON_RT_NUM_CORES=4
  [[ $stderr == *"NEURON_RT_NUM_CORES='4' is deprecated (still applied, not topology-aware); use NEURON_RT_VISIBLE_CORES"* ]]
  assert_env NEURON_RT_NUM_CORES 4
  assert_env GPUS_PER_NODE 8
}

# validate VAR=VALUE...: primus-env.sh with validation on (env check deferred).
validate() {
  run --separate-stderr clean_bash "$@" -- "source '$PRIMUS_ENV'; echo rc=\$?"
  assert_success
}

@test "primus_neuron_validate_cores: errors (return 2) with the variable, value, accepted and fix" {
  validate "${TRN1[@]}" PRIMUS_NEURON_CORES_PER_PROC=0
  assert_line rc=2
  [[ $stderr == *"PRIMUS_NEURON_CORES_PER_PROC='0' is not a whole number >= 1"* ]]
  validate "${TRN1[@]}" PRIMUS_NEURON_CORES_PER_PROC=2 GPUS_PER_NODE=17
  assert_line rc=2
  [[ $stderr == *"GPUS_PER_NODE=17 processes x --neuron-cores-per-proc 2 = 34 NeuronCores, but only 32 are available"* ]]
  validate "${TRN1[@]}" PRIMUS_NEURON_CORES_PER_PROC=3
  assert_line rc=2
  [[ $stderr == *"--neuron-cores-per-proc 3 does not divide the 32 available NeuronCores"* ]]
  validate "${TRN1[@]}" NEURON_RT_VISIBLE_CORES=30-33
  assert_line rc=2
  [[ $stderr == *"names core 33 but trn1.32xlarge has 32 logical NeuronCores"* ]]
  validate "${TRN1[@]}" NEURON_RT_VISIBLE_CORES=0-3,2
  assert_line rc=2
  [[ $stderr == *"is not a range list of distinct cores"* ]]
  validate "${TRN2[@]}" NEURON_LOGICAL_NC_CONFIG=3
  assert_line rc=2
  [[ $stderr == *"NEURON_LOGICAL_NC_CONFIG='3' is not a power of two"* ]]
  validate "${TRN1[@]}" NNODES=2 MASTER_ADDR=m MASTER_PORT=2000 NEURON_RT_ROOT_COMM_ID=m:2000
  assert_line rc=2
  [[ $stderr == *"uses MASTER_PORT=2000"* ]]
  validate "${TRN1[@]}" PRIMUS_NEURON_CORES_PER_PROC=2 NEURON_RT_NUM_CORES=2
  assert_line rc=2
  [[ $stderr == *"both choose cores per process"* ]]
}

@test "valid layout passes; K x GPUS_PER_NODE below the cores is allowed when GPUS_PER_NODE is the user's" {
  validate "${TRN1[@]}" PRIMUS_NEURON_CORES_PER_PROC=2 NNODES=2 MASTER_ADDR=m
  assert_line rc=0
  validate "${TRN1[@]}" PRIMUS_NEURON_CORES_PER_PROC=4 GPUS_PER_NODE=2
  assert_line rc=0
  run clean_bash "${TRN1[@]}" PRIMUS_NEURON_CORES_PER_PROC=4 GPUS_PER_NODE=2 PRIMUS_LOG_LEVEL=ERROR -- \
    "source '$PRIMUS_ENV'; echo \"\$PRIMUS_NEURON_CORE_SLICES\""
  assert_output "0-3 4-7"
}
