#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# The sourcing contract of runner/helpers/envs/base_env.sh (docs/configuration.md
# "Environment layers"): one test per point. Expected values are upstream's (AMD-AGI/Primus@fd1eeabb
# runner/helpers/envs/base_env.sh), written by hand.

load layers_helper

setup() {
  DUMP="$BATS_TEST_TMPDIR/env.dump"
}

@test "env -i bash --norc, Python deps installed: rc 0 and the reference defaults" {
  run --separate-stderr clean_bash PRIMUS_PYTHON="$VENV_PY" PRIMUS_SYSFS_ROOT="$SYSFS/no-accel" \
    PRIMUS_DEV_ROOT="$SYSFS/no-accel" -- \
    "source '$BASE_ENV'; echo rc=\$?; env -0 >'$DUMP'"
  assert_success
  assert_line rc=0
  assert_env MASTER_ADDR localhost
  assert_env MASTER_PORT 1234
  assert_env NNODES 1
  assert_env NODE_RANK 0
  # No accelerator on this tree: 1 process, not the reference 8.
  assert_env GPUS_PER_NODE 1
  assert_env NCCL_DEBUG ""
  assert_env NCCL_IB_GID_INDEX 3
  assert_env NCCL_PXN_DISABLE 1
  assert_env NCCL_P2P_NET_CHUNKSIZE 524288
  assert_env NCCL_CROSS_NIC 0
  assert_env RCCL_MSCCL_ENABLE 0
  assert_env RCCL_MSCCLPP_THRESHOLD 1073741824
  assert_env TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK 0
  assert_env TORCH_NCCL_HIGH_PRIORITY 1
  assert_env HSA_ENABLE_SDMA 1
  assert_env HSA_NO_SCRATCH_RECLAIM 1
  assert_env CUDA_DEVICE_MAX_CONNECTIONS 1
  assert_env NVTE_ROCM_ENABLE_MXFP8 1
  assert_env NVTE_CK_USES_BWD_V3 1
  assert_env PATCH_TE_FLASH_ATTN 0
  assert_env DATA_PATH "$REPO_ROOT/data"
  assert_env HF_HOME "$REPO_ROOT/data/huggingface"
  assert_env PYTHONPATH "$REPO_ROOT/python:$REPO_ROOT"
}

@test "env -i bash --norc, no psutil/PyYAML: detection still works (stdlib paths), rc 0" {
  local bare
  bare=$(bare_python)
  run ! "$bare" -c 'import psutil'
  run ! "$bare" -c 'import yaml'
  run --separate-stderr clean_bash PRIMUS_PYTHON="$bare" PRIMUS_SYSFS_ROOT="$SYSFS/mi300x-roce" \
    PRIMUS_DEV_ROOT="$SYSFS/mi300x-roce" -- \
    "source '$BASE_ENV'; echo rc=\$?; env -0 >'$DUMP'"
  assert_success
  assert_line rc=0
  # The launcher's lines are on stderr (one stream): INFO only, no warning or error.
  [[ $stderr != *"[WARN]"* && $stderr != *"[ERROR]"* ]]
  assert_env PRIMUS_ACCELERATOR rocm
  assert_env NCCL_IB_GID_INDEX 5
  assert_env NCCL_SOCKET_IFNAME ens1f0
}

@test "helpers unavailable (package not importable): one warning, reference defaults kept, rc 0" {
  local base wrapper=$BATS_TEST_TMPDIR/isolated-python
  base=$("$VENV_PY" -c 'import sys; print(sys._base_executable)')
  # -I ignores PYTHONPATH, so primus_runner cannot be imported: a real failure.
  printf '#!/bin/sh\nexec %q -I "$@"\n' "$base" >"$wrapper"
  chmod +x "$wrapper"
  run --separate-stderr clean_bash PRIMUS_PYTHON="$wrapper" PRIMUS_SYSFS_ROOT="$SYSFS/mi300x-roce" -- \
    "source '$BASE_ENV'; echo rc=\$?; env -0 >'$DUMP'"
  assert_success
  assert_line rc=0
  [ "$(grep -c 'WARN' <<<"$stderr")" -eq 1 ]
  [[ $stderr == *"detection helper unavailable ('$wrapper' could not run the primus_runner helpers: "*"No module named primus_runner)"* ]]
  assert_env NCCL_IB_GID_INDEX 3
  refute_env NCCL_IB_HCA # never exported empty
  assert_env HIP_VISIBLE_DEVICES 0,1,2,3,4,5,6,7
  refute_env NCCL_SOCKET_IFNAME
  refute_env PRIMUS_ACCELERATOR
}

