#!/usr/bin/env bats
# The Neuron layer (section 3) through primus-env.sh, with the instance
# facts as the launcher exports them (PRIMUS_DETECTION_DONE=1). trn1.32xlarge:
# 16 devices x 2 NeuronCores, LNC 1 (reference: "1 on Trn1"); trn2.48xlarge:
# 16 x 8, LNC 2.

load layers_helper

TRN1=(PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn1.32xlarge
  PRIMUS_NEURON_DEVICES=16 PRIMUS_NEURON_CORES_PER_DEVICE=2 PRIMUS_NEURON_DEFAULT_LNC=1
  PRIMUS_NEURON_LOGICAL_CORES=32 PRIMUS_ENV_DEFER_VALIDATION=1 PRIMUS_PYTHON="$VENV_PY")
TRN2=(PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn2.48xlarge
  PRIMUS_NEURON_DEVICES=16 PRIMUS_NEURON_CORES_PER_DEVICE=8 PRIMUS_NEURON_DEFAULT_LNC=2
  PRIMUS_NEURON_LOGICAL_CORES=64 PRIMUS_ENV_DEFER_VALIDATION=1)

# neuron_env VAR=VALUE...: source primus-env.sh with these values; dump env.
neuron_env() {
  run --separate-stderr clean_bash "$@" -- \
    "source '$PRIMUS_ENV'; echo rc=\$?; env -0 >'$BATS_TEST_TMPDIR/env.dump'"
  assert_success
}

@test "NNODES=2: NEURON_RT_ROOT_COMM_ID = master:MASTER_PORT+1 on both nodes, longer timeout, EFA" {
  local rank
  for rank in 0 1; do
    neuron_env "${TRN1[@]}" NNODES=2 NODE_RANK=$rank MASTER_ADDR=trn-node-0 MASTER_PORT=29500 \
      IP_INTERFACE=ens32
    assert_line rc=0
    assert_env NEURON_RT_ROOT_COMM_ID trn-node-0:29501
    assert_env NEURON_RT_EXEC_TIMEOUT 600
    assert_env MASTER_PORT 29500
    assert_env FI_PROVIDER efa
    assert_env FI_EFA_USE_DEVICE_RDMA 1
    assert_env FI_EFA_FORK_SAFE 1
    assert_env CCOM_SOCKET_IFNAME ens32
    assert_env MALLOC_ARENA_MAX 64
  done
}

@test "NNODES=2: the user's FI_*, CCOM_SOCKET_IFNAME and MALLOC_ARENA_MAX are kept" {
  neuron_env "${TRN1[@]}" NNODES=2 MASTER_ADDR=m IP_INTERFACE=ens32 FI_PROVIDER=tcp \
    FI_EFA_USE_DEVICE_RDMA=0 FI_EFA_FORK_SAFE=0 CCOM_SOCKET_IFNAME=eth9 MALLOC_ARENA_MAX=8
  assert_env FI_PROVIDER tcp
  assert_env FI_EFA_USE_DEVICE_RDMA 0
  assert_env FI_EFA_FORK_SAFE 0
  assert_env CCOM_SOCKET_IFNAME eth9
  assert_env MALLOC_ARENA_MAX 8
}

@test "IPv6 MASTER_ADDR: the root comm id is bracketed (one derivation, ranks.py)" {
  neuron_env "${TRN1[@]}" PRIMUS_PYTHON="$VENV_PY" NNODES=2 MASTER_ADDR=fd00::10 MASTER_PORT=29500
  assert_env NEURON_RT_ROOT_COMM_ID "[fd00::10]:29501"
}

