#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# primus-cli slurm and primus-cli-slurm-entry.sh without a cluster: flag
# spellings, config filling, dry-run output (srun and sbatch with its inner
# srun), the entry's refusals, MASTER_ADDR checks and a 16,384-host list.
# The live-cluster suite is tests/slurm/ (run by tests/slurm/run.sh).

# REPO_ROOT, SLURM_CLI, ENTRY, bats-support/-assert, launcher_setup and
# unset_scheduler_vars.
load helpers/launcher

setup() {
  launcher_setup
  unset_scheduler_vars
  export GPUS_PER_NODE=2
}

teardown() {
  launcher_teardown
}

# slurm_call: the line after "would run:" / "would submit" in the dry-run output.
slurm_call() {
  sed -n '/dry run: would \(run\|submit\)/{n;p;q}' <<<"$output"
}

# step_env NODES NODELIST NODEID [TASKS_PER_NODE]: export the variables srun
# sets in a one-task-per-node step (values written by hand from Slurm 22.05).
step_env() {
  local nodes=$1 list=$2 id=$3 tpn=${4:-1}
  export SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_JOB_NUM_NODES=$nodes SLURM_NNODES=$nodes
  export SLURM_STEP_NUM_NODES=$nodes SLURM_NODELIST=$list SLURM_JOB_NODELIST=$list
  export SLURM_STEP_NODELIST=$list SLURM_NODEID=$id SLURM_PROCID=$((id * tpn)) SLURM_LOCALID=0
  export SLURM_NTASKS=$((nodes * tpn)) SLURM_STEP_NUM_TASKS=$((nodes * tpn))
  export SLURM_STEP_TASKS_PER_NODE="$tpn(x$nodes)" SLURM_TASKS_PER_NODE="$tpn(x$nodes)"
}

# fake_hosts NAME...: the fake tree's etc/hosts knows NAME (MASTER_ADDR must
# resolve on every node but rank 0; the tree's hosts file decides, not DNS).
fake_hosts() {
  mkdir -p "$PRIMUS_SYSFS_ROOT/etc"
  local name i=1
  for name in "$@"; do printf '10.77.0.%d %s\n' "$((i++))" "$name"; done >>"$PRIMUS_SYSFS_ROOT/etc/hosts"
}

