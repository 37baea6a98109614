#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# The live Slurm suite: real slurmctld/slurmd daemons (tests/slurm/cluster.sh,
# 4 nodes node1..node4 on 127.0.77.1-4, each with its own hostname). Run it with
# tests/slurm/run.sh, which starts and stops the cluster; without a cluster
# every test fails (never skips).
#
# On CPU the launcher uses gloo; GPUS_PER_NODE=2 gives 2 processes per node.

# REPO_ROOT, PRIMUS_CLI, ENTRY, bats-support/-assert, the cluster_* set-up,
# wait_queue_empty, job_id_from_output and job_state.
load helpers/cluster
load "$REPO_ROOT/tests/bats/helpers/secrets"

setup_file() {
  cluster_require idle
}

setup() {
  cluster_setup slurm-live
  cluster_cpu_nodes
}

teardown() {
  cluster_teardown
}

# pids_matching TEXT: "pid cmdline" of the processes whose command line
# contains TEXT (read from /proc without a fork per process).
pids_matching() {
  local proc cmd
  local -a parts
  for proc in /proc/[0-9]*; do
    [[ $proc == "/proc/$$" || $proc == "/proc/$BASHPID" ]] && continue
    { mapfile -d '' -t parts <"$proc/cmdline"; } 2>/dev/null || continue
    cmd="${parts[*]}"
    [[ $cmd == *"$1"* ]] && printf '%s %s\n' "${proc#/proc/}" "$cmd"
  done
  return 0
}

# hosts_of_pids: the UTS hostname (node) of each given "pid cmd" line.
hosts_of_pids() {
  local pid rest
  while read -r pid rest; do
    nsenter --target "$pid" --uts hostname 2>/dev/null
  done | sort -u
}

@test "srun -N2 of the entry (dry-run): NODE_RANK 0 and 1, one MASTER_ADDR, first host from scontrol" {
  run timeout 120 srun -N2 --ntasks-per-node=1 "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_success
  assert_output --regexp "\[NODE-0\(node1\)\] \[INFO\] slurm-entry: job [0-9]+ step 0: 2 node\(s\) node\[1-2\], this is node 0 \(node1\), 2 task\(s\), first host node1, mode direct"
  assert_output --regexp "\[NODE-1\(node2\)\] \[INFO\] slurm-entry: job [0-9]+ step 0: 2 node\(s\) node\[1-2\], this is node 1 \(node2\)"
  assert_output --partial "--nnodes 2 --node_rank 0 --master_addr node1 --master_port $MASTER_PORT"
  assert_output --partial "--nnodes 2 --node_rank 1 --master_addr node1 --master_port $MASTER_PORT"
  [[ $(grep -o -- '--master_addr [^ ]*' <<<"$output" | sort -u) == "--master_addr node1" ]]
  [[ $(grep -c -- ' command: ' <<<"$output") == 2 ]]
}

@test "srun -N4 --ntasks-per-node=2 is refused on every task: no torchrun at all" {
  run timeout 120 srun -N4 --ntasks-per-node=2 "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_failure
  assert_output --partial "this step runs 8 tasks on 4 node(s) (SLURM_STEP_TASKS_PER_NODE=2(x4))"
  assert_output --partial "srun --ntasks-per-node=1"
  [[ $(grep -c "refused: 8 tasks on 4 node(s)" <<<"$output") == 7 ]]
  refute_output --partial " command: "
}

@test "srun -N4 --ntasks-per-node=2 --srun-native: 8 workers, RANK 0-7, no torchrun" {
  run timeout 120 srun -N4 --ntasks-per-node=2 "$ENTRY" --srun-native --dry-run direct --module primus_runner -- preflight
  assert_success
  [[ $(grep -c " command: " <<<"$output") == 8 ]]
  refute_output --partial "torchrun --nproc_per_node"
  local r
  for r in 0 1 2 3 4 5 6 7; do
    assert_output --regexp "srun-native: worker RANK=$r LOCAL_RANK=$((r % 2)) WORLD_SIZE=8 LOCAL_WORLD_SIZE=2"
  done
  assert_output --regexp "\[NODE-3\(node4\)\] .*RANK=7 LOCAL_RANK=1"
}

