#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# Detection wrappers (SPEC sections 5, 6): get_nccl_ib_hca.sh, get_ip_interface.sh
# and the hostlist / ranks / nics / devices commands as the shell calls them.
# Expected values are written by hand from the fixtures' design.

load "$BATS_TEST_DIRNAME/../../node_modules/bats-support/load"
load "$BATS_TEST_DIRNAME/../../node_modules/bats-assert/load"

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
ENVS="$ROOT/runner/helpers/envs"
FIX="$ROOT/tests/fixtures/sysfs"

setup() {
  export PRIMUS_LOG_COLOR=0 PRIMUS_LOG_TIMESTAMP=0
  unset PRIMUS_SYSFS_ROOT PRIMUS_DEV_ROOT PRIMUS_IB_HCA_EXCLUDE PRIMUS_SOCKET_IFNAME_EXCLUDE
  unset NCCL_IB_HCA NCCL_IB_GID_INDEX IP_INTERFACE NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME
  unset MASTER_ADDR MASTER_PORT NNODES NODE_RANK GPUS_PER_NODE PRIMUS_ACCELERATOR
  unset PRIMUS_GPU_MODEL PRIMUS_NEURON_INSTANCE NEURON_LOGICAL_NC_CONFIG PRIMUS_SLURM_FIRST_HOST
  local name
  for name in "${!SLURM_@}" "${!OMPI_@}" "${!PMIX_@}" "${!PET_@}"; do unset "$name"; done
  unset JOB_COMPLETION_INDEX
}

py() { PYTHONPATH="$ROOT/python" "$ROOT/.venv/bin/python" -m primus_runner "$@"; }

@test "get_nccl_ib_hca.sh prints the active RoCE ports, not the down or bonded ones" {
  run "$ENVS/get_nccl_ib_hca.sh" --sysfs-root "$FIX/mi300x-roce"
  assert_success
  assert_output "bnxt_re0:1,bnxt_re1:1,bnxt_re2:1,bnxt_re3:1,bnxt_re4:1,bnxt_re5:1,bnxt_re6:1,bnxt_re7:1"
}

@test "get_nccl_ib_hca.sh reads PRIMUS_SYSFS_ROOT and honours the exclusion pattern" {
  PRIMUS_SYSFS_ROOT="$FIX/ib-node" PRIMUS_IB_HCA_EXCLUDE='bond|^mlx5_1[01]$' run "$ENVS/get_nccl_ib_hca.sh"
  assert_success
  assert_output "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1"
}

@test "get_nccl_ib_hca.sh prints an empty line on a host without RDMA, and keeps a user value" {
  run "$ENVS/get_nccl_ib_hca.sh" --sysfs-root="$FIX/trn1.32xlarge"
  assert_success
  assert_output ""
  NCCL_IB_HCA='mlx5_0:1' run "$ENVS/get_nccl_ib_hca.sh" --sysfs-root "$FIX/mi300x-roce"
  assert_output "mlx5_0:1"
}

@test "get_ip_interface.sh picks the interface holding the address exactly (10.0.0.1, not 10.0.0.10)" {
  run "$ENVS/get_ip_interface.sh" --sysfs-root "$FIX/ib-node" --master-addr 10.0.0.1
  assert_success
  assert_output "ens8f0"
  MASTER_ADDR=10.0.0.12 run "$ENVS/get_ip_interface.sh" --sysfs-root "$FIX/ib-node"
  assert_output "eno1"
  run "$ENVS/get_ip_interface.sh" --sysfs-root "$FIX/no-accel"
  assert_output "eth0"
}

@test "get_ip_interface.sh keeps a user IP_INTERFACE" {
  IP_INTERFACE=bond0 run "$ENVS/get_ip_interface.sh" --sysfs-root "$FIX/mi300x-roce"
  assert_success
  assert_output "bond0"
}

