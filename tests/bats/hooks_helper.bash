# tests/bats/hooks_helper.bash: shared set-up of the hook suites (hooks*.bats).
# shellcheck disable=SC2034 # variables defined here are used by the suites that load this file
# Every test starts from a clean hook environment: no gate set, the always-run
# hooks' variables set (AITER_LOG_LEVEL, the MoE backend) so they stay silent
# unless a test clears them, sysfs under an empty $T/nosys.

bats_require_minimum_version 1.5.0
load "$BATS_TEST_DIRNAME/../../node_modules/bats-support/load"
load "$BATS_TEST_DIRNAME/../../node_modules/bats-assert/load"

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
EXEC_HOOKS="$ROOT/runner/helpers/execute_hooks.sh"
EXEC_PATCHES="$ROOT/runner/helpers/execute_patches.sh"
HOOKS="$ROOT/runner/helpers/hooks"
FIX="$ROOT/tests/fixtures/hooks"
STUBS="$FIX/stubs"
TOOLS="$FIX/stubs/bin"

hooks_setup() {
  export T=$BATS_TEST_TMPDIR
  cd "$T" || return 1
  export PRIMUS_LOG_COLOR=0 PRIMUS_LOG_TIMESTAMP=0 PRIMUS_LOG_LEVEL=INFO
  export STUB_LOG=$T/stub.log MARK=$T/mark TMPDIR=$T
  export REAL_PYTHON="$ROOT/.venv/bin/python"
  [[ -x $REAL_PYTHON ]] || REAL_PYTHON=$(command -v python3)
  unset PRIMUS_HOOKS_DIR PRIMUS_DRY_RUN PRIMUS_PATCHES PRIMUS_PYTHON PRIMUS_ENV_ORIGINS PRIMUS_PATH
  unset REBUILD_PRIMUS_TURBO PATCH_TE_FLASH_ATTN REBUILD_BNXT USING_AINIC USING_UEP PRIMUS_SKIP_PIP
  unset REBUILD_UEP SDMA_ALL_GATHER PRIMUS_STRICT_REQUIREMENTS PRIMUS_AUTO_INSTALL UCCL_REF
  unset GPU_ARCHS MAX_JOBS PATH_TO_BNXT_TAR_PACKAGE ANP_HOME_DIR RCCL_HOME_DIR MPI_HOME_DIR
  unset PRIMUS_HIPBLASLT_TUNING PRIMUS_HIPBLASLT_TUNING_STAGE PRIMUS_DETERMINISTIC TE_HIPBLASLT_TUNING
  unset TE_HIPBLASLT_TUNING_RUN_COUNT TE_HIPBLASLT_TUNING_ALGO_COUNT HIPBLASLT_LOG_LEVEL HIPBLASLT_LOG_MASK
  unset HIPBLASLT_LOG_FILE HIPBLASLT_TUNING_OVERRIDE_FILE PRIMUS_MODEL NODE_RANK ENABLE_NUMA_BINDING
  unset NCCL_IB_GID_INDEX NCCL_IB_HCA NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME LD_LIBRARY_PATH PYTHONPATH
  unset NCCL_IB_TC NCCL_IB_FIFO_TC NCCL_IB_SL NCCL_NET_PLUGIN RCCL_AINIC_ROCE ROCM_HOME MASTER_ADDR
  unset LD_PRELOAD NCCL_CTA_POLICY NCCL_CUMEM_ENABLE NCCL_LOCAL_REGISTER NCCL_IB_DISABLE
  unset TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK RUN_MODE NNODES MASTER_PORT GPUS_PER_NODE
  unset UCCL_IB_GID_INDEX UCCL_IB_HCA UCCL_SOCKET_IFNAME UCCL_IB_TC UCCL_IB_SL
  unset UCCL_IB_MAX_INFLIGHT_NORMAL UCCL_IB_MAX_INFLIGHT_LOW_LATENCY UCCL_IB_MAX_INFLIGHT_BYTES
  export AITER_LOG_LEVEL=WARNING PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND=TURBO
  export PRIMUS_SYSFS_ROOT=$T/nosys
  # An experiment config naming no framework (the hipBLASLt tests pass it).
  mkdir -p "$T/cfg"
  echo "modules: {}" >"$T/cfg/exp.yaml"
}

# hooks ARGS...: run execute_hooks.sh; records to $T/rec, stderr to $T/err.
hooks() {
  run bash -c '"$0" "$@" >"$T/rec" 2>"$T/err"' "$EXEC_HOOKS" "$@"
}

# patches ARGS...: the same for execute_patches.sh.
patches() {
  run bash -c '"$0" "$@" >"$T/rec" 2>"$T/err"' "$EXEC_PATCHES" "$@"
}

# one_hook NAME ARGS...: run only the real hook NAME (copied alone into a hooks
# directory, with _lib.sh and sdma/) through execute_hooks.sh.
one_hook() {
  local name=$1
  shift
  mkdir -p "$T/one"
  rm -f "$T/one"/[0-9][0-9]_*
  cp "$HOOKS/$name" "$HOOKS/_lib.sh" "$T/one/"
  [[ -d $T/one/sdma ]] || cp -r "$HOOKS/sdma" "$T/one/sdma"
  run bash -c '"$0" "$@" >"$T/rec" 2>"$T/err"' "$EXEC_HOOKS" --hooks-dir "$T/one" "$@"
}

# records: the NUL records of the last run as "kind NAME=VALUE" lines.
records() {
  local kind name value
  while IFS= read -r -d '' kind && IFS= read -r -d '' name && IFS= read -r -d '' value; do
    printf '%s %s=%s\n' "$kind" "$name" "$value"
  done <"$T/rec"
}

errors() { cat "$T/err"; }

# stub_calls: the calls the PATH stubs of $TOOLS received, one per line.
stub_calls() { cat "$STUB_LOG" 2>/dev/null || true; }