@test "a 2-node srun inside a 4-node sbatch allocation maps 2 nodes, not 4" {
  run timeout 120 sbatch --wait -N4 -o "$TEST_DIR/job.out" \
    --wrap "srun -N2 --ntasks-per-node=1 $ENTRY --dry-run direct --module primus_runner -- preflight"
  assert_success
  run cat "$TEST_DIR/job.out"
  assert_output --partial "--nnodes 2 --node_rank 0 --master_addr node1 "
  assert_output --partial "--nnodes 2 --node_rank 1 --master_addr node1 "
  refute_output --partial "--nnodes 4"
  assert_output --partial "2 node(s) node[1-2]"
}

@test "primus-cli slurm sbatch -N 2 -- direct --module primus_runner -- preflight: runs from the spooled script, world size 4" {
  run timeout 300 "$PRIMUS_CLI" slurm sbatch -N 2 --wait -o "$TEST_DIR/job-%j.out" -- direct --module primus_runner -- preflight
  assert_success
  job=$(job_id_from_output)
  [[ -n $job ]]
  # The script Slurm ran is its spooled copy, not a file of ours.
  run cat "$TEST_DIR/job-$job.out"
  assert_output --partial "[preflight] OK: world size 4"
  assert_output --regexp "\[NODE-0\(node1\)\] \[INFO\] slurm-entry: job $job step 0: 2 node\(s\) node\[1-2\]"
  assert_output --regexp "\[NODE-1\(node2\)\] \[INFO\] slurm-entry: job $job step 0"
  assert_output --partial "NNODES=2 NODE_RANK=1 GPUS_PER_NODE=2 MASTER_ADDR=node1"
  assert_output --regexp "\[NODE-1\(node2\)\] \[INFO\] slurm-entry: launcher finished: exit status 0"
  assert_output --partial "primus-cli slurm: srun of job $job exited with status 0"
  [[ $(job_state "$job") == COMPLETED ]]
}

@test "primus-cli slurm srun -N 2 -- direct --module primus_runner -- preflight: world size 4 on node1 and node2" {
  run timeout 300 "$PRIMUS_CLI" slurm srun -N 2 -- direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "[preflight] OK: world size 4"
  assert_output --partial "NNODES=2 NODE_RANK=0 GPUS_PER_NODE=2 MASTER_ADDR=node1"
  assert_output --partial "NNODES=2 NODE_RANK=1 GPUS_PER_NODE=2 MASTER_ADDR=node1"
}

@test "primus-cli slurm srun -N 2 -- container -- preflight: one world of 4 across two podman containers" {
  # A real podman + runc with the container suite's test-local set-up (tests/container/).
  # shellcheck source=tests/container/podman_env.bash
  source "$REPO_ROOT/tests/container/podman_env.bash"
  podman_test_env "$REPO_ROOT"
  podman_test_image "$REPO_ROOT"
  podman_test_check
  cp "$PODMAN_TEST_CONFIG" "$HOME/.primus.yaml"
  run timeout 300 "$PRIMUS_CLI" slurm srun -N 2 -- container --name pslurm -- --module primus_runner -- preflight
  assert_success
  assert_output --partial "[preflight] OK: world size 4"
  assert_output --regexp "podman run --rm --name pslurm-[0-9]+\.[0-9]+-0 "
  assert_output --regexp "podman run --rm --name pslurm-[0-9]+\.[0-9]+-1 "
  assert_output --partial "NNODES=2 NODE_RANK=1 GPUS_PER_NODE=2 MASTER_ADDR=node1"
  refute grep -q '^pslurm-' < <(podman ps -a --format '{{.Names}}')
}

