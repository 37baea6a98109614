#!/usr/bin/env bats
# Two "nodes" on one machine: two primus-cli direct processes running the
# embedded preflight across 4 ranks (gloo over loopback).

setup() {
  load helpers/launcher
  launcher_setup
  export NNODES=2 MASTER_ADDR=127.0.0.1 GPUS_PER_NODE=2 MASTER_PORT
  MASTER_PORT=$(free_port)
}

teardown() {
  launcher_teardown
}

# run_two_nodes [VAR_NODE0 VAR_NODE1]: start node 1 in the background and
# node 0 in the foreground; sets STATUS0/STATUS1 and files node0.out/node1.out.
run_two_nodes() {
  env NODE_RANK=1 ${2:+"$2"} "$PRIMUS_CLI" direct --module primus_runner -- preflight >node1.out 2>&1 &
  local node1=$!
  STATUS0=0
  env NODE_RANK=0 ${1:+"$1"} timeout 240 "$PRIMUS_CLI" direct --module primus_runner -- preflight >node0.out 2>&1 || STATUS0=$?
  STATUS1=0
  wait "$node1" || STATUS1=$?
}

@test "two nodes x 2 processes: preflight passes on both with world size 4" {
  run_two_nodes
  cat node0.out node1.out
  [[ $STATUS0 -eq 0 && $STATUS1 -eq 0 ]]
  grep -q "\[preflight\] OK: world size 4" node0.out
  # rank 0 reports every rank with its local rank and backend
  for rank in 0 1 2 3; do
    grep -Eq "^.*\s+$rank\s+[01]\s+4\s+gloo\s" node0.out
  done
}

@test "NCCL_IB_GID_INDEX differing between nodes fails both nodes, naming it" {
  run_two_nodes NCCL_IB_GID_INDEX=3 NCCL_IB_GID_INDEX=1
  cat node0.out node1.out
  [[ $STATUS0 -ne 0 && $STATUS1 -ne 0 ]]
  grep -q "NCCL_IB_GID_INDEX differs between ranks: '3' on ranks 0-1; '1' on ranks 2-3" node0.out
  grep -q "NCCL_IB_GID_INDEX differs between ranks" node1.out
}
