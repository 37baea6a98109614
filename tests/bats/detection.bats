#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# Detection wrappers (docs/configuration.md "Detection and rank mapping", 6): get_nccl_ib_hca.sh, get_ip_interface.sh
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
  assert_output "$(printf '%s\n' 'export MASTER_ADDR=gpu017' 'export MASTER_PORT=10224' \
    'export NNODES=4' 'export NODE_RANK=1' 'export GPUS_PER_NODE=8')"
}

@test "ranks refuses a MASTER_ADDR that is not the first node, naming both" {
  SLURM_JOB_ID=7 SLURM_NNODES=4 SLURM_NODELIST='gpu[017-020]' SLURM_NODEID=1 MASTER_ADDR=gpu018 \
    run py ranks
  assert_failure 2
  assert_output --partial "MASTER_ADDR=gpu018"
  assert_output --partial "gpu017"
}

# -- the launch failures caught before the job starts -------------------------
# launch [VAR=VALUE...] -- ARGS...: primus-cli direct on a fake tree, isolated
# from the caller (no ~/.primus.yaml, own workspace), the project's python first.
launch() {
  local -a vars=()
  while (($#)) && [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  mkdir -p "$BATS_TEST_TMPDIR/home" "$BATS_TEST_TMPDIR/dev"
  env -i PATH="$ROOT/.venv/bin:/usr/bin:/bin" HOME="$BATS_TEST_TMPDIR/home" PRIMUS_LOG_COLOR=0 \
    PRIMUS_LOG_TIMESTAMP=0 PRIMUS_WORKSPACE="$BATS_TEST_TMPDIR/ws" PRIMUS_DEV_ROOT="$BATS_TEST_TMPDIR/dev" \
    "${vars[@]}" "$ROOT/runner/primus-cli" direct "$@"
}

@test "bond0 with VLAN children: the launch exports NCCL_SOCKET_IFNAME==bond0 and GLOO bond0" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/bond-vlan" PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X GPUS_PER_NODE=1 \
    MASTER_ADDR=10.20.0.1 NNODES=2 NODE_RANK=0 -- --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "NCCL_SOCKET_IFNAME==bond0 GLOO_SOCKET_IFNAME=bond0"
}

@test "a user GLOO_SOCKET_IFNAME=^docker0 stops the launch (exit 2) naming it, on a CPU launch too" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/bond-vlan" PRIMUS_ACCELERATOR=cpu GPUS_PER_NODE=1 \
    GLOO_SOCKET_IFNAME='^docker0' -- --dry-run --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "ERROR GLOO_SOCKET_IFNAME='^docker0': uses NCCL's ^/= syntax, which Gloo does not parse"
  assert_output --partial "Fix: export GLOO_SOCKET_IFNAME=bond0"
}

@test "an exclusion list leaving only loopback stops the launch (exit 2)" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/no-accel" PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X GPUS_PER_NODE=1 \
    NCCL_SOCKET_IFNAME='^eth,virbr' -- --dry-run --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "ERROR NCCL_SOCKET_IFNAME='^eth,virbr': leaves only loopback on this host"
}

@test "user NCCL_IB_HCA and NCCL_IB_GID_INDEX naming nothing here stop the launch (exit 2) with the fix" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/roce-linklocal" PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X GPUS_PER_NODE=1 \
    NCCL_IB_HCA=mlx5_7 -- --dry-run --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "ERROR NCCL_IB_HCA='mlx5_7': names mlx5_7, which matches no RDMA device/port of this host (ports here: mlx5_0:1, mlx5_1:1). Fix: export NCCL_IB_HCA=mlx5_0:1"
  run launch PRIMUS_SYSFS_ROOT="$FIX/roce-linklocal" PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X GPUS_PER_NODE=1 \
    NCCL_IB_GID_INDEX=1 -- --dry-run --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "ERROR NCCL_IB_GID_INDEX='1': points at no routable GID on this host's RoCE ports (mlx5_0:1: RoCE v2 link-local)"
  assert_output --partial "Fix: export NCCL_IB_GID_INDEX=3 (the RoCE v2 IPv4 GID here)"
}

