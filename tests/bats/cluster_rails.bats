#!/usr/bin/env bats
# Two "nodes" on one machine, each on its own copy of the IPv6-only RoCE tree
# (tests/fixtures/sysfs/roce-ipv6): when one node's RDMA port is down its detected
# NCCL_IB_HCA is one port shorter, and the cluster check of the launch
# (python/primus_runner/cluster/meanings.py) refuses before anything starts,
# naming that node and the port it left out.

setup() {
  load helpers/launcher
  launcher_setup
  export NNODES=2 MASTER_ADDR=127.0.0.1 MASTER_PORT PRIMUS_CLUSTER_CHECK_PORT
  MASTER_PORT=$(free_port)
  PRIMUS_CLUSTER_CHECK_PORT=$(free_port)
  local node
  for node in a b; do
    cp -r "$REPO_ROOT/tests/fixtures/sysfs/roce-ipv6" "$TEST_DIR/node-$node"
  done
}

teardown() {
  launcher_teardown
}

# run_two_nodes: node 1 (tree node-b) in the background, node 0 (node-a) in the
# foreground; sets STATUS0/STATUS1 and the files node0.out/node1.out.
run_two_nodes() {
  local -a common=(PRIMUS_ACCELERATOR=cpu GPUS_PER_NODE=1 GLOO_SOCKET_IFNAME=lo)
  env NODE_RANK=1 "${common[@]}" PRIMUS_SYSFS_ROOT="$TEST_DIR/node-b" \
    "$PRIMUS_CLI" direct --module primus_runner -- preflight >node1.out 2>&1 &
  local node1=$!
  STATUS0=0
  env NODE_RANK=0 "${common[@]}" PRIMUS_SYSFS_ROOT="$TEST_DIR/node-a" \
    timeout 240 "$PRIMUS_CLI" direct --module primus_runner -- preflight >node0.out 2>&1 || STATUS0=$?
  STATUS1=0
  wait "$node1" || STATUS1=$?
}

@test "one node with an HCA port down: the launch refuses on both nodes, naming that node and the port" {
  # All ports up: the nodes agree and preflight runs (no false finding).
  run_two_nodes
  cat node0.out node1.out
  [[ $STATUS0 -eq 0 && $STATUS1 -eq 0 ]]
  grep -q "cluster check: 2 nodes agree on" node0.out
  grep -q "\[preflight\] OK: world size 2" node0.out
  # mlx5_1 down on node 1 only: its detected NCCL_IB_HCA is one port shorter.
  echo "1: DOWN" >"$TEST_DIR/node-b/sys/class/infiniband/mlx5_1/ports/1/state"
  MASTER_PORT=$(free_port) PRIMUS_CLUSTER_CHECK_PORT=$(free_port) run_two_nodes
  cat node0.out node1.out
  [[ $STATUS0 -eq 2 && $STATUS1 -eq 2 ]]
  for out in node0.out node1.out; do
    grep -q "NCCL_IB_HCA means different things on different nodes: '2 ACTIVE port(s), link layer Ethernet' on node 0 (.*); '1 ACTIVE port(s), link layer Ethernet' on node 1 (.*)" "$out"
    grep -q "Odd node: 1 ([^)]*: left out mlx5_1:1 state DOWN)" "$out"
    refute grep -q "\[preflight\]" "$out"
  done
}
