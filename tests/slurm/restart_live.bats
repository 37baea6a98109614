#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# The closed loop under Slurm, on the live 4-node test cluster (tests/slurm/run.sh starts
# it; run as `flock /tmp/slurm-suite.lock tests/slurm/run.sh -f 'restart'`;
# docs/restart-on-failure.md): `primus-cli slurm --spare-nodes 1 sbatch -N 3` with
# PRIMUS_ON_FAILURE=restart runs the embedded workload on 3 nodes (2 ranks each) and keeps
# node4 spare; a fault (PRIMUS_TRAIN_FAULT, test-only) on the first attempt; the batch
# script restarts the step without the failed node, from the last checkpoint. One job
# per test, 30 short steps.

load ../bats/helpers/launcher
load helpers/cluster

setup_file() {
  cluster_require
}

setup() {
  cluster_setup slurm-restart
  cluster_cpu_nodes
  # Each step its own port (derived from the job and step ids): the previous step's port
  # may still be held on node1 when the doctor pass checks it (docs/restart-on-failure.md).
  unset MASTER_PORT
  export PRIMUS_ON_FAILURE=restart PRIMUS_TRAIN_STEPS=30 PRIMUS_TRAIN_CHECKPOINT_EVERY=5 PRIMUS_KILL_GRACE=3
  CONFIG=$REPO_ROOT/examples/cpu_pretrain.yaml
}

teardown() {
  cluster_teardown
}

# submit: the job with one spare node, waited for; its output in $TEST_DIR/job.out.
submit() {
  SECONDS=0
  run timeout 400 "$PRIMUS_CLI" slurm --spare-nodes 1 sbatch -N 3 --wait -o "$TEST_DIR/job.out" -- direct \
    --module primus_runner -- train pretrain --config "$CONFIG"
  echo "sbatch: exit $status after $SECONDS s" && echo "$output"
  echo "# job took $SECONDS s" >&3
  grep -v '^\[default[1-9]\]' "$TEST_DIR/job.out" | grep -v ' hook \| base_env '
}

# reference_loss: the final loss of the same 6 ranks without a fault (local torchrun:
# the same ranks, seeds and world size).
reference_loss() {
  env -u PRIMUS_TRAIN_FAULT PYTHONPATH="$REPO_ROOT/python" PRIMUS_WORKSPACE="$TEST_DIR/reference" OMP_NUM_THREADS=1 \
    "$REPO_ROOT/.venv/bin/python" -m torch.distributed.run --nproc_per_node 6 --master_port "$(free_port)" \
    -m primus_runner train pretrain --config "$CONFIG" 2>/dev/null | sed -n 's/^\[train\] step 30\/30 loss //p'
}