@test "no NCCL_IB_* on a Neuron host unless the user set them" {
  neuron_env "${TRN1[@]}" NCCL_IB_GID_INDEX=3 PRIMUS_DETECTED_VARS="NCCL_IB_GID_INDEX"
  refute_env NCCL_IB_GID_INDEX
  refute_env NCCL_IB_HCA
  neuron_env "${TRN1[@]}" NCCL_IB_TIMEOUT=22
  assert_env NCCL_IB_TIMEOUT 22
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

@test "single node: no NEURON_RT_ROOT_COMM_ID, runtime's own exec timeout, no FI_*" {
  neuron_env "${TRN1[@]}" NNODES=1
  refute_env NEURON_RT_ROOT_COMM_ID
  refute_env NEURON_RT_EXEC_TIMEOUT
  refute_env FI_PROVIDER
  refute_env FI_EFA_FORK_SAFE
  assert_env MALLOC_ARENA_MAX 64
  # One core per process: slices name single cores; no per-process visible list.
  assert_env PRIMUS_NEURON_CORE_SLICES "$(seq -s ' ' 0 31)"
  refute_env NEURON_RT_VISIBLE_CORES
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

@test "deprecated NEURON_RT_VIRTUAL_CORE_SIZE: left to the runtime (no NEURON_LOGICAL_NC_CONFIG), cores counted with it" {
  neuron_env "${TRN2[@]}" NEURON_RT_VIRTUAL_CORE_SIZE=1
  refute_env NEURON_LOGICAL_NC_CONFIG
  assert_env NEURON_RT_VIRTUAL_CORE_SIZE 1
  assert_env GPUS_PER_NODE 128
  # The layer does not warn itself: env check's deprecated rule does (one message).
  [[ $stderr != *VIRTUAL_CORE_SIZE* ]]
  neuron_env "${TRN2[@]}" NEURON_RT_VIRTUAL_CORE_SIZE=1 NEURON_LOGICAL_NC_CONFIG=2
  assert_env NEURON_LOGICAL_NC_CONFIG 2
  assert_env GPUS_PER_NODE 64
}

@test "deprecated NEURON_RT_NUM_CORES=32 is the node's total (AWS samples): 32 processes, never 1" {
  neuron_env "${TRN1[@]}" NEURON_RT_NUM_CORES=32
  assert_env NEURON_RT_NUM_CORES 32
  assert_env GPUS_PER_NODE 32
  neuron_env "${TRN1[@]}" NEURON_RT_NUM_CORES=16
  assert_env GPUS_PER_NODE 16
}

# check VAR=VALUE...: primus-env.sh with validation on (env check runs the rules).
check() {
  run --separate-stderr clean_bash PRIMUS_PYTHON="$VENV_PY" "$@" -- "source '$PRIMUS_ENV'; echo rc=\$?"
  assert_success
}

TRN1_V=(PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn1.32xlarge
  PRIMUS_NEURON_DEVICES=16 PRIMUS_NEURON_CORES_PER_DEVICE=2 PRIMUS_NEURON_DEFAULT_LNC=1
  PRIMUS_NEURON_LOGICAL_CORES=32 PRIMUS_NEURON_EFA_DEVICES=8)
TRN2_V=(PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=neuron PRIMUS_NEURON_INSTANCE=trn2.48xlarge
  PRIMUS_NEURON_DEVICES=16 PRIMUS_NEURON_CORES_PER_DEVICE=8 PRIMUS_NEURON_DEFAULT_LNC=2
  PRIMUS_NEURON_LOGICAL_CORES=64 PRIMUS_NEURON_EFA_DEVICES=16)

@test "validation is the rules engine's: errors name the variable, value and fix (return 2)" {
  check "${TRN1_V[@]}" NEURON_LOGICAL_NC_CONFIG=2
  assert_line rc=2
  [[ $stderr == *"NEURON_LOGICAL_NC_CONFIG"*"trn1 (NeuronCore-v2) has no logical core size other than 1"* ]]
  check "${TRN1_V[@]}" GPUS_PER_NODE=24
  assert_line rc=2
  [[ $stderr == *"Unsupported topology"*"use 16 or 32 cores per node"* ]]
  check "${TRN2_V[@]}" NEURON_CC_FLAGS="--model-type transformer --lnc=1"
  assert_line rc=2
  [[ $stderr == *"NEURON_CC_FLAGS"*"compiles for logical core size 1 but the runtime runs with LNC 2"* ]]
  check "${TRN1_V[@]}" PRIMUS_NEURON_CORES_PER_PROC=2
  assert_line rc=2
  [[ $stderr == *"PRIMUS_NEURON_CORES_PER_PROC"*"XLA_USE_SPMD=1"* ]]
  check "${TRN1_V[@]}" NEURON_RT_VISIBLE_CORES=30-33
  assert_line rc=2
  [[ $stderr == *"names core 33 but this instance has 32 logical NeuronCores"* ]]
}

@test "valid layouts pass: SPMD with 2 cores per process, a user GPUS_PER_NODE below the cores" {
  check "${TRN1_V[@]}" PRIMUS_NEURON_CORES_PER_PROC=2 XLA_USE_SPMD=1
  assert_line rc=0
  check "${TRN1_V[@]}" PRIMUS_NEURON_CORES_PER_PROC=4 PRIMUS_NEURON_SPMD=1 GPUS_PER_NODE=2
  assert_line rc=0
  run clean_bash "${TRN1[@]}" PRIMUS_NEURON_CORES_PER_PROC=4 GPUS_PER_NODE=2 PRIMUS_LOG_LEVEL=ERROR -- \
    "source '$PRIMUS_ENV'; echo \"\$PRIMUS_NEURON_CORE_SLICES\""
  assert_output "0-3 4-7"
}
