#!/usr/bin/env bats
# Two "nodes" on one machine: two primus-cli direct processes running the
# embedded preflight (or train) across 2-4 ranks (gloo over loopback), each on
# its own fake sysfs tree where the scenario needs one. The launcher's cluster
# check (python/primus_runner/cluster/clustercheck.py) runs before the workload on
# every multi-node launch.

setup() {
  load helpers/launcher
  launcher_setup
  export NNODES=2 MASTER_ADDR=127.0.0.1 GPUS_PER_NODE=2 MASTER_PORT
  MASTER_PORT=$(free_port)
  # its own free port: MASTER_PORT + 1 (the default) may be taken on a shared machine
  export PRIMUS_CLUSTER_CHECK_PORT
  PRIMUS_CLUSTER_CHECK_PORT=$(free_port)
  FIX=$REPO_ROOT/tests/fixtures/sysfs
}

teardown() {
  launcher_teardown
}

# run_two_nodes "NODE0 VARS" "NODE1 VARS" [WORKLOAD...]: start node 1 in the
# background and node 0 in the foreground (each VARS a space-separated list of
# NAME=VALUE words); sets STATUS0/STATUS1 and files node0.out/node1.out.
run_two_nodes() {
  local -a vars0 vars1 workload=("${@:3}")
  read -r -a vars0 <<<"$1"
  read -r -a vars1 <<<"$2"
  ((${#workload[@]})) || workload=(preflight)
  env NODE_RANK=1 "${vars1[@]}" "$PRIMUS_CLI" direct --module primus_runner -- "${workload[@]}" >node1.out 2>&1 &
  local node1=$!
  STATUS0=0
  env NODE_RANK=0 "${vars0[@]}" timeout 240 "$PRIMUS_CLI" direct --module primus_runner -- "${workload[@]}" >node0.out 2>&1 || STATUS0=$?
  STATUS1=0
  wait "$node1" || STATUS1=$?
}

# Fake RoCE hosts: node-a (eno1, RoCE v2 IPv4 GID at 3), node-b (eth0, at 7).
# Gloo itself must use this machine's loopback; GPUs are not used (cpu).
ROCE="PRIMUS_ACCELERATOR=cpu GPUS_PER_NODE=1 GLOO_SOCKET_IFNAME=lo"

@test "two nodes x 2 processes: preflight passes on both with world size 4" {
  run_two_nodes "" ""
  cat node0.out node1.out
  [[ $STATUS0 -eq 0 && $STATUS1 -eq 0 ]]
  grep -q "\[preflight\] OK: world size 4" node0.out
  grep -q "cluster check: 2 nodes agree on" node0.out
  grep -q "cluster check: 2 nodes agree on" node1.out
  for rank in 0 1 2 3; do
    grep -Eq "^.*\s+$rank\s+[01]\s+4\s+gloo\s" node0.out
  done
}

@test "nodes differing only in per-node values (eno1 vs eth0, GID index 3 vs 7) pass" {
  # What each node detects on its own tree: different names and indexes ...
  run env -u NCCL_SOCKET_IFNAME "$REPO_ROOT/.venv/bin/python" -m primus_runner nics \
    --sysfs-root "$FIX/eno1-gid3" --format shell
  assert_line "export NCCL_SOCKET_IFNAME=eno1"
  assert_line "export NCCL_IB_GID_INDEX=3"
  run "$REPO_ROOT/.venv/bin/python" -m primus_runner nics --sysfs-root "$FIX/eth0-gid7" --format shell
  assert_line "export NCCL_SOCKET_IFNAME=eth0"
  assert_line "export NCCL_IB_GID_INDEX=7"
  # ... that mean the same: the cluster check and preflight both pass.
  run_two_nodes "$ROCE PRIMUS_SYSFS_ROOT=$FIX/eno1-gid3" "$ROCE PRIMUS_SYSFS_ROOT=$FIX/eth0-gid7"
  cat node0.out node1.out
  [[ $STATUS0 -eq 0 && $STATUS1 -eq 0 ]]
  grep -q "cluster check: 2 nodes agree on .* the meaning of 5 per-node network values and the versions (ROCm 6.3.0-39, RCCL library 1.0.60300, amdgpu driver 6.10.5, torch 2\.[0-9.]*[^)]*)" node0.out
  grep -q "\[preflight\] OK: world size 2" node0.out
}

@test "a cluster-uniform mismatch stops both nodes before preflight starts, naming it" {
  run_two_nodes "NCCL_ALGO=Ring" "NCCL_ALGO=Tree"
  cat node0.out node1.out
  [[ $STATUS0 -eq 2 && $STATUS1 -eq 2 ]]
  for out in node0.out node1.out; do
    grep -q "cluster check FAILED (1 problem(s)); nothing was started on any node" "$out"
    grep -q "NCCL_ALGO differs between nodes: 'Ring' on node 0 (.*); 'Tree' on node 1 (.*)" "$out"
    refute grep -q "\[preflight\]" "$out"
  done
}

@test "with the launcher's check off, preflight itself fails the uniform mismatch on every rank" {
  run_two_nodes "NCCL_ALGO=Ring PRIMUS_CLUSTER_CHECK=0" "NCCL_ALGO=Tree PRIMUS_CLUSTER_CHECK=0"
  cat node0.out node1.out
  # node 1's torchrun may stop its workers (143) once node 0's have exited with 2
  [[ $STATUS0 -eq 2 && $STATUS1 -ne 0 ]]
  grep -q "NCCL_ALGO differs between ranks: 'Ring' on ranks 0-1 (.*); 'Tree' on ranks 2-3 (.*)" node0.out
  grep -q "\[preflight\] FAILED" node1.out
}

@test "a library-version mismatch (ROCm 6.3 vs 6.1) fails both nodes, naming the versions" {
  run_two_nodes "$ROCE PRIMUS_SYSFS_ROOT=$FIX/eno1-gid3" "$ROCE PRIMUS_SYSFS_ROOT=$FIX/eth0-gid7-rocm61"
  cat node0.out node1.out
  [[ $STATUS0 -eq 2 && $STATUS1 -eq 2 ]]
  for out in node0.out node1.out; do
    grep -q "ROCm version differs between nodes: '6.3.0-39' on node 0 (.*); '6.1.2-119' on node 1 (.*)" "$out"
    grep -q "RCCL library version differs between nodes: '1.0.60300' on node 0 (.*); '1.0.60100' on node 1 (.*)" "$out"
  done
}

@test "the same uniform mismatch stops train too" {
  run_two_nodes "NCCL_ALGO=Ring" "NCCL_ALGO=Tree" train pretrain --config "$REPO_ROOT/examples/cpu_pretrain.yaml"
  cat node0.out node1.out
  [[ $STATUS0 -eq 2 && $STATUS1 -eq 2 ]]
  grep -q "NCCL_ALGO differs between nodes: 'Ring' on node 0 (.*); 'Tree' on node 1 (.*)" node0.out
  grep -q "NCCL_ALGO differs between nodes" node1.out
  refute grep -q "loss" node0.out
}