# restarted_on HOSTS LEFT HOSTLIST: the second step ran on HOSTS with LEFT left out, resumed from a
# checkpoint and finished with the unfaulted loss; the time lost is printed and <= 90 s.
restarted_on() {
  local hosts=$1 left=$2 list=$3 line lost want got
  grep -q "restart loop: step on 3 node(s): node1,node2,node3; spare: node4" "$TEST_DIR/job.out"
  grep -q "restart loop: step on 3 node(s): $hosts (left out: $left)$" "$TEST_DIR/job.out"
  # (the doctor pass ran its own step in between)
  grep "slurm-entry: job [0-9]* step [1-9][0-9]*: " "$TEST_DIR/job.out" | grep -qF "3 node(s) $list, this is node 0 (node1)"
  grep -Eq '^\[default0\]:\[train\] resumed from step (5|10): .*/ckpt-step000000(05|10)\.pt$' "$TEST_DIR/job.out"
  line=$(grep "restart loop: restart 1 of 3: " "$TEST_DIR/job.out")
  [[ $line =~ nodes\ left\ out:\ $left\;\ time\ lost\ ([0-9.]+)\ s\ \(failure ]]
  lost=${BASH_REMATCH[1]}
  echo "# failure -> first resumed step: $lost s ($line)" >&3
  ((${lost%.*} <= 90))
  grep -Eq "restart loop: 1 restart\(s\) .*; left out for the rest of the job: $left \(for you to drain\); exit code 0\." "$TEST_DIR/job.out"
  grep -q '"event": "restart", .*"attempt": 1, .*"left_out": \["'"$left"'"\]' "$PRIMUS_WORKSPACE"/logs/*.events.jsonl
  want=$(reference_loss)
  got=$(sed -n 's/^\[default0\]:\[train\] step 30\/30 loss //p' "$TEST_DIR/job.out")
  echo "# final loss $got, unfaulted $want" >&3
  [[ -n $want && $got == "$want" ]]
}

@test "restart: a rank on node2 hung in a collective: the step resumes on node1, node3 and node4 from the last checkpoint, node2 left out, failure to first resumed step <= 90 s, the unfaulted loss" {
  export PRIMUS_TRAIN_FAULT=hang:3:12  # rank 3 (node2) sleeps at step 12; the others wait in all_reduce
  submit
  [[ $status -eq 0 ]]
  grep -q "\[NODE-1(node2)\] \[WARN\] run monitor: hang: rank 3 (pid [0-9]*) in _stuck_here" "$TEST_DIR/job.out"
  grep -q "restart loop: attempt 0 ended with exit code [0-9]*: the run monitor's hang verdict (suspect ranks 3)" "$TEST_DIR/job.out"
  grep -q "restart loop: doctor pass on node1,node3,node4: exit code 0 in [0-9.]* s; every node healthy" "$TEST_DIR/job.out"
  restarted_on node1,node3,node4 node2 'node[1,3-4]'
}

@test "restart: a rank on node3 SIGKILLed: the step resumes on node1, node2 and node4, node3 left out" {
  export PRIMUS_TRAIN_FAULT=kill:4:12  # rank 4 (node3) kills itself with SIGKILL at step 12
  submit
  [[ $status -eq 0 ]]
  grep -q "restart loop: attempt 0 ended with exit code [0-9]*: rank 4 on node3 was killed by signal 9" "$TEST_DIR/job.out"
  restarted_on node1,node2,node4 node3 'node[1-2,4]'
}

@test "restart: the budget spent (a fault on every try): the job ends with the budget named, no more restarts" {
  export PRIMUS_TRAIN_FAULT=kill:4:12:always PRIMUS_RESTART_MAX=1
  submit
  [[ $status -ne 0 ]]
  [[ $(grep -c "restart loop: attempt [0-9] ended" "$TEST_DIR/job.out") -eq 1 ]]
  grep -q "restart loop: step on 3 node(s): node1,node2,node4 (left out: node3)$" "$TEST_DIR/job.out"
  grep -Eq "restart loop: 1 restart\(s\) .*left out for the rest of the job: node3,node4 \(for you to drain\); not restarted: rank 4 on node4 was killed by signal 9 .*; the restart budget is spent: 1 of PRIMUS_RESTART_MAX=1 restarts done; exit code [0-9]+\." "$TEST_DIR/job.out"
  [[ $(grep -c "slurm-entry: job [0-9]* step [0-9]*: 3 node(s) .* this is node 0 " "$TEST_DIR/job.out") -eq 2 ]]
}

@test "restart: no spare and a failed node: the job is requeued with it excluded, and its next run resumes on the other nodes" {
  export PRIMUS_TRAIN_FAULT=hang:3:12
  SECONDS=0
  run timeout 400 "$PRIMUS_CLI" slurm sbatch -N 3 --requeue -o "$TEST_DIR/job.out" --open-mode=append -- direct \
    --module primus_runner -- train pretrain --config "$CONFIG"
  echo "$output"
  local job
  job=$(job_id_from_output)
  [[ -n $job ]]
  # The requeued run (SLURM_RESTART_COUNT=1: counted against the budget) ends the job.
  poll_until 300 grep -q "restart loop: 0 restart(s), 0.0 s lost in all; no node left out; exit code 0\.$" \
    "$TEST_DIR/job.out" || { cat "$TEST_DIR/job.out"; false; }
  echo "# job took $SECONDS s" >&3
  grep -q "not restarted: the run monitor's hang verdict (suspect ranks 3).*; 2 healthy node(s) left of 3, 3 needed: requeue with node2 excluded" "$TEST_DIR/job.out"
  grep -q "restart loop: job $job requeued with node2 excluded" "$TEST_DIR/job.out"
  grep -q "restart loop: step on 3 node(s): node1,node3,node4$" "$TEST_DIR/job.out"
  grep -Eq '^\[default0\]:\[train\] resumed from step (5|10): ' "$TEST_DIR/job.out"
  scontrol show job "$job" | grep -q "ExcNodeList=node2"
}
