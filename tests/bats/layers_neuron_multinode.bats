#!/usr/bin/env bats
# Multi-node Trainium/Inferentia (acceptance), on the sysfs fixtures with
# detection for real: the EFA layer's exact values, and every Neuron check through
# `primus-cli direct --dry-run` and `primus-cli env check` with the same verdict and
# the same message (one owner: the rules engine).

load layers_helper

setup() {
  WORK=$BATS_TEST_TMPDIR
  printf 'print("workload")\n' >"$WORK/w.py"
}

# layer MACHINE VAR=VALUE...: source primus-env.sh on fixture MACHINE (detection
# runs), validation deferred; dump the exported environment to env.dump.
layer() {
  local machine=$1
  shift
  run --separate-stderr clean_bash PRIMUS_PYTHON="$VENV_PY" PRIMUS_SYSFS_ROOT="$SYSFS/$machine" \
    PRIMUS_DEV_ROOT="$SYSFS/$machine" PRIMUS_ENV_DEFER_VALIDATION=1 "$@" -- \
    "source '$PRIMUS_ENV'; echo rc=\$?; env -0 >'$BATS_TEST_TMPDIR/env.dump'"
  assert_success
  assert_line rc=0
}

# dry MACHINE VAR=VALUE... [-- DIRECT OPTIONS]: primus-cli direct --dry-run on MACHINE.
dry() {
  local fixture=$SYSFS/$1
  shift
  local -a vars=() opts=()
  while (($#)) && [[ $1 != -- ]]; do vars+=("$1"); shift; done
  if (($#)); then shift; opts=("$@"); fi
  run --separate-stderr env -i PATH="$REPO_ROOT/.venv/bin:/usr/bin:/bin" HOME="$WORK" \
    PRIMUS_LOG_COLOR=0 PRIMUS_SYSFS_ROOT="$fixture" PRIMUS_DEV_ROOT="$fixture" \
    PRIMUS_WORKSPACE="$WORK/ws" "${vars[@]}" \
    "$REPO_ROOT/runner/primus-cli" direct --dry-run "${opts[@]}" --script "$WORK/w.py" -- a
  # A dry run prints only the launcher's lines, all on stderr (one stream): the
  # assertions on lines read them there as well ($stderr keeps them apart too).
  lines+=("${stderr_lines[@]}")
}

# envcheck VAR=VALUE...: primus-cli env check --accelerator neuron on exactly these values.
envcheck() {
  run --separate-stderr env -i PATH="$REPO_ROOT/.venv/bin:/usr/bin:/bin" HOME="$WORK" \
    PRIMUS_LOG_COLOR=0 "$@" "$REPO_ROOT/runner/primus-cli" env check --accelerator neuron
}

# finding TEXT: the `[env check]` line of stderr that contains TEXT.
finding() {
  grep -F -- "$1" <<<"$stderr" | grep '^\[env check\]' | head -1
}

MULTI=(NNODES=2 NODE_RANK=0 MASTER_ADDR=10.1.2.3 MASTER_PORT=29500)

# root_case EXPECTED_RC TEXT VAR=VALUE...: the case through direct --dry-run on the
# trn1.32xlarge fixture and through env check; same status, same finding line.
root_case() {
  local want=$1 text=$2
  shift 2
  dry trn1.32xlarge "$@"
  [[ $status == "$want" ]] || fail "direct: status $status, expected $want: $stderr"
  local line=""
  if [[ -n $text ]]; then
    line=$(finding "$text")
    [[ -n $line ]] || fail "direct: no finding with '$text' in: $stderr"
  fi
  envcheck PRIMUS_NEURON_INSTANCE=trn1.32xlarge PRIMUS_NEURON_EFA_DEVICES=8 "$@"
  [[ $status == "$want" ]] || fail "env check: status $status, expected $want: $stderr"
  if [[ -n $text ]]; then
    [[ $(finding "$text") == "$line" ]] || fail "messages differ: direct '$line' / env check '$(finding "$text")'"
  fi
}

@test "EFA layer, NNODES=2: exact FI_* values on trn1.32xlarge, trn2.48xlarge, trn1.2xlarge and inf2" {
  local machine
  for machine in trn1.32xlarge trn2.48xlarge trn1.2xlarge inf2; do
    layer "$machine" "${MULTI[@]}"
    assert_env FI_PROVIDER efa
    assert_env FI_EFA_USE_DEVICE_RDMA 1
    assert_env FI_EFA_FORK_SAFE 1
    assert_env NEURON_RT_ROOT_COMM_ID 10.1.2.3:29501
    assert_env NEURON_RT_EXEC_TIMEOUT 600
    assert_env MALLOC_ARENA_MAX 64
    refute_env NCCL_IB_GID_INDEX
  done
  layer trn1.32xlarge "${MULTI[@]}"
  assert_env CCOM_SOCKET_IFNAME ens32
  assert_env PRIMUS_NEURON_EFA_DEVICES 8
  layer trn2.48xlarge "${MULTI[@]}"
  assert_env CCOM_SOCKET_IFNAME enp39s0
  assert_env PRIMUS_NEURON_EFA_DEVICES 16
}

@test "multi-node on trn1.32xlarge and trn2.48xlarge (EFA found) passes" {
  dry trn1.32xlarge "${MULTI[@]}"
  assert_success
  assert_line --partial "FI_PROVIDER=efa"
  dry trn2.48xlarge "${MULTI[@]}"
  assert_success
}

@test "trn1.2xlarge multi-node: exit 2 naming the instance and the fix (direct and env check agree)" {
  dry trn1.2xlarge "${MULTI[@]}"
  assert_failure 2
  local line
  line=$(finding "trn1.2xlarge, which has no EFA")
  [[ -n $line ]] || fail "no EFA finding in: $stderr"
  [[ $line == *"Fix: run multi-node jobs on trn1.32xlarge or trn1n.32xlarge"* ]]
  envcheck "${MULTI[@]}" PRIMUS_NEURON_INSTANCE=trn1.2xlarge NEURON_RT_ROOT_COMM_ID=10.1.2.3:29501
  assert_failure 2
  [[ $(finding "trn1.2xlarge, which has no EFA") == "$line" ]]
}

@test "inf2 multi-node without an EFA device: exit 2 (no EFA device found)" {
  dry inf2 "${MULTI[@]}"
  assert_failure 2
  [[ $(finding "PRIMUS_NEURON_EFA_DEVICES") == *"is 0: no EFA device"*"NNODES=2 needs EFA"* ]]
}

@test "trn2 at LNC 2 with NEURON_CC_FLAGS --lnc=1: exit 2, same message in env check" {
  dry trn2.48xlarge NEURON_CC_FLAGS="--model-type transformer --lnc=1"
  assert_failure 2
  local line
  line=$(finding "NEURON_CC_FLAGS")
  [[ $line == *"compiles for logical core size 1 but the runtime runs with LNC 2"* ]]
  envcheck PRIMUS_NEURON_INSTANCE=trn2.48xlarge NEURON_CC_FLAGS="--model-type transformer --lnc=1"
  assert_failure 2
  [[ $(finding "NEURON_CC_FLAGS") == "$line" ]]
  # The other spellings the compiler takes.
  local flags
  for flags in "--lnc 1" "--logical-nc-config=1" "--logical-nc-config 1" "-lnc 1"; do
    envcheck PRIMUS_NEURON_INSTANCE=trn2.48xlarge NEURON_CC_FLAGS="$flags"
    assert_failure 2
  done
  envcheck PRIMUS_NEURON_INSTANCE=trn2.48xlarge NEURON_CC_FLAGS="--lnc=2"
  assert_success
}

@test "LNC 2 on trn1: exit 2" {
  dry trn1.32xlarge NEURON_LOGICAL_NC_CONFIG=2
  assert_failure 2
  [[ $(finding "NEURON_LOGICAL_NC_CONFIG") == *"no logical core size other than 1"* ]]
}

@test "GPUS_PER_NODE=24 on trn1: exit 2 with the nearest valid counts" {
  dry trn1.32xlarge GPUS_PER_NODE=24
  assert_failure 2
  [[ $(finding "Unsupported topology") == *"accept 1, 2, 8, 16 or a multiple of 32"*"use 16 or 32 cores per node"* ]]
  dry trn1.32xlarge GPUS_PER_NODE=16
  assert_success
}

@test "NEURON_RT_NUM_CORES=32 on trn1 (the node total, as AWS samples use it): 32 processes, deprecation warning" {
  dry trn1.32xlarge NEURON_RT_NUM_CORES=32
  assert_success
  assert_line --partial "--nproc_per_node 32 "
  [[ $(finding "NEURON_RT_NUM_CORES") == *"WARNING"*"deprecated"* ]]
  dry trn1.32xlarge NEURON_RT_NUM_CORES=64
  assert_failure 2
  [[ $(finding "NEURON_RT_NUM_CORES") == *"asks for 64 NeuronCores"*"has 32 logical cores"* ]]
}

@test "--neuron-cores-per-proc 2 without SPMD: exit 2 naming XLA_USE_SPMD; with it, or PRIMUS_NEURON_SPMD=1, it passes" {
  dry trn1.32xlarge -- --neuron-cores-per-proc 2
  assert_failure 2
  [[ $(finding "PRIMUS_NEURON_CORES_PER_PROC") == *"without XLA_USE_SPMD=1 PyTorch/XLA"*"XLA_USE_SPMD=1 (GSPMD) or PRIMUS_NEURON_SPMD=1"* ]]
  dry trn1.32xlarge XLA_USE_SPMD=1 -- --neuron-cores-per-proc 2
  assert_success
  assert_line --partial "--nproc_per_node 16 "
  dry trn1.32xlarge PRIMUS_NEURON_SPMD=1 -- --neuron-cores-per-proc 2
  assert_success
}

@test "NEURON_RT_ROOT_COMM_ID: every case gives the same verdict and message in direct and env check" {
  # Valid: explicit, bracketed IPv6.
  root_case 0 "" "${MULTI[@]}" NEURON_RT_ROOT_COMM_ID=10.1.2.3:29501
  root_case 0 "" NNODES=2 MASTER_ADDR=fd00::10 MASTER_PORT=29500 NEURON_RT_ROOT_COMM_ID="[fd00::10]:29501"
  # The port of the torch rendezvous store.
  root_case 2 "which is MASTER_PORT" "${MULTI[@]}" NEURON_RT_ROOT_COMM_ID=10.1.2.3:29500
  # A privileged port.
  root_case 2 "has port 80; accepted: 1024-65535" "${MULTI[@]}" NEURON_RT_ROOT_COMM_ID=10.1.2.3:80
  # Loopback on a multi-node job (single node: fine).
  root_case 2 "names the loopback host '127.0.0.1' with NNODES=2" "${MULTI[@]}" NEURON_RT_ROOT_COMM_ID=127.0.0.1:29501
  root_case 2 "names the loopback host 'localhost'" "${MULTI[@]}" NEURON_RT_ROOT_COMM_ID=localhost:29501
  root_case 0 "" NNODES=1 MASTER_PORT=29500 NEURON_RT_ROOT_COMM_ID=localhost:29501
  # IPv6 without brackets.
  root_case 2 "IPv6 host without brackets" NNODES=2 MASTER_ADDR=fd00::10 MASTER_PORT=29500 NEURON_RT_ROOT_COMM_ID=fd00::10:29501
}

@test "NEURON_RT_ROOT_COMM_ID unset: direct derives it (bracketed for IPv6); env check gives the same verdict" {
  dry trn1.32xlarge NNODES=2 MASTER_ADDR=fd00::10 MASTER_PORT=29500
  assert_success
  assert_line --partial "NEURON_RT_ROOT_COMM_ID=[fd00::10]:29501"
  # env check runs the launch's own decision path, so the derived value
  # is checked, not reported missing.
  envcheck PRIMUS_NEURON_INSTANCE=trn1.32xlarge PRIMUS_NEURON_EFA_DEVICES=8 NNODES=2 MASTER_ADDR=fd00::10 MASTER_PORT=29500
  assert_success
  [[ -z $(finding "NEURON_RT_ROOT_COMM_ID") ]]
}

@test "host limits: open files below 65535 with 8+ processes, root-comm port in the ephemeral range" {
  # trn1 fixture: ip_local_port_range 32768-60999, nothing reserved.
  run --separate-stderr bash -c "ulimit -n 4096 && env -i PATH='$REPO_ROOT/.venv/bin:/usr/bin:/bin' \
    HOME='$WORK' PRIMUS_LOG_COLOR=0 PRIMUS_SYSFS_ROOT='$SYSFS/trn1.32xlarge' \
    PRIMUS_DEV_ROOT='$SYSFS/trn1.32xlarge' PRIMUS_WORKSPACE='$WORK/ws' NNODES=2 \
    MASTER_ADDR=10.1.2.3 MASTER_PORT=44000 '$REPO_ROOT/runner/primus-cli' direct --dry-run \
    --script '$WORK/w.py' -- a"
  assert_success
  [[ $(finding "open-files limit") == *"32 processes per node with an open-files limit (ulimit -n) of 4096"*"ulimit -n 65535"* ]]
  [[ $(finding "NEURON_RT_ROOT_COMM_ID=") == *"port 44001 lies in the ephemeral range"*"(32768-60999)"*"ip_local_reserved_ports=44001"* ]]
  # MASTER_PORT 44000 itself lies in that range too (rule master_port_ephemeral).
  [[ $(finding "MASTER_PORT='44000'") == *"lies in this host's ephemeral port range 32768-60999"* ]]
  # Outside the range, or few processes: quiet.
  run --separate-stderr bash -c "ulimit -n 4096 && env -i PATH='$REPO_ROOT/.venv/bin:/usr/bin:/bin' \
    HOME='$WORK' PRIMUS_LOG_COLOR=0 PRIMUS_SYSFS_ROOT='$SYSFS/trn1.32xlarge' \
    PRIMUS_DEV_ROOT='$SYSFS/trn1.32xlarge' PRIMUS_WORKSPACE='$WORK/ws' NNODES=2 GPUS_PER_NODE=2 \
    MASTER_ADDR=10.1.2.3 MASTER_PORT=29500 '$REPO_ROOT/runner/primus-cli' direct --dry-run \
    --script '$WORK/w.py' -- a"
  assert_success
  [[ $stderr != *"open-files limit"* && $stderr != *"ip_local_port_range"* ]]
}

@test "HW barrier on Trn1: a warning; XLA_USE_BF16: flagged as removed" {
  dry trn1.32xlarge NEURON_RT_ENABLE_HW_EXECUTION_BARRIER=1 XLA_USE_BF16=1 GPUS_PER_NODE=2
  assert_success
  [[ $(finding "NEURON_RT_ENABLE_HW_EXECUTION_BARRIER") == *"WARNING"*"suspected deadlock"* ]]
  [[ $(finding "XLA_USE_BF16") == *"WARNING"*"last supported in Neuron 2.24"* ]]
}