@test "srun-native preflight: 2 nodes x 2 tasks, one worker per task, world size 4" {
  run timeout 300 "$PRIMUS_CLI" slurm --srun-native srun -N 2 --ntasks-per-node=2 -- direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "[preflight] OK: world size 4"
  assert_output --partial "mode=single"
}

@test "workload values reach every node byte for byte through sbatch" {
  run timeout 120 "$PRIMUS_CLI" slurm sbatch -N 2 --wait -o "$TEST_DIR/job.out" -- direct --dry-run --module primus_runner \
    -- preflight 'a b' '$(touch pwned)' '`touch pwned2`' '*' 'x;y'
  assert_success
  run cat "$TEST_DIR/job.out"
  # The printed command is what runs: each '$' doubled for torchrun, which halves
  # it back (runner/lib/torchrun_words.sh), so every rank gets the word as given.
  local expected='preflight a\ b \$\$\(touch\ pwned\) \`touch\ pwned2\` \* x\;y'
  [[ $(grep -cF -- "$expected" <<<"$output") == 2 ]]
  [[ ! -e pwned && ! -e pwned2 && ! -e $HOME/pwned ]]
}

@test "scancel of a running 2-node job ends every process on every node; the output says cancelled" {
  printf 'import time\nprint("sleeper up", flush=True)\ntime.sleep(600)\n' >"$TEST_DIR/sleeper.py"
  run timeout 60 "$PRIMUS_CLI" slurm sbatch -N 2 -o "$TEST_DIR/job.out" -- direct \
    --script "$TEST_DIR/sleeper.py" -- sleep forever
  assert_success
  job=$(job_id_from_output)
  [[ -n $job ]]
  # Wait for the workers: the console shows node 0's first and node 1's last.
  local i
  for ((i = 0; i < 1200; i++)); do
    (($(grep -c "sleeper up" "$TEST_DIR/job.out" 2>/dev/null) == 2)) && break
    sleep 0.1
  done
  pids_matching "$TEST_DIR/sleeper.py" >"$TEST_DIR/before.txt"
  [[ $(hosts_of_pids <"$TEST_DIR/before.txt" | tr '\n' ' ') == "node1 node2 " ]]
  scancel "$job"
  for ((i = 0; i < 300; i++)); do
    [[ -z $(pids_matching "$TEST_DIR") ]] && [[ $(job_state "$job") == CANCELLED ]] && break
    sleep 0.1
  done
  run pids_matching "$TEST_DIR"
  assert_output ""
  run pids_matching "slurmstepd: [$job."
  assert_output ""
  [[ $(job_state "$job") == CANCELLED ]]
  run cat "$TEST_DIR/job.out"
  assert_output --regexp "\[NODE-0\(node1\)\] \[ERROR\] slurm-entry: job $job step 0 CANCELLED on this node: SIGTERM received .*exit status will be 143"
  assert_output --regexp "\[NODE-1\(node2\)\] \[ERROR\] slurm-entry: job $job step 0 CANCELLED on this node: SIGTERM received"
  assert_output --partial "primus-cli slurm: job $job received SIGTERM"
}

@test "primus-cli slurm --dry-run with -w on the live cluster names node3 as master" {
  run timeout 60 "$PRIMUS_CLI" --dry-run slurm srun -w 'node[3-4]' -- direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "--nnodes 2 --node_rank 0 --master_addr node3 "
  [[ -z $(squeue -h -o %i) ]]
}

# ---------------------------------------------------------------- secrets

