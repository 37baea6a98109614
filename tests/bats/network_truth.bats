#!/usr/bin/env bats
# Network truth on fake host trees (tests/fixtures/sysfs): an IPv6-only RoCE fabric is
# detected, and a user value naming a DOWN port, a prefix that matches VLANs too, or a
# GID that cannot route gets one verdict from env check, the launch and the doctor
# (rules nic_values_on_host and nccl_ifname_prefix_overlap).

load "$BATS_TEST_DIRNAME/../../node_modules/bats-support/load"
load "$BATS_TEST_DIRNAME/../../node_modules/bats-assert/load"

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
FIX="$ROOT/tests/fixtures/sysfs"

# cli [VAR=VALUE...] -- ARGS...: primus-cli on a fake tree, isolated from the caller
# (no ~/.primus.yaml, own workspace), the project's python first.
cli() {
  local -a vars=()
  while (($#)) && [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  mkdir -p "$BATS_TEST_TMPDIR/home" "$BATS_TEST_TMPDIR/dev"
  env -i PATH="$ROOT/.venv/bin:/usr/bin:/bin" HOME="$BATS_TEST_TMPDIR/home" PRIMUS_LOG_COLOR=0 \
    PRIMUS_LOG_TIMESTAMP=0 PRIMUS_WORKSPACE="$BATS_TEST_TMPDIR/ws" PRIMUS_DEV_ROOT="$BATS_TEST_TMPDIR/dev" \
    PRIMUS_ACCELERATOR=rocm PRIMUS_GPU_MODEL=MI300X GPUS_PER_NODE=1 \
    "${vars[@]}" "$ROOT/runner/primus-cli" "$@"
}

DRY=(direct --dry-run --module primus_runner -- preflight)

@test "IPv6-only RoCE ports: the launch exports a non-empty NCCL_IB_HCA and the IPv6 global GID index" {
  run cli PRIMUS_SYSFS_ROOT="$FIX/roce-ipv6" -- "${DRY[@]}"
  assert_success
  assert_output --partial "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 NCCL_IB_GID_INDEX=3"
}

@test "a user NCCL_IB_GID_INDEX pointing at a link-local GID: exit 2 from env check and the launch" {
  run cli PRIMUS_SYSFS_ROOT="$FIX/roce-ipv6" NCCL_IB_GID_INDEX=1 -- env check
  assert_failure 2
  assert_output --partial "NCCL_IB_GID_INDEX='1': points at no routable GID on this host's RoCE ports (mlx5_0:1: RoCE v2 link-local"
  assert_output --partial "export NCCL_IB_GID_INDEX=3 (the RoCE v2 IPv6 GID here)"
  run cli PRIMUS_SYSFS_ROOT="$FIX/roce-ipv6" NCCL_IB_GID_INDEX=1 -- "${DRY[@]}"
  assert_failure 2
  assert_output --partial "ERROR NCCL_IB_GID_INDEX='1': points at no routable GID"
}

@test "a user NCCL_IB_HCA naming a DOWN port: exit 2 from env check and the launch, fail in the doctor" {
  local why="NCCL_IB_HCA='mlx5_4:1': names port(s) that are not ACTIVE: mlx5_4:1 (DOWN, Disabled)"
  run cli PRIMUS_SYSFS_ROOT="$FIX/roce-ipv6" NCCL_IB_HCA=mlx5_4:1 -- env check
  assert_failure 2
  assert_output --partial "$why"
  assert_output --partial "export NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 (the ACTIVE ports here)"
  run cli PRIMUS_SYSFS_ROOT="$FIX/roce-ipv6" NCCL_IB_HCA=mlx5_4:1 -- "${DRY[@]}"
  assert_failure 2
  assert_output --partial "ERROR $why"
  run cli PRIMUS_SYSFS_ROOT="$FIX/roce-ipv6" NCCL_IB_HCA=mlx5_4:1 -- doctor
  assert_failure 3
  assert_line --regexp "^fail +launch verdict .*mlx5_4:1 \(DOWN, Disabled\)"
  assert_line --regexp "^fail +RDMA ports .*mlx5_4:1 \(DOWN, Disabled\)"
}

@test "a user NCCL_SOCKET_IFNAME=bond0 beside bond0.2093 and bond0.2093.1: exit 2 naming =bond0" {
  local why="NCCL_SOCKET_IFNAME='bond0': matches interface-name prefixes, not names: 'bond0' also selects bond0.2093, bond0.2093.1"
  run cli PRIMUS_SYSFS_ROOT="$FIX/bond-vlan" NCCL_SOCKET_IFNAME=bond0 -- env check
  assert_failure 2
  assert_output --partial "$why"
  assert_output --partial "export NCCL_SOCKET_IFNAME==bond0"
  run cli PRIMUS_SYSFS_ROOT="$FIX/bond-vlan" NCCL_SOCKET_IFNAME=bond0 -- "${DRY[@]}"
  assert_failure 2
  assert_output --partial "ERROR $why"
  run cli PRIMUS_SYSFS_ROOT="$FIX/bond-vlan" NCCL_SOCKET_IFNAME=bond0 -- doctor
  assert_failure 3
  assert_line --regexp "^fail +network interfaces .*bond0.2093"
  run cli PRIMUS_SYSFS_ROOT="$FIX/bond-vlan" NCCL_SOCKET_IFNAME==bond0 -- "${DRY[@]}"
  assert_success
}