@test "link-local-only RoCE port is dropped and the reason reaches the launch output as WARN" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/roce-linklocal" PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X GPUS_PER_NODE=1 \
    -- --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "[WARN] detection: RDMA port mlx5_1:1 left out of NCCL_IB_HCA: RoCE port with only link-local fe80:: GIDs"
  assert_output --partial "NCCL_IB_HCA=mlx5_0:1 NCCL_IB_GID_INDEX=3"
}

@test "mixed mlx5/bnxt: NCCL_IB_GID_INDEX=-1 with NCCL_IB_ADDR_FAMILY=AF_INET, and the note as WARN" {
  run "$ROOT/.venv/bin/python" -m primus_runner nics --sysfs-root "$FIX/mixed-mlx5-bnxt" --format shell
  assert_success
  assert_line "export NCCL_IB_GID_INDEX=-1"
  assert_line "export NCCL_IB_ADDR_FAMILY=AF_INET"
  assert_line "export NCCL_IB_ROCE_VERSION_NUM=2"
  run launch PRIMUS_SYSFS_ROOT="$FIX/mixed-mlx5-bnxt" PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X GPUS_PER_NODE=1 \
    -- --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "[WARN] detection: the RoCE v2 IPv4 GID sits at different indexes on this host's chosen ports (bnxt_re0:1=5, bnxt_re1:1=5, mlx5_0:1=3, mlx5_1:1=3)"
}

@test "equal-cost duplicate routes: eth0 is chosen and the WARN names eth0 and eth1" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/dup-routes" PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X GPUS_PER_NODE=1 \
    MASTER_ADDR=10.0.0.1 NNODES=2 NODE_RANK=0 -- --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "[WARN] detection: equal-cost routes to MASTER_ADDR 10.0.0.1 (subnet 10.0.0.0/24, metric 0) on eth0 and eth1"
  assert_output --partial "NCCL_SOCKET_IFNAME=eth0 GLOO_SOCKET_IFNAME=eth0"
}

@test "MASTER_ADDR that node 1 cannot resolve: exit 2 naming it, nothing started" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/dup-routes" PRIMUS_ACCELERATOR=cpu GPUS_PER_NODE=1 \
    MASTER_ADDR=node-zero NNODES=2 NODE_RANK=1 -- --dry-run --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "MASTER_ADDR='node-zero': does not resolve on this node (NODE_RANK 1)"
}

@test "exported PET_RDZV_BACKEND is refused (exit 2) with the fix; PRIMUS_ELASTIC=1 honours it" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/no-accel" PRIMUS_ACCELERATOR=cpu GPUS_PER_NODE=1 MASTER_ADDR=127.0.0.1 \
    NNODES=2 NODE_RANK=0 PET_RDZV_BACKEND=c10d -- --dry-run --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "PET_RDZV_BACKEND='c10d': is exported: torchrun reads PET_* variables as its defaults"
  assert_output --partial "Fix: unset PET_RDZV_BACKEND"
  run launch PRIMUS_SYSFS_ROOT="$FIX/no-accel" PRIMUS_ACCELERATOR=cpu GPUS_PER_NODE=1 MASTER_ADDR=127.0.0.1 \
    NNODES=2 NODE_RANK=0 PET_RDZV_BACKEND=c10d PRIMUS_ELASTIC=1 -- --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "[WARN] detection: PRIMUS_ELASTIC=1: torchrun uses the exported elastic rendezvous"
}

@test "a PyTorchJob v1 pod (RANK/WORLD_SIZE, no PET_*) maps to --nnodes and --node_rank" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/no-accel" PRIMUS_ACCELERATOR=cpu GPUS_PER_NODE=1 KUBERNETES_SERVICE_HOST=10.96.0.1 \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=23456 WORLD_SIZE=3 RANK=2 -- --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "--nnodes 3 --node_rank 2 --master_addr 127.0.0.1 --master_port 23456"
}