# secret_job_setup: the four ways a secret is given (tests/bats/helpers/secrets.bash):
# an export, --env on the mode's command line, config direct.env, a hook's env. line.
secret_job_setup() {
  secrets_init
  export PROBE_DIR=$TEST_DIR/probe
  mkdir -p "$PROBE_DIR" "$TEST_DIR/hooks"
  printf 'echo "env.DB_PASSWORD=%s"\n' "$S_HOOK" >"$TEST_DIR/hooks/00_secret.sh"
  printf 'direct:\n  env: [DATABRICKS_TOKEN=%s]\n' "$S_CONFIG" >"$TEST_DIR/cfg.yaml"
  export HF_TOKEN=$S_EXPORT PRIMUS_HOOKS_DIR=$TEST_DIR/hooks
  PROBE_ARGS=("$(sha HF_TOKEN "$S_EXPORT")" "$(sha WANDB_API_KEY "$S_CLI")"
    "$(sha DATABRICKS_TOKEN "$S_CONFIG")" "$(sha DB_PASSWORD "$S_HOOK")")
  # credential-shaped names and a PRIMUS_SECRET_NAMES name (exported:
  # srun/sbatch pass the environment on).
  secrets_more_init
  PROBE_ARGS+=("${NEW_PROBE_ARGS[@]}")
}

# secret_job_check: every rank (2 nodes x 2) saw every value; no value in the
# workspace, the logs or the console output in $1.
secret_job_check() {
  local rank
  for rank in 0 1 2 3; do
    run cat "$PROBE_DIR/seen-$rank"
    assert_output "$(printf '%s\n' 'HF_TOKEN ok' 'WANDB_API_KEY ok' 'DATABRICKS_TOKEN ok' 'DB_PASSWORD ok')
$NEW_SEEN"
  done
  local files
  files=$(grep_secrets "$PRIMUS_WORKSPACE" "$1")
  [[ -z $files ]] || fail "secret value in: $files"
}

@test "secrets through slurm srun: on no argv of any process on any node, every rank sees them, in no file" {
  secret_job_setup
  # No `timeout` wrapper: its own argv would hold what the user typed (the
  # probe ends by itself after 60 s).
  "$PRIMUS_CLI" slurm --config "$TEST_DIR/cfg.yaml" srun -N 2 -- direct \
    --env "WANDB_API_KEY=$S_CLI" "${NEW_ENV_ARGS[@]}" \
    --script "$REPO_ROOT/tests/fixtures/workloads/secret_probe.py" -- "${PROBE_ARGS[@]}" >"$TEST_DIR/console" 2>&1 &
  local pid=$! rank
  for rank in 0 1 2 3; do
    wait_for "$PROBE_DIR/started-$rank" 180 || { touch "$PROBE_DIR/go"; cat "$TEST_DIR/console"; fail "rank $rank never started"; }
  done
  local leaks
  leaks=$(scan_cmdlines)
  touch "$PROBE_DIR/go"
  local rc=0
  wait "$pid" || rc=$?
  [[ -z $leaks ]] || fail "secret on a command line while the job ran: $leaks"
  ((rc == 0)) || { cat "$TEST_DIR/console"; fail "exit $rc"; }
  secret_job_check "$TEST_DIR/console"
}

@test "secrets through slurm sbatch: not in the spooled batch script (scontrol write batch_script), on no argv, every rank sees them" {
  secret_job_setup
  run timeout 60 "$PRIMUS_CLI" slurm --config "$TEST_DIR/cfg.yaml" sbatch -N 2 -o "$TEST_DIR/job-%j.out" -- \
    direct --env "WANDB_API_KEY=$S_CLI" "${NEW_ENV_ARGS[@]}" \
    --script "$REPO_ROOT/tests/fixtures/workloads/secret_probe.py" -- "${PROBE_ARGS[@]}"
  assert_success
  assert_output --partial "secrets WANDB_API_KEY AWS_SECRET_ACCESS_KEY (given with --env) travel in sbatch's environment"
  local job rank
  job=$(job_id_from_output)
  [[ -n $job ]]
  for rank in 0 1 2 3; do
    wait_for "$PROBE_DIR/started-$rank" 180 || { touch "$PROBE_DIR/go"; cat "$TEST_DIR"/job-*.out; fail "rank $rank never started"; }
  done
  local leaks
  leaks=$(scan_cmdlines)
  # Slurm's own spooled copy of the batch script, while the job runs.
  scontrol write batch_script "$job" "$TEST_DIR/spooled.sh"
  touch "$PROBE_DIR/go"
  local i
  for ((i = 0; i < 1200; i++)); do
    [[ $(job_state "$job") == COMPLETED || $(job_state "$job") == FAILED ]] && break
    sleep 0.1
  done
  [[ -z $leaks ]] || fail "secret on a command line while the job ran: $leaks"
  [[ $(job_state "$job") == COMPLETED ]] || { cat "$TEST_DIR/job-$job.out"; fail "job $job: $(job_state "$job")"; }
  run cat "$TEST_DIR/spooled.sh"
  assert_output --partial "direct --env WANDB_API_KEY --env AWS_SECRET_ACCESS_KEY --script"
  [[ -z $(grep_secrets "$TEST_DIR/spooled.sh") ]] || fail "secret in the spooled batch script"
  secret_job_check "$TEST_DIR/job-$job.out"
}

