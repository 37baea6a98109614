#!/usr/bin/env bats
# primus-env.sh on the fake machines of tests/fixtures/sysfs (issue 5 acceptance):
# exact exported values per machine, detection by the real helpers (one python3
# start from base_env.sh), validation deferred. Expected values are written by
# hand from the fixture trees and the references:
#   mi300x-roce    8x MI300X (0x74a1), bnxt_re0-7 RoCE up (bnxt_re8 down,
#                  mlx5_bond_0 excluded), RoCE v2 IPv4-mapped GID at index 5,
#                  socket interface ens1f0
#   ib-node        8x MI325X (0x74a5), mlx5_0-7,10,11 InfiniBand (mlx5_8 Ethernet
#                  loses to IB, mlx5_9 down), GID default 3, ens8f0
#   trn1.32xlarge  16 Neuron devices x 2 cores, LNC 1 -> 32 logical cores, ens32
#   trn2.48xlarge  16 devices x 8 cores, LNC 2 -> 64 logical cores
#   no-accel       no accelerator, eth0

load layers_helper

# on_machine NAME [VAR=VALUE...]: source primus-env.sh on fixture NAME and dump
# the exported environment to env.dump.
on_machine() {
  local machine=$1
  shift
  run --separate-stderr clean_bash PRIMUS_PYTHON="$VENV_PY" PRIMUS_SYSFS_ROOT="$SYSFS/$machine" \
    PRIMUS_DEV_ROOT="$SYSFS/$machine" PRIMUS_ENV_DEFER_VALIDATION=1 "$@" -- \
    "source '$PRIMUS_ENV'; echo rc=\$?; env -0 >'$BATS_TEST_TMPDIR/env.dump'"
  assert_success
  assert_line rc=0
}

@test "mi300x-roce: RoCE HCAs, GID 5, ens1f0, MI300X layer, ROCm-only tag" {
  on_machine mi300x-roce
  [[ $stderr != *WARN* ]] || fail "unexpected warning: $stderr"
  assert_env PRIMUS_ACCELERATOR rocm
  assert_env PRIMUS_GPU_MODEL MI300X
  assert_env NCCL_IB_HCA bnxt_re0:1,bnxt_re1:1,bnxt_re2:1,bnxt_re3:1,bnxt_re4:1,bnxt_re5:1,bnxt_re6:1,bnxt_re7:1
  assert_env NCCL_IB_GID_INDEX 5
  assert_env IP_INTERFACE ens1f0
  assert_env NCCL_SOCKET_IFNAME ens1f0
  assert_env GLOO_SOCKET_IFNAME ens1f0
  assert_env GPUS_PER_NODE 8
  assert_env HIP_VISIBLE_DEVICES 0,1,2,3,4,5,6,7
  assert_env HSA_XNACK 0
  assert_env GPU_MAX_HEAP_SIZE 100
  assert_env HSA_KERNARG_POOL_SIZE 12582912
  assert_env TORCH_COMPILE_CACHE_KEY_TAG primus-bufops-war-v1
  assert_env HSA_NO_SCRATCH_RECLAIM 1
  refute_env NEURON_LOGICAL_NC_CONFIG
  refute_env XLA_FLAGS
}

@test "ib-node: InfiniBand HCAs, GID default 3, ens8f0, MI325X layer" {
  on_machine ib-node
  assert_env PRIMUS_ACCELERATOR rocm
  assert_env PRIMUS_GPU_MODEL MI325X
  assert_env NCCL_IB_HCA mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_10:1,mlx5_11:1
  assert_env NCCL_IB_GID_INDEX 3
  assert_env NCCL_SOCKET_IFNAME ens8f0
  assert_env GLOO_SOCKET_IFNAME ens8f0
  assert_env HIP_VISIBLE_DEVICES 0,1,2,3,4,5,6,7
  assert_env HSA_XNACK 0
  assert_env HSA_KERNARG_POOL_SIZE 12582912
}