# path_without_scontrol: a PATH with every command of this machine but scontrol.
path_without_scontrol() {
  local dir=$TEST_DIR/noscontrol-bin f
  mkdir -p "$dir"
  for f in /usr/local/bin/* /usr/bin/* /usr/sbin/*; do
    [[ ${f##*/} == scontrol ]] && continue
    [[ -e $dir/${f##*/} ]] || ln -s "$f" "$dir/${f##*/}"
  done
  printf '%s' "$dir"
}

@test "slurm --help and slurm-entry --help print usage and exit 0" {
  run "$SLURM_CLI" --help
  assert_success
  assert_output --partial "Usage: primus-cli slurm"
  assert_output --partial "--srun-native"
  run "$ENTRY" --help
  assert_success
  assert_output --partial "srun --ntasks-per-node=1 runner/primus-cli-slurm-entry.sh"
}

@test "every spelling of -N is recognised: config slurm.nodes does not add --nodes" {
  printf 'slurm:\n  nodes: 7\n' >"$TEST_DIR/c.yaml"
  local -a spelling
  for s in "-N 4" "-N4" "--nodes 4" "--nodes=4"; do
    read -r -a spelling <<<"$s"
    run "$SLURM_CLI" --dry-run --config "$TEST_DIR/c.yaml" srun "${spelling[@]}" -- direct --module primus_runner -- preflight
    assert_success
    call=$(slurm_call)
    [[ $call == "srun $s --ntasks-per-node=1 --kill-on-bad-exit=1 $ENTRY "* ]] || {
      echo "spelling '$s' gave: $call"
      return 1
    }
    [[ $call != *--nodes=7* ]]
    assert_output --partial "node 0 of 4 would run"
    assert_output --partial "--nnodes 4 --node_rank 0"
  done
}

@test "config fills only the flags the user did not give (-t5 and -p given, nodes/gpus filled)" {
  printf 'slurm:\n  nodes: 3\n  time: "00:10:00"\n  partition: batch\n  gpus_per_node: 8\n' \
    >"$TEST_DIR/c.yaml"
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/c.yaml" srun -t5 -p debug -- direct --module primus_runner -- preflight
  assert_success
  assert_equal "$(slurm_call)" \
    "srun -t5 -p debug --nodes=3 --gpus-per-node=8 --ntasks-per-node=1 --kill-on-bad-exit=1 $ENTRY --config $TEST_DIR/c.yaml --no-srun-native direct --module primus_runner -- preflight"
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/c.yaml" srun --time 5 --partition=debug \
    --gpus-per-node 1 -- direct --module primus_runner -- preflight
  assert_success
  assert_equal "$(slurm_call)" \
    "srun --time 5 --partition=debug --gpus-per-node 1 --nodes=3 --ntasks-per-node=1 --kill-on-bad-exit=1 $ENTRY --config $TEST_DIR/c.yaml --no-srun-native direct --module primus_runner -- preflight"
}

@test "no config and no flags: only one task per node and kill-on-bad-exit are added" {
  run "$SLURM_CLI" --dry-run -- direct --module primus_runner -- preflight
  assert_success
  assert_equal "$(slurm_call)" \
    "srun --ntasks-per-node=1 --kill-on-bad-exit=1 $ENTRY --no-srun-native direct --module primus_runner -- preflight"
  run "$SLURM_CLI" --dry-run srun -N2 --ntasks-per-node=1 -K0 -- direct --module primus_runner -- preflight
  assert_success
  assert_equal "$(slurm_call)" "srun -N2 --ntasks-per-node=1 -K0 $ENTRY --no-srun-native direct --module primus_runner -- preflight"
}

@test "slurm.mode fills the mode when none is named; a workload word after -- becomes its workload" {
  printf 'slurm:\n  mode: container\n' >"$TEST_DIR/c.yaml"
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/c.yaml" srun -N2 -- --image x -- preflight
  call=$(slurm_call)
  [[ $call == *" --no-srun-native container --image x -- preflight" ]]
  printf 'slurm:\n  mode: direct\n' >"$TEST_DIR/d.yaml"
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/d.yaml" srun -N2 -- preflight
  call=$(slurm_call)
  [[ $call == *" --no-srun-native direct -- preflight" ]]
}

@test "sbatch dry-run prints the sbatch call and a batch script whose srun starts the entry on every node" {
  run "$SLURM_CLI" --dry-run sbatch -N 2 -o "out-%j.txt" -- direct --module primus_runner -- preflight
  assert_success
  assert_equal "$(slurm_call)" "sbatch -N 2 -o out-%j.txt --ntasks-per-node=1"
  assert_output --partial "export PRIMUS_RUNNER_DIR=\${PRIMUS_RUNNER_DIR:-$REPO_ROOT/runner}"
  assert_output --partial "srun --nodes=\"\$SLURM_JOB_NUM_NODES\" --ntasks-per-node=1 --kill-on-bad-exit=1 \"\$PRIMUS_RUNNER_DIR/primus-cli-slurm-entry.sh\" --no-srun-native direct --module primus_runner -- preflight"
  # ... and under it, the torchrun command node 0 would run.
  assert_output --partial "--nnodes 2 --node_rank 0 --master_addr dryrun-node1"
  assert_output --partial "--nproc_per_node 2"
}

@test "the batch script is valid bash and quotes workload values for bash" {
  run "$SLURM_CLI" --dry-run sbatch -N 2 -- direct --module primus_runner --env 'K=a b' -- train 'x y' '$(touch pwned)' '*'
  assert_success
  script=$(sed -n '/^----- batch script -----$/,/^----- end of batch script -----$/p' <<<"$output" | sed '1d;$d')
  bash -n <<<"$script"
  assert_line "srun --nodes=\"\$SLURM_JOB_NUM_NODES\" --ntasks-per-node=1 --kill-on-bad-exit=1 \"\$PRIMUS_RUNNER_DIR/primus-cli-slurm-entry.sh\" --no-srun-native direct --module primus_runner --env K=a\\ b -- train x\\ y \\\$\\(touch\\ pwned\\) \\* &"
  # srun in the background; a USR1/USR2 notice to the batch shell goes on to it.
  assert_line "trap 'primus_forward USR1' USR1"
  [[ ! -e pwned ]]
}

@test "--srun-native and slurm.srun_native reach the entry" {
  run "$SLURM_CLI" --dry-run --srun-native srun -N 2 --ntasks-per-node=2 -- direct --module primus_runner -- preflight
  assert_success
  [[ $(slurm_call) == "srun -N 2 --ntasks-per-node=2 --kill-on-bad-exit=1 $ENTRY --srun-native direct --module primus_runner -- preflight" ]]
  assert_output --partial "RANK=0 LOCAL_RANK=0 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 (no torchrun)"
  printf 'slurm:\n  srun_native: true\n' >"$TEST_DIR/c.yaml"
  run "$SLURM_CLI" --dry-run --config "$TEST_DIR/c.yaml" srun -N 2 -- direct --module primus_runner -- preflight
  [[ $(slurm_call) == *" --srun-native direct --module primus_runner -- preflight" ]]
}

@test "dry-run with -w simulates node 0 on the named first node" {
  run "$SLURM_CLI" --dry-run srun -w 'gpu[07-08]' -N 2 -- direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "--nnodes 2 --node_rank 0 --master_addr gpu07 "
}

@test "invalid -N value and a missing -- are usage errors (exit 2)" {
  run "$SLURM_CLI" srun -N many -- direct --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "-N/--nodes value 'many' is not a node count"
  run "$SLURM_CLI" srun -N 2
  assert_failure 2
  assert_output --partial "missing '--'"
}

@test "entry outside a Slurm job exits 2 and says how to start it" {
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "not inside a Slurm job: SLURM_JOB_ID is unset"
}

@test "entry in the batch script of a 4-node job (no srun) is refused: only one node would start" {
  export SLURM_JOB_ID=9 SLURM_JOB_NUM_NODES=4 SLURM_NNODES=4 SLURM_NODELIST='n[1-4]' SLURM_NODEID=0
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "running in the batch script of a 4-node job"
  assert_output --partial "srun --ntasks-per-node=1"
}

@test "entry dry-run on node 1 of 2: NODE_RANK 1, MASTER_ADDR the first node" {
  fake_hosts node1
  step_env 2 'node[1-2]' 1
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "--nnodes 2 --node_rank 1 --master_addr node1 "
  assert_output --regexp "\[NODE-1\([^)]*\)\] \[INFO\] slurm-entry: job 4242 step 0: 2 node\(s\) node\[1-2\], this is node 1"
}

@test "step variables beat job variables: a 2-node step in a 4-node job maps 2 nodes" {
  step_env 2 'node[3-4]' 0
  export SLURM_JOB_NUM_NODES=4 SLURM_NODELIST='node[1-4]' SLURM_JOB_NODELIST='node[1-4]'
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "--nnodes 2 --node_rank 0 --master_addr node3 "
}

@test "two tasks per node are refused with the fix; never several torchruns" {
  step_env 4 'node[1-4]' 0 2
  run "$ENTRY" --no-srun-native --dry-run direct --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "this step runs 8 tasks on 4 node(s) (SLURM_STEP_TASKS_PER_NODE=2(x4))"
  assert_output --partial "srun --ntasks-per-node=1"
  assert_output --partial "--srun-native"
  refute_output --partial "command: "
  # Without --no-srun-native the configuration decides (default: refuse).
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_failure 2
  export SLURM_PROCID=3
  run "$ENTRY" --no-srun-native --dry-run direct --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "refused: 8 tasks on 4 node(s); see task 0's message"
}

@test "srun-native: each task one worker from the Slurm ids, launched with --single" {
  fake_hosts node1
  step_env 2 'node[1-2]' 1 2
  export SLURM_PROCID=3 SLURM_LOCALID=1
  run "$ENTRY" --srun-native --dry-run direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "srun-native: worker RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 (no torchrun)"
  assert_output --partial "mode=single"
  refute_output --partial "torchrun --nproc_per_node"
}

@test "MASTER_ADDR as the first node's FQDN is accepted; another host is refused naming both" {
  step_env 2 'node[1-2]' 0
  export MASTER_ADDR=node1.cluster.example.com
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "--master_addr node1.cluster.example.com"
  export MASTER_ADDR=node2
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "node2"
  assert_output --partial "node1"
  assert_output --partial "MASTER_ADDR"
}

@test "a fragmented 16,384-host SLURM_NODELIST without scontrol: mapped, logged compressed" {
  fake_hosts gpu00001
  local ids
  ids=$(seq -s, -f '%05g' 1 2 32767)
  step_env 16384 "gpu[$ids]" 16383
  local nopath
  nopath=$(path_without_scontrol)
  refute env PATH="$nopath" bash -c "command -v scontrol"
  PATH=$nopath run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "--nnodes 16384 --node_rank 16383 --master_addr gpu00001 "
  assert_output --partial "slurm-entry: job 4242 step 0: 16384 node(s) gpu[00001,00003,"
  assert_output --partial "(${#SLURM_NODELIST} characters)"
  assert_output --partial "first host (expanded by the rank mapping)"
  refute_output --partial "gpu32767"
  ((${#output} < 20000))
}

@test "the entry takes the first host from scontrol when it answers" {
  # scontrol show hostnames only parses; a minimal config is enough.
  printf 'ClusterName=t\nSlurmctldHost=nowhere\nNodeName=n1\n' >"$TEST_DIR/slurm.conf"
  export SLURM_CONF=$TEST_DIR/slurm.conf
  step_env 4 'r[1-2]n[01-02]' 0
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "first host r1n01, mode direct"
  assert_output --partial "--master_addr r1n01 "
}

@test "the entry falls back quickly when scontrol cannot answer (missing SLURM_CONF file)" {
  export SLURM_CONF=$TEST_DIR/missing.conf
  step_env 2 'n[1-2]-ib' 0
  start=$SECONDS
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_success
  ((SECONDS - start < 30))
  assert_output --partial "first host (expanded by the rank mapping)"
  assert_output --partial "--master_addr n1-ib "
}

@test "secrets never show in the printed srun/sbatch call or batch script" {
  export MY_API_KEY=hunter2-value
  run "$SLURM_CLI" --dry-run sbatch -N 2 -- direct --module primus_runner --env HF_TOKEN=tok-abc123 --env "X=hunter2-value" -- preflight
  assert_success
  refute_output --partial "tok-abc123"
  refute_output --partial "hunter2-value"
  # The secret travels by name (sbatch's environment), not in the script.
  assert_output --partial "--env HF_TOKEN --env X=**** -- preflight"
  assert_output --partial "secrets HF_TOKEN (given with --env) travel in sbatch's environment"
  run "$SLURM_CLI" --dry-run srun -N 2 -- direct --module primus_runner --env WANDB_API_KEY=wb-secret-1 -- preflight
  assert_success
  refute_output --partial "wb-secret-1"
  assert_output --partial "direct --module primus_runner --env WANDB_API_KEY -- preflight"
}

# path_without_runtime: a PATH with every command of this machine but docker and podman.
path_without_runtime() {
  local dir=$TEST_DIR/noruntime-bin f
  mkdir -p "$dir"
  for f in /usr/local/bin/* /usr/bin/* /usr/sbin/* /bin/*; do
    case ${f##*/} in docker | podman) continue ;; esac
    [[ -e $dir/${f##*/} || -L $dir/${f##*/} ]] || ln -s "$f" "$dir/${f##*/}" 2>/dev/null || true
  done
  printf '%s' "$dir"
}

@test "slurm --dry-run of a container job on a host without docker or podman exits 0: the runtime is checked on the nodes" {
  local bin
  bin=$(path_without_runtime)
  PATH=$bin run "$REPO_ROOT/runner/primus-cli" slurm --dry-run srun -N 2 -- container -- train
  assert_success
  assert_output --partial "runtime: none on this host (neither docker with a running engine nor podman); checked on the nodes"
  assert_output --partial "command: docker-or-podman run --rm"
  assert_output --partial "dry run: nothing was submitted."
  refute_output --partial "would fail"
  # Where the container would start (the node itself), no runtime is still exit 1.
  PATH=$bin run "$REPO_ROOT/runner/primus-cli" --dry-run container -- train
  assert_failure 1
  assert_output --partial "no container runtime found"
}

@test "MASTER_PORT=auto under the Slurm entry: direct and container both take the job-derived port, on 2 nodes" {
  fake_hosts node1
  step_env 2 'node[1-2]' 0
  export MASTER_PORT=auto PATH=$REPO_ROOT/tests/fixtures/stubs:$PATH
  # 10000 + 2 * ((16 * SLURM_JOB_ID + SLURM_STEP_ID) mod 11384) for job 4242 step 0
  run "$ENTRY" --dry-run direct --module primus_runner -- preflight
  assert_success
  assert_output --partial "--nnodes 2 --node_rank 0 --master_addr node1 --master_port 31904 "
  run "$ENTRY" --dry-run container --runtime docker --image img -- --module primus_runner -- preflight
  assert_success
  assert_output --partial "scheduler ranks mapped on the host (slurm): MASTER_ADDR=node1 MASTER_PORT=31904 NNODES=2"
  assert_output --regexp "command: .* --env MASTER_PORT .* img "
}
