#!/usr/bin/env bats
# primus-env.sh on the fake machines of tests/fixtures/sysfs (acceptance):
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
#   mi355x-roce    a copy of mi300x-roce made in the test with gfx_target_version
#                  90500 (gfx950 -> MI355X)
# GPU-model layers and base defaults: upstream AMD-AGI/Primus@fd1eeabb runner/helpers/envs/.

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

# assert_base_defaults: the reference launcher's base_env.sh defaults (sheet 7).
assert_base_defaults() {
  assert_env NCCL_CHECKS_DISABLE 1
  assert_env RCCL_MSCCLPP_ENABLE 0
  assert_env RCCL_MSCCLPP_FORCE_ENABLE 0
  assert_env MSCCLPP_DISABLE_CHANNEL_CACHE FALSE
  assert_env GPU_MAX_HW_QUEUES 2
  assert_env NVTE_USE_CAST_TRANSPOSE_TRITON 1
  assert_env NVTE_USE_OPTIMIZED_HIPIFIED_CAST_TRANSPOSE 0
  assert_env PRIMUS_TURBO_ATTN_V3_ATOMIC_FP32 0
  assert_env NVTE_DEBUG 0
  assert_env NVTE_DEBUG_LEVEL 0
  assert_env NVTE_FUSED_ATTN_LOG_CONFIG 0
  assert_env PRIMUS_TURBO_DEEPEP_TIMEOUT 600
  assert_env HSA_NO_SCRATCH_RECLAIM 1
  assert_env NCCL_PXN_DISABLE 1
}

# refute_invented: what our old GPU-model layers set and the reference's do not.
refute_invented() {
  refute_env HSA_XNACK
  refute_env GPU_MAX_HEAP_SIZE
  refute_env HSA_KERNARG_POOL_SIZE
  refute_env HSA_ENABLE_INTERRUPT
  refute_env TORCH_COMPILE_CACHE_KEY_TAG
}

@test "mi300x-roce: RoCE HCAs, GID 5, ens1f0, MI300X layer exports nothing (sheet 6)" {
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
  assert_base_defaults
  refute_invented
  refute_env RCCL_WARP_SPEED_AUTO
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
  assert_base_defaults
  refute_invented
  refute_env RCCL_WARP_SPEED_AUTO
}

@test "mi355x-roce: gfx950 detected as MI355X; the layer exports only RCCL_WARP_SPEED_AUTO=0 (sheet 6)" {
  local fx=$BATS_TEST_TMPDIR/sysfs
  mkdir -p "$fx"
  cp -a "$SYSFS/mi300x-roce" "$fx/mi355x-roce"
  local props
  for props in "$fx"/mi355x-roce/sys/class/kfd/kfd/topology/nodes/*/properties; do
    # gfx950 and no device id: the model comes from the gfx family alone.
    sed -i -e "s/^gfx_target_version 90402$/gfx_target_version 90500/" -e "/^device_id /d" "$props"
  done
  SYSFS=$fx on_machine mi355x-roce
  assert_env PRIMUS_GPU_MODEL MI355X
  assert_env RCCL_WARP_SPEED_AUTO 0
  assert_env NCCL_IB_GID_INDEX 5
  assert_base_defaults
  refute_invented
  SYSFS=$fx on_machine mi355x-roce RCCL_WARP_SPEED_AUTO=1
  assert_env RCCL_WARP_SPEED_AUTO 1
}

@test "env explain RCCL_WARP_SPEED_AUTO names the MI355X layer and its source" {
  run env PYTHONPATH="$REPO_ROOT/python" "$VENV_PY" -m primus_runner env explain RCCL_WARP_SPEED_AUTO
  assert_success
  assert_line --partial "runner/helpers/envs/MI355X.sh (default 0"
  assert_line --regexp '^  source: +AMD-AGI/Primus@fd1eeabb runner/helpers/envs/primus-env.sh \(GPU-model layer\)$'
}

@test "LD_LIBRARY_PATH: the ROCm lib directory first, duplicates dropped; absent ROCm changes nothing" {
  mkdir -p "$BATS_TEST_TMPDIR/rocm/lib"
  on_machine mi300x-roce ROCM_HOME="$BATS_TEST_TMPDIR/rocm" LD_LIBRARY_PATH="/a:$BATS_TEST_TMPDIR/rocm/lib:/b:/a"
  assert_env LD_LIBRARY_PATH "$BATS_TEST_TMPDIR/rocm/lib:/a:/b"
  on_machine mi300x-roce ROCM_HOME="$BATS_TEST_TMPDIR/none" LD_LIBRARY_PATH=/a
  assert_env LD_LIBRARY_PATH /a
}

@test "base defaults: a value the user exported is kept" {
  on_machine mi300x-roce GPU_MAX_HW_QUEUES=4 NCCL_CHECKS_DISABLE=0 MSCCLPP_DISABLE_CHANNEL_CACHE=TRUE
  assert_env GPU_MAX_HW_QUEUES 4
  assert_env NCCL_CHECKS_DISABLE 0
  assert_env MSCCLPP_DISABLE_CHANNEL_CACHE TRUE
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
  refute_env NCCL_IB_HCA # never exported empty
  assert_env NCCL_IB_GID_INDEX 3
  # No accelerator: one process by default, not the GPU default of 8.
  assert_env GPUS_PER_NODE 1
  refute_env HIP_VISIBLE_DEVICES
  refute_invented
  refute_env NEURON_LOGICAL_NC_CONFIG
}

@test "detected values never replace the user's (mi300x-roce)" {
  on_machine mi300x-roce NCCL_IB_HCA=mlx5_9 NCCL_IB_GID_INDEX=1 NCCL_SOCKET_IFNAME=ib9 \
    PRIMUS_GPU_MODEL=MI355X RCCL_WARP_SPEED_AUTO=1
  assert_env NCCL_IB_HCA mlx5_9
  assert_env NCCL_IB_GID_INDEX 1
  assert_env NCCL_SOCKET_IFNAME ib9
  # Gloo gets the chosen interface, never a copy of NCCL's value (ib9 is not an interface here)
  assert_env GLOO_SOCKET_IFNAME ens1f0
  assert_env PRIMUS_GPU_MODEL MI355X
  assert_env RCCL_WARP_SPEED_AUTO 1
}

@test "PRIMUS_DETECTION_DONE=1: no detection process; the launcher's values are used" {
  on_machine mi300x-roce PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X \
    PRIMUS_PYTHON=/nonexistent/python3
  # No detection helper was needed: no warning or error (INFO lines are on stderr).
  [[ $stderr != *"[WARN]"* && $stderr != *"[ERROR]"* ]]
  assert_env GPU_MAX_HW_QUEUES 2
  refute_env NCCL_IB_HCA # never exported empty
  refute_env NCCL_SOCKET_IFNAME
}