@test "trn1.32xlarge: Neuron layer, LNC 1, 32 processes, no HIP_VISIBLE_DEVICES" {
  on_machine trn1.32xlarge
  assert_env PRIMUS_ACCELERATOR neuron
  assert_env PRIMUS_NEURON_INSTANCE trn1.32xlarge
  assert_env NEURON_LOGICAL_NC_CONFIG 1
  assert_env GPUS_PER_NODE 32
  assert_env NCCL_SOCKET_IFNAME ens32
  # EFA devices are infiniband-class devices, but Neuron does not use NCCL's IB.
  refute_env NCCL_IB_GID_INDEX
  refute_env NCCL_IB_HCA
  assert_env PRIMUS_NEURON_EFA_DEVICES 8
  refute_env HIP_VISIBLE_DEVICES
  refute_env TORCH_COMPILE_CACHE_KEY_TAG
  refute_env NEURON_RT_ROOT_COMM_ID
  refute_env NEURON_RT_EXEC_TIMEOUT
  refute_env FI_PROVIDER
  # One core per process: one single-core slice per local rank.
  assert_env PRIMUS_NEURON_CORE_SLICES "$(seq -s ' ' 0 31)"
}

@test "trn1.32xlarge, --neuron-cores-per-proc 2: 16 processes with disjoint covering slices" {
  on_machine trn1.32xlarge PRIMUS_NEURON_CORES_PER_PROC=2
  assert_env GPUS_PER_NODE 16
  assert_env PRIMUS_NEURON_CORE_SLICES "0-1 2-3 4-5 6-7 8-9 10-11 12-13 14-15 16-17 18-19 20-21 22-23 24-25 26-27 28-29 30-31"
}

@test "trn2.48xlarge: LNC 2, 64 logical cores" {
  on_machine trn2.48xlarge
  assert_env PRIMUS_ACCELERATOR neuron
  assert_env NEURON_LOGICAL_NC_CONFIG 2
  assert_env GPUS_PER_NODE 64
  refute_env HIP_VISIBLE_DEVICES
}

@test "trn2.48xlarge, user LNC 1: 128 logical cores" {
  on_machine trn2.48xlarge NEURON_LOGICAL_NC_CONFIG=1
  assert_env NEURON_LOGICAL_NC_CONFIG 1
  assert_env GPUS_PER_NODE 128
}

@test "no-accel: CPU host, base defaults, eth0, no GPU or Neuron variables" {
  on_machine no-accel
  assert_env PRIMUS_ACCELERATOR cpu
  assert_env NCCL_SOCKET_IFNAME eth0
  assert_env GLOO_SOCKET_IFNAME eth0
  assert_env NCCL_IB_HCA ""
  assert_env NCCL_IB_GID_INDEX 3
  assert_env GPUS_PER_NODE 8
  refute_env HIP_VISIBLE_DEVICES
  refute_env TORCH_COMPILE_CACHE_KEY_TAG
  refute_env HSA_XNACK
  refute_env NEURON_LOGICAL_NC_CONFIG
}

@test "detected values never replace the user's (mi300x-roce)" {
  on_machine mi300x-roce NCCL_IB_HCA=mlx5_9 NCCL_IB_GID_INDEX=1 NCCL_SOCKET_IFNAME=ib9 \
    PRIMUS_GPU_MODEL=MI355X HSA_XNACK=0
  assert_env NCCL_IB_HCA mlx5_9
  assert_env NCCL_IB_GID_INDEX 1
  assert_env NCCL_SOCKET_IFNAME ib9
  assert_env GLOO_SOCKET_IFNAME ib9
  assert_env PRIMUS_GPU_MODEL MI355X
  assert_env HSA_XNACK 0
  assert_env HSA_ENABLE_INTERRUPT 1
  assert_env HSA_KERNARG_POOL_SIZE 8388608
}

@test "PRIMUS_DETECTION_DONE=1: no detection process; the launcher's values are used" {
  on_machine mi300x-roce PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X \
    PRIMUS_PYTHON=/nonexistent/python3
  [ -z "$stderr" ]
  assert_env HSA_XNACK 0
  assert_env NCCL_IB_HCA ""
  refute_env NCCL_SOCKET_IFNAME
}
