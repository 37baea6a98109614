#!/usr/bin/env bats
# Real torchrun launches through `primus-cli direct` on the Neuron fixtures (issue
# 13 acceptance). The workload prints the Neuron variables each rank sees.

load layers_helper

setup() {
  WORK=$BATS_TEST_TMPDIR
  cat >"$WORK/show_neuron.py" <<'PY'
import os
keys = ("NEURON_RT_VISIBLE_CORES", "PRIMUS_NEURON_CORE", "NEURON_RT_ROOT_COMM_ID", "FI_PROVIDER",
        "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE", "NEURON_LOGICAL_NC_CONFIG")
values = " ".join(f"{k}={os.environ.get(k, '<unset>')}" for k in keys)
print(f"node={os.environ['GROUP_RANK']} local_rank={os.environ['LOCAL_RANK']} "
      f"rank={os.environ['RANK']} {values}", flush=True)
PY
}

free_port() {
  "$VENV_PY" -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0",0)); print(s.getsockname()[1])'
}

# direct MACHINE VAR=VALUE... -- DIRECT ARGS...: primus-cli direct on fixture MACHINE.
direct() {
  local fixture=$SYSFS/$1
  shift
  local -a vars=()
  while [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  env -i PATH="$REPO_ROOT/.venv/bin:/usr/bin:/bin" HOME="$WORK" PRIMUS_LOG_COLOR=0 \
    PRIMUS_SYSFS_ROOT="$fixture" PRIMUS_DEV_ROOT="$fixture" PRIMUS_WORKSPACE="$WORK/ws" \
    "${vars[@]}" "$REPO_ROOT/runner/primus-cli" direct "$@"
}

@test "trn1, SPMD, GPUS_PER_NODE=4, --neuron-cores-per-proc 2: workers see 0-1 2-3 4-5 6-7" {
  run --separate-stderr direct trn1.32xlarge GPUS_PER_NODE=4 MASTER_PORT="$(free_port)" \
    XLA_USE_SPMD=1 -- --log-all-ranks --neuron-cores-per-proc 2 \
    --script "$WORK/show_neuron.py" -- show cores
  assert_success
  # The launcher's own lines are on stderr (one stream); the ranks' on stdout.
  [[ $stderr == *"neuron: instance=trn1.32xlarge NEURON_LOGICAL_NC_CONFIG=1 GPUS_PER_NODE=4 slices=0-1 2-3 4-5 6-7"* ]]
  [[ $stderr == *"helpers/torchrun_quiet.py --nproc_per_node 4 --nnodes 1"* ]]
  local i
  for i in 0 1 2 3; do
    assert_line --partial "local_rank=$i rank=$i NEURON_RT_VISIBLE_CORES=$((2 * i))-$((2 * i + 1)) PRIMUS_NEURON_CORE=<unset>"
  done
}

@test "trn1, NNODES=2 as two launchers on one machine: one core each, disjoint, FI_* set, one ROOT_COMM_ID" {
  local addr port node
  addr=$(hostname -I | awk '{print $1}')
  [[ -n $addr && $addr != 127.* ]] || fail "this test needs a non-loopback address (hostname -I gave '$addr')"
  port=$(free_port)
  for node in 0 1; do
    direct trn1.32xlarge NNODES=2 NODE_RANK=$node MASTER_ADDR="$addr" MASTER_PORT="$port" \
      GPUS_PER_NODE=2 -- --log-all-ranks --script "$WORK/show_neuron.py" -- show cores \
      >"$WORK/node$node.out" 2>"$WORK/node$node.err" &
  done
  wait %1 || fail "node 0 failed: $(cat "$WORK/node0.out" "$WORK/node0.err")"
  wait %2 || fail "node 1 failed: $(cat "$WORK/node1.out" "$WORK/node1.err")"
  local want_id="$addr:$((port + 1))" lines
  for node in 0 1; do
    # --log-all-ranks: torchrun's tee prefixes each rank line with [default<N>]:
    lines=$(sed -n "s/^\[default[0-9]*\]://p" "$WORK/node0.out" "$WORK/node1.out" | grep "^node=$node " | sort -u)
    [[ $(wc -l <<<"$lines") == 2 ]] || fail "node $node: expected 2 rank lines, got: $lines"
    local lr
    for lr in 0 1; do
      grep -q "^node=$node local_rank=$lr rank=$((2 * node + lr)) NEURON_RT_VISIBLE_CORES=<unset> PRIMUS_NEURON_CORE=$lr NEURON_RT_ROOT_COMM_ID=$want_id FI_PROVIDER=efa FI_EFA_USE_DEVICE_RDMA=1 FI_EFA_FORK_SAFE=1 NEURON_LOGICAL_NC_CONFIG=1\$" <<<"$lines" ||
        fail "node $node local rank $lr: unexpected line in: $lines"
    done
  done
}
