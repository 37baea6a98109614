# tests/bats/helpers/launcher.bash: shared set-up for the launcher suites.
# shellcheck disable=SC2034 # variables defined here are used by the suites that load this file
# Loads bats-support/bats-assert, puts the repo's primus-cli at $PRIMUS_CLI (its
# Slurm builder at $SLURM_CLI, the Slurm entry at $ENTRY),
# runs each test in its own temporary working directory and workspace.

REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
load "$REPO_ROOT/node_modules/bats-support/load"
load "$REPO_ROOT/node_modules/bats-assert/load"

PRIMUS_CLI=$REPO_ROOT/runner/primus-cli
SLURM_CLI=$REPO_ROOT/runner/primus-cli-slurm.sh
ENTRY=$REPO_ROOT/runner/primus-cli-slurm-entry.sh
WORKLOADS=$REPO_ROOT/tests/fixtures/workloads

# launcher_setup: isolate the test from the caller's environment and files.
launcher_setup() {
  TEST_DIR=$(mktemp -d "$BATS_TMPDIR/primus.XXXXXX")
  export HOME=$TEST_DIR/home
  mkdir -p "$HOME" "$TEST_DIR/work"
  cd "$TEST_DIR/work" || return 1
  export PRIMUS_WORKSPACE=$TEST_DIR/workspace
  export PRIMUS_LOG_COLOR=0 PRIMUS_LOG_TIMESTAMP=0
  # No accelerator and no RDMA here; detection reads an empty tree.
  export PRIMUS_SYSFS_ROOT=$TEST_DIR/sysfs PRIMUS_DEV_ROOT=$TEST_DIR/dev
  mkdir -p "$PRIMUS_SYSFS_ROOT" "$PRIMUS_DEV_ROOT"
  unset MASTER_ADDR MASTER_PORT NNODES NODE_RANK GPUS_PER_NODE SLURM_JOB_ID SLURM_NODELIST \
    SLURM_NNODES SLURM_NODEID SLURM_PROCID OMPI_COMM_WORLD_RANK PMIX_RANK PET_NNODES \
    JOB_COMPLETION_INDEX HF_TOKEN PRIMUS_SKIP_VALIDATION RUN_MODE PRIMUS_TORCHRUN \
    JAX_COORDINATOR_IP JAX_COORDINATOR_PORT JAX_COORDINATOR_ADDRESS
  # The workload interpreter (never the runner's by accident): the
  # project's .venv, which has torch. The user-env suites unset it and activate
  # their own environment instead.
  export PRIMUS_WORKLOAD_PYTHON=$REPO_ROOT/.venv/bin/python
}

# unset_scheduler_vars: also unset what a scheduler or an outer launch may have
# exported (Slurm's, OpenMPI/PMIx's and torchrun's names, the rank variables).
unset_scheduler_vars() {
  local name
  for name in $(compgen -e); do
    case $name in
      SLURM_* | SLURMD_* | PRIMUS_SLURM_* | OMPI_* | PMIX_* | PET_*) unset "$name" ;;
    esac
  done
  unset RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE PRIMUS_DRY_RUN
}

launcher_teardown() {
  [[ -z ${TEST_DIR:-} ]] || rm -rf "$TEST_DIR"
}

# free_port: a TCP port nobody listens on right now.
free_port() {
  "$REPO_ROOT/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# tree_listing DIR: every path under DIR with size and mtime (to prove nothing changed).
tree_listing() {
  find "$1" -printf '%p %s %T@\n' 2>/dev/null | sort
}

# process_running PID: the process exists and is not a zombie (an orphaned
# zombie waits for init to reap it; it holds no resources and runs nothing).
process_running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [[ ${stat##*) } != Z* ]]
}

# poll_until SECONDS CMD...: run CMD every 0.1 s until it succeeds; status 1
# when it never did within SECONDS. Tests wait for a state this way, never for
# a fixed sleep (a loaded host only makes the wait longer).
poll_until() {
  local tries=$(($1 * 10)) i
  shift
  for ((i = 0; i < tries; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

# signal_mask PID FIELD: the /proc/PID/status mask FIELD (SigCgt, SigPnd,
# ShdPnd, SigIgn) as a number; signal N is bit N-1 (proc(5)).
signal_mask() {
  local line
  line=$(grep "^$2:" "/proc/$1/status" 2>/dev/null) || return 1
  echo $((16#${line##*[[:space:]]}))
}

# kill_marked TEXT: SIGCONT then SIGKILL every process whose command line holds
# TEXT (a test's own run: its workload carries the test's directory), for teardown.
kill_marked() {
  local pid
  for pid in $(pgrep -f -- "$1"); do
    kill -CONT "$pid" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
  done
}

# marked_alive TEXT: the pids of the processes still running whose command line holds TEXT.
marked_alive() {
  local pid
  for pid in $(pgrep -f -- "$1"); do
    process_running "$pid" && echo "$pid"
  done
  return 0
}