@test "the wrappers answer --help and refuse unknown arguments with exit 2" {
  run "$ENVS/get_nccl_ib_hca.sh" --help
  assert_success
  assert_output --partial "Usage:"
  run "$ENVS/get_ip_interface.sh" -h
  assert_success
  assert_output --partial "--master-addr HOST"
  run "$ENVS/get_ip_interface.sh" --frobnicate
  assert_failure 2
  assert_output --partial "unknown argument '--frobnicate'"
  run "$ENVS/get_nccl_ib_hca.sh" --sysfs-root
  assert_failure 2
}

@test "a missing sysfs root is an error naming it" {
  run "$ENVS/get_nccl_ib_hca.sh" --sysfs-root /nonexistent/tree
  assert_failure 2
  assert_output --partial "'/nonexistent/tree' is not a directory"
}

@test "the wrappers run for real on this machine" {
  run "$ENVS/get_ip_interface.sh"
  assert_success
  refute_output "lo"
  run "$ENVS/get_nccl_ib_hca.sh"
  assert_success
}

@test "nics --format nul gives NAME/VALUE records the launcher reads without eval" {
  run bash -c 'source "$1/runner/lib/common.sh"; primus_read_nul_exports < <(PYTHONPATH="$1/python" "$1/.venv/bin/python" -m primus_runner nics --sysfs-root "$2" --format nul); printf "%s|%s|%s\n" "$NCCL_IB_GID_INDEX" "$IP_INTERFACE" "$GLOO_SOCKET_IFNAME"' _ "$ROOT" "$FIX/mi300x-roce"
  assert_success
  assert_output "5|ens1f0|ens1f0"
}

@test "devices --format shell on each Neuron fixture" {
  run py devices --sysfs-root "$FIX/trn1.32xlarge" --dev-root "$FIX/trn1.32xlarge" --format shell
  assert_success
  assert_line "export PRIMUS_NEURON_LOGICAL_CORES=32"
  assert_line "export PRIMUS_NEURON_DEFAULT_LNC=1"
  PRIMUS_SYSFS_ROOT="$FIX/trn2.48xlarge" PRIMUS_DEV_ROOT="$FIX/trn2.48xlarge" run py devices --format shell
  assert_line "export PRIMUS_NEURON_LOGICAL_CORES=64"
  assert_line "export PRIMUS_NEURON_DEFAULT_LNC=2"
  run py devices --sysfs-root "$FIX/inf2" --dev-root "$FIX/inf2" --format shell
  assert_line "export PRIMUS_NEURON_INSTANCE=inf2.24xlarge"
  assert_line "export PRIMUS_NEURON_DEVICES=6"
}

@test "hostlist expand and compress from the shell, values never executed" {
  run py hostlist expand 'r[1-2]n[08-10]-ib'
  assert_success
  assert_output "$(printf '%s\n' r1n08-ib r1n09-ib r1n10-ib r2n08-ib r2n09-ib r2n10-ib)"
  run py hostlist compress n001 n002 n003 n007
  assert_output "n[001-003,007]"
  run py hostlist expand 'n[1-2],$(touch /tmp/pwned-by-hostlist)'
  assert_failure 2
  assert_output --partial "character '\$' not allowed in a host name in '\$(touch'"
  [[ ! -e /tmp/pwned-by-hostlist ]]
}

@test "ranks maps a Slurm step with 8 tasks per node by SLURM_NODEID" {
  SLURM_JOB_ID=7 SLURM_NNODES=4 SLURM_NODELIST='gpu[017-020]' SLURM_NODEID=1 SLURM_PROCID=13 \
    SLURM_TASKS_PER_NODE='8(x4)' run py ranks --format shell
  assert_success
  assert_output "$(printf '%s\n' 'export MASTER_ADDR=gpu017' 'export MASTER_PORT=1234' \
    'export NNODES=4' 'export NODE_RANK=1' 'export GPUS_PER_NODE=8')"
}

@test "ranks refuses a MASTER_ADDR that is not the first node, naming both" {
  SLURM_JOB_ID=7 SLURM_NNODES=4 SLURM_NODELIST='gpu[017-020]' SLURM_NODEID=1 MASTER_ADDR=gpu018 \
    run py ranks
  assert_failure 2
  assert_output --partial "MASTER_ADDR=gpu018"
  assert_output --partial "gpu017"
}