@test "live output under the Slurm entry (slurm srun): 2 ranks, console piped, each line within 1 s (median) on the console and in the log" {
  load "$REPO_ROOT/tests/bats/helpers/live"
  unset PYTHONUNBUFFERED
  live_measure "$TEST_DIR/live.log" timeout 300 "$PRIMUS_CLI" slurm srun -N 1 -- direct \
    --log_file "$TEST_DIR/live.log" --script "$REPO_ROOT/tests/fixtures/workloads/live_lines.py"
  [[ $LIVE_RC == 0 ]]
  live_assert console.lags 60
  live_assert log.lags 60
}

# The user's namespace (docs/configuration.md "Your variables reach the ranks"): every name
# the user exports (the common ones and every name a runner script assigns,
# each with a hostile value) reaches all 4 ranks of 2 nodes byte for byte.
@test "the user's namespace through slurm srun: every exported name reaches all 4 ranks byte for byte" {
  load "$REPO_ROOT/tests/bats/helpers/user_names"
  mkdir out
  user_names_list
  user_names_env USER_NAMES_ENV
  run env "${USER_NAMES_ENV[@]}" timeout 300 "$PRIMUS_CLI" slurm srun -N 2 -- \
    direct --script "$REPO_ROOT/tests/fixtures/workloads/print_env.py" -- "$TEST_DIR/out" "${USER_NAMES[@]}"
  assert_success
  user_names_check out 0 1 2 3
}

@test "the user's namespace through slurm sbatch: every exported name reaches all 4 ranks byte for byte" {
  load "$REPO_ROOT/tests/bats/helpers/user_names"
  mkdir out
  user_names_list
  user_names_env USER_NAMES_ENV
  run env "${USER_NAMES_ENV[@]}" timeout 300 "$PRIMUS_CLI" slurm sbatch -N 2 --wait -o "$TEST_DIR/job.out" -- \
    direct --script "$REPO_ROOT/tests/fixtures/workloads/print_env.py" -- "$TEST_DIR/out" "${USER_NAMES[@]}"
  assert_success
  run cat "$TEST_DIR/job.out"
  assert_output --partial "print_env: rank 3 wrote"
  user_names_check out 0 1 2 3
}

@test "a full log disk under the Slurm entry: the run is unharmed (exit 0, every rank done), one warning names the disk" {
  local full=$TEST_DIR/full done=$TEST_DIR/done
  mkdir -p "$full" "$done"
  mount -t tmpfs -o size=1m primus-test-full "$full"
  run timeout 300 "$PRIMUS_CLI" slurm srun -N 1 -- direct --log_file "$full/run.log" \
    --script "$REPO_ROOT/tests/fixtures/workloads/fill_disk.py" -- "$done" "$full/filler" 0
  umount "$full" 2>/dev/null || umount -l "$full"
  echo "$output"
  assert_success
  [[ -e $done/done.0 && -e $done/done.1 ]]
  [[ $(grep -c "\[WARN\] cannot write the log file $full/.*: no space left on device" <<<"$output") -eq 1 ]]
  assert_output --partial "workload finished successfully"
}