@test "two Slurm steps of one job get different ports, the same on every node of a step" {
  local step node
  for step in 0 1; do
    for node in 0 1; do
      SLURM_JOB_ID=4242 SLURM_STEP_ID=$step SLURM_NNODES=2 SLURM_NODELIST='gpu[1-2]' \
        SLURM_NODEID=$node run py ranks --format shell
      assert_success
      assert_line "export MASTER_PORT=$((31904 + 2 * step))"    # 10000 + 2*((16*4242+step) mod 11384)
    done
  done
}

@test "ROCR_VISIBLE_DEVICES=4,5,6,7: 4 processes, no HIP_VISIBLE_DEVICES added" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/mi300x-roce" ROCR_VISIBLE_DEVICES=4,5,6,7 \
    -- --dry-run --module primus_runner -- preflight
  assert_success
  assert_output --partial "--nproc_per_node 4 "
  refute_output --partial "HIP_VISIBLE_DEVICES="
}

@test "HIP indices beyond the ROCR list stop the launch (exit 2) with the fix" {
  run launch PRIMUS_SYSFS_ROOT="$FIX/mi300x-roce" ROCR_VISIBLE_DEVICES=4,5,6,7 \
    HIP_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 -- --dry-run --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "ERROR HIP_VISIBLE_DEVICES='0,1,2,3,4,5,6,7': indexes the 4 GPU(s) left after ROCR_VISIBLE_DEVICES=4,5,6,7"
  assert_output --partial "Fix: unset HIP_VISIBLE_DEVICES (ROCR_VISIBLE_DEVICES already chooses the GPUs), or list indices 0-3"
}

@test "--single: OMP_NUM_THREADS=1 by default, a user value kept; srun-native per-task mask gives LOCAL_RANK 0" {
  mkdir -p "$BATS_TEST_TMPDIR/out"
  # Task 3 of an srun-native step alone (no task 0 to run the cluster check
  # with): its Slurm ids stand (RANK=3, WORLD_SIZE=8), the mask makes LOCAL_RANK 0.
  run launch PRIMUS_SYSFS_ROOT="$FIX/mi300x-roce" ROCR_VISIBLE_DEVICES=3 PRIMUS_SRUN_NATIVE=1 \
    RANK=3 LOCAL_RANK=3 WORLD_SIZE=8 LOCAL_WORLD_SIZE=8 PRIMUS_CLUSTER_CHECK=0 \
    -- --single --script "$ROOT/tests/fixtures/workloads/print_env.py" -- "$BATS_TEST_TMPDIR/out" \
    OMP_NUM_THREADS LOCAL_RANK HIP_VISIBLE_DEVICES WORLD_SIZE
  assert_success
  assert_output --partial "[WARN] detection: srun-native task with LOCAL_RANK 3 of 8 has a per-task GPU mask (ROCR_VISIBLE_DEVICES=3: 1 GPU(s) visible); LOCAL_RANK=0"
  [[ $(<"$BATS_TEST_TMPDIR/out/OMP_NUM_THREADS.3") == 1 ]]
  [[ $(<"$BATS_TEST_TMPDIR/out/LOCAL_RANK.3") == 0 ]]
  [[ $(<"$BATS_TEST_TMPDIR/out/WORLD_SIZE.3") == 8 ]]
  [[ $(<"$BATS_TEST_TMPDIR/out/HIP_VISIBLE_DEVICES.3") == "<unset>" ]]
  run launch PRIMUS_SYSFS_ROOT="$FIX/no-accel" PRIMUS_ACCELERATOR=cpu OMP_NUM_THREADS=6 \
    -- --single --script "$ROOT/tests/fixtures/workloads/print_env.py" -- "$BATS_TEST_TMPDIR/out" OMP_NUM_THREADS
  assert_success
  [[ $(<"$BATS_TEST_TMPDIR/out/OMP_NUM_THREADS.0") == 6 ]]
}
