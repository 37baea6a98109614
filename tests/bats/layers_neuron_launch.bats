#!/usr/bin/env bats
# A real torchrun launch through `primus-cli direct --neuron-cores-per-proc 2`
# on the trn1.32xlarge fixture (issue 5 acceptance): each of the 2 local
# processes gets its own NEURON_RT_VISIBLE_CORES slice, 0-1 and 2-3.

load layers_helper

@test "trn1, GPUS_PER_NODE=2, --neuron-cores-per-proc 2: workers see 0-1 and 2-3" {
  local work=$BATS_TEST_TMPDIR fixture=$SYSFS/trn1.32xlarge port
  port=$("$VENV_PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat >"$work/show_cores.py" <<'PY'
import os
print(f"local_rank={os.environ['LOCAL_RANK']} NEURON_RT_VISIBLE_CORES={os.environ.get('NEURON_RT_VISIBLE_CORES', '<unset>')}", flush=True)
PY
  run --separate-stderr env -i PATH="$REPO_ROOT/.venv/bin:/usr/bin:/bin" HOME="$work" PRIMUS_LOG_COLOR=0 \
    PRIMUS_SYSFS_ROOT="$fixture" PRIMUS_DEV_ROOT="$fixture" GPUS_PER_NODE=2 MASTER_PORT="$port" \
    PRIMUS_WORKSPACE="$work/ws" \
    "$REPO_ROOT/runner/primus-cli" direct --log-all-ranks --neuron-cores-per-proc 2 \
    --script "$work/show_cores.py" -- show cores
  assert_success
  assert_line --partial "neuron: instance=trn1.32xlarge NEURON_LOGICAL_NC_CONFIG=1 GPUS_PER_NODE=2 slices=0-1 2-3"
  assert_line --partial "-m torch.distributed.run --nproc_per_node 2 --nnodes 1"
  assert_line "local_rank=0 NEURON_RT_VISIBLE_CORES=0-1"
  assert_line "local_rank=1 NEURON_RT_VISIBLE_CORES=2-3"
}