@test "no python at all (PRIMUS_PYTHON missing): one warning, rc 0" {
  run --separate-stderr clean_bash PRIMUS_PYTHON=/nonexistent/python3 -- \
    "source '$BASE_ENV'; echo rc=\$?"
  assert_success
  assert_line rc=0
  [ "$(grep -c 'WARN' <<<"$stderr")" -eq 1 ]
  [[ $stderr == *"'/nonexistent/python3' could not run the primus_runner helpers"* ]]
}

@test "from a set -euo pipefail caller: the caller goes on with its options intact" {
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 -- \
    "set -euo pipefail; before=\$-; source '$BASE_ENV'; echo \"after=\$- before=\$before\"; shopt -po pipefail; echo reached-end"
  assert_success
  assert_line --regexp '^after=(.*) before=\1$'
  assert_line 'set -o pipefail'
  assert_line reached-end
}

@test "sourced twice in a row: the second is a no-op (one summary, nothing appended twice)" {
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_ACCELERATOR=rocm -- \
    "source '$BASE_ENV'; source '$BASE_ENV'; echo rc=\$?; env -0 >'$DUMP'"
  assert_success
  assert_line rc=0
  [ "$(grep -c 'base_env cluster:' <<<"$stderr")" -eq 1 ]
  assert_env PYTHONPATH "$REPO_ROOT/python:$REPO_ROOT"
  refute_env TORCH_COMPILE_CACHE_KEY_TAG
}

@test "from another working directory and through a symlink: paths resolve to the repo" {
  mkdir -p "$BATS_TEST_TMPDIR/elsewhere"
  ln -s "$BASE_ENV" "$BATS_TEST_TMPDIR/elsewhere/my_env.sh"
  ln -s "$REPO_ROOT/runner" "$BATS_TEST_TMPDIR/runner-link"
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 -- \
    "cd / && source '$BATS_TEST_TMPDIR/elsewhere/my_env.sh' && echo \"pwd=\$PWD\" && env -0 >'$DUMP'"
  assert_success
  assert_line pwd=/
  assert_env DATA_PATH "$REPO_ROOT/data"
  assert_env PRIMUS_ROOT "$REPO_ROOT"
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 -- \
    "cd '$BATS_TEST_TMPDIR/elsewhere' && source ../runner-link/helpers/envs/base_env.sh && env -0 >'$DUMP'"
  assert_success
  assert_env DATA_PATH "$REPO_ROOT/data"
}

@test "never exits the caller's shell, even with bad values and no python" {
  run --separate-stderr clean_bash PRIMUS_PYTHON=/nonexistent GPUS_PER_NODE=abc NNODES=-3 MASTER_PORT=x -- \
    "set -e; source '$BASE_ENV'; echo still-here rc=\$?"
  assert_success
  assert_line 'still-here rc=0'
}

