# shellcheck shell=bash
# shellcheck disable=SC2034 # variables defined here are used by the suites that load this file
# tests/slurm/helpers/cluster.bash: the set-up every live Slurm suite shares
# (load it with `load helpers/cluster`). The cluster is tests/slurm/cluster.sh's
# (node1..node4), brought up by tests/slurm/run.sh, which exports SLURM_CONF and
# PRIMUS_SLURM_DIR; without them every test fails, none is skipped.
#
#   cluster_require [idle]    setup_file: the cluster's config is there (with
#                             `idle`: and its 4 nodes are idle)
#   cluster_setup TAG [NAME...]
#                             setup: a fresh $TEST_DIR (cwd), the caller's
#                             scheduler and rank names unset (and NAME...),
#                             HOME and PRIMUS_WORKSPACE inside it, a MASTER_PORT
#                             of its own
#   cluster_cpu_nodes         setup: 2 CPU "GPUs" a node (gloo), empty host
#                             trees, the .venv as the workload interpreter
#   cluster_teardown          teardown: no job left behind, $TEST_DIR removed
#   wait_queue_empty SECONDS  until squeue lists no job (1 when it still does)
#   job_id_from_output        the id in sbatch's "Submitted batch job N"
#   job_state JOBID           the job's JobState

REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
load "$REPO_ROOT/node_modules/bats-support/load"
load "$REPO_ROOT/node_modules/bats-assert/load"

PRIMUS_CLI=$REPO_ROOT/runner/primus-cli
ENTRY=$REPO_ROOT/runner/primus-cli-slurm-entry.sh
WORKLOADS=$REPO_ROOT/tests/fixtures/workloads

cluster_require() {
  [[ -n ${SLURM_CONF:-} && -f $SLURM_CONF && -n ${PRIMUS_SLURM_DIR:-} ]] || {
    echo "SLURM_CONF/PRIMUS_SLURM_DIR not set to a cluster: run this suite with tests/slurm/run.sh" >&3
    return 1
  }
  [[ ${1:-} == idle ]] || return 0
  local states
  states=$(sinfo -h -N -o '%N %t' | sort -u)
  [[ $states == *"node1 idle"*"node2 idle"*"node3 idle"*"node4 idle"* ]] || {
    echo "the test cluster is not up with 4 idle nodes: $states" >&3
    return 1
  }
}

cluster_setup() {
  TEST_DIR=$(mktemp -d "$BATS_TMPDIR/primus-$1.XXXXXX")
  shift
  chmod 0755 "$TEST_DIR"
  cd "$TEST_DIR" || return 1
  local name
  for name in $(compgen -e); do
    case $name in
      SLURM_CONF | PRIMUS_SLURM_DIR) ;;
      SLURM_* | SLURMD_* | PRIMUS_SLURM_* | OMPI_* | PMIX_* | PET_* | NCCL_* | GLOO_*) unset "$name" ;;
    esac
  done
  unset MASTER_ADDR MASTER_PORT NNODES NODE_RANK RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE \
    PRIMUS_DRY_RUN "$@"
  export HOME=$TEST_DIR/home PRIMUS_WORKSPACE=$TEST_DIR/workspace
  mkdir -p "$HOME"
  export PRIMUS_LOG_COLOR=0 PRIMUS_LOG_TIMESTAMP=0
  # A port of its own per test: jobs of earlier tests may still be closing.
  export MASTER_PORT=$((23000 + (RANDOM % 2000) * 2))
}

cluster_cpu_nodes() {
  export GPUS_PER_NODE=2 PRIMUS_ACCELERATOR=cpu
  export PRIMUS_SYSFS_ROOT=$TEST_DIR/sysfs PRIMUS_DEV_ROOT=$TEST_DIR/dev
  mkdir -p "$PRIMUS_SYSFS_ROOT" "$PRIMUS_DEV_ROOT"
  # The workload interpreter: the project's .venv, which has torch.
  export PRIMUS_WORKLOAD_PYTHON=$REPO_ROOT/.venv/bin/python
}

cluster_teardown() {
  # Leave no job behind for the next test.
  scancel --user=root --full 2>/dev/null || true
  wait_queue_empty 30 || true
  [[ -z ${TEST_DIR:-} ]] || rm -rf "$TEST_DIR"
}

wait_queue_empty() {
  local limit=$1 i
  for ((i = 0; i < limit * 10; i++)); do
    [[ -z $(squeue -h -o %i 2>/dev/null) ]] && return 0
    sleep 0.1
  done
  return 1
}

# shellcheck disable=SC2154 # $output: set by bats' run
job_id_from_output() {
  sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p' <<<"$output" | head -n 1
}

job_state() {
  scontrol show job -o "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}