@test "leaves set -e/-u/-x and traps as they were (ERR trap not fired inside)" {
  run --separate-stderr clean_bash PRIMUS_PYTHON=/nonexistent -- \
    "set -eEu -o pipefail; trap 'echo ERR-TRAP-FIRED' ERR; trap 'echo bye' EXIT
     before_opts=\$-; before_traps=\$(trap -p)
     source '$BASE_ENV'
     [[ \$- == \"\$before_opts\" ]] && echo opts-same
     [[ \$(trap -p) == \"\$before_traps\" ]] && echo traps-same"
  assert_success
  assert_line opts-same
  assert_line traps-same
  refute_output --partial ERR-TRAP-FIRED
  # And a caller with -x keeps -x; one without keeps it off.
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 -- \
    "set -x; source '$BASE_ENV'; [[ \$- == *x* ]] && echo x-kept"
  assert_line x-kept
}

@test "keeps every value the user set, including empty ones; empty NCCL_IB_HCA means detect" {
  local -a user=(MASTER_ADDR=u-master MASTER_PORT=4321 NNODES=3 NODE_RANK=0 GPUS_PER_NODE=2
    NCCL_DEBUG=INFO NCCL_IB_GID_INDEX=1 NCCL_PXN_DISABLE=0 NCCL_P2P_NET_CHUNKSIZE=1
    NCCL_CROSS_NIC=1 RCCL_MSCCL_ENABLE=1 RCCL_MSCCLPP_THRESHOLD=7
    TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=1 TORCH_NCCL_HIGH_PRIORITY=0
    HSA_ENABLE_SDMA=0 HSA_NO_SCRATCH_RECLAIM=0 CUDA_DEVICE_MAX_CONNECTIONS=8
    NVTE_ROCM_ENABLE_MXFP8=0 NVTE_CK_USES_BWD_V3=0 PATCH_TE_FLASH_ATTN=1
    HIP_VISIBLE_DEVICES=3 DATA_PATH=/d HF_HOME=/h "NCCL_SOCKET_IFNAME=" "GLOO_SOCKET_IFNAME="
    "NCCL_IB_HCA=" 'IP_INTERFACE=eth0 $(touch /tmp/pwned)')
  run --separate-stderr clean_bash PRIMUS_PYTHON=/nonexistent "${user[@]}" -- \
    "source '$BASE_ENV'; env -0 >'$DUMP'"
  assert_success
  local pair
  for pair in "${user[@]}"; do
    [[ ${pair%%=*} == NCCL_IB_HCA ]] && continue
    assert_env "${pair%%=*}" "${pair#*=}"
  done
  # Empty NCCL_IB_HCA asks for detection (reference 4); none ran, and an empty list
  # is never exported (RCCL reads it as every device): unset.
  refute_env NCCL_IB_HCA
  [ ! -e /tmp/pwned ]
}

@test "prints only on NODE_RANK 0, and only at INFO or above" {
  run --separate-stderr clean_bash PRIMUS_PYTHON=/nonexistent NODE_RANK=1 NNODES=2 -- \
    "source '$BASE_ENV'"
  assert_success
  assert_output ""
  [ -z "$stderr" ]
  run --separate-stderr clean_bash PRIMUS_PYTHON=/nonexistent PRIMUS_LOG_LEVEL=WARN -- \
    "source '$BASE_ENV'"
  assert_output ""
  [[ $stderr == *"[WARN] base_env: detection helper unavailable"* ]]
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_LOG_LEVEL=DEBUG -- \
    "source '$BASE_ENV'"
  [[ $stderr != *'[DEBUG]'* ]]
  [[ $stderr == *'[INFO] base_env cluster: MASTER_ADDR=localhost'* ]]
}

@test "PRIMUS_DEBUG=1 traces the loader only, not the caller afterwards" {
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 PRIMUS_DEBUG=1 -- \
    "source '$ENVS/primus-env.sh' || true; [[ \$- == *x* ]] || echo x-off-after; echo after-marker"
  assert_success
  assert_line x-off-after
  [[ $stderr == *"+ __primus_base_env_main"* ]]
  [[ $stderr != *"after-marker"* ]]
}

@test "executed instead of sourced: exit 2 with the fix; --help exits 0" {
  run bash "$BASE_ENV"
  assert_failure 2
  assert_output --partial "base_env.sh must be sourced"
  run bash "$BASE_ENV" --help
  assert_success
  assert_output --partial "launcher-owned defaults"
}

@test "user NODE_RANK and values with spaces, quotes and \$() survive byte for byte" {
  local tricky=$'a b "c" \'d\' $(echo no) `echo no`;*\nline2'
  run --separate-stderr clean_bash PRIMUS_DETECTION_DONE=1 "HF_HOME=$tricky" "MASTER_ADDR=$tricky" -- \
    "source '$BASE_ENV'; env -0 >'$DUMP'"
  assert_success
  assert_env HF_HOME "$tricky"
  assert_env MASTER_ADDR "$tricky"
}
