#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# Live Slurm: preemption notices, the stop grace and requeue (runner/lib/
# slurm_stop.sh, runner/lib/supervise.sh) on the test cluster of
# tests/slurm/cluster.sh (KillWait=2, JobRequeue=1). Run by tests/slurm/run.sh.
# The workload (tests/fixtures/workloads/signal_marker.py) writes one line per
# signal it receives to out/<SIGNAL>.<RANK>; GPUS_PER_NODE=2, so node1 runs
# ranks 0-1 and node2 ranks 2-3.

# REPO_ROOT, PRIMUS_CLI, bats-support/-assert, the cluster_* set-up,
# job_id_from_output and job_state.
load helpers/cluster

MARKER=$WORKLOADS/signal_marker.py

setup_file() {
  cluster_require
}

setup() {
  cluster_setup slurm-stop PRIMUS_KILL_GRACE
  cluster_cpu_nodes
  OUT=$TEST_DIR/out
  mkdir -p "$OUT"
}

teardown() {
  cluster_teardown
}

# wait_state JOB STATE SECONDS
wait_state() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    [[ $(job_state "$1") == "$2" ]] && return 0
    sleep 0.1
  done
  echo "job $1 is $(job_state "$1"), not $2, after $3 s; output:" >&2
  cat "$TEST_DIR"/job.out >&2 2>/dev/null
  return 1
}

# wait_ranks SECONDS RANK...: until every rank wrote its pid file.
wait_ranks() {
  local limit=$1 i r ok
  shift
  for ((i = 0; i < limit * 10; i++)); do
    ok=1
    for r in "$@"; do [[ -f $OUT/pid.$r ]] || ok=0; done
    ((ok)) && return 0
    sleep 0.1
  done
  echo "ranks $* did not start; output:" >&2
  cat "$TEST_DIR"/job.out >&2 2>/dev/null
  return 1
}

count() {
  [[ -f $OUT/$1.$2 ]] || { echo 0; return; }
  wc -l <"$OUT/$1.$2" | tr -d ' '
}

# usr1_once_each WHAT JOB: once JOB's 4 ranks run, scancel --signal=USR1 JOB;
# each of them (WHAT: rank or worker, for the message) got it exactly once.
usr1_once_each() {
  local r
  wait_ranks 120 0 1 2 3
  sleep 1
  scancel --signal=USR1 "$2"
  sleep 3
  for r in 0 1 2 3; do
    [[ $(count SIGUSR1 "$r") == 1 ]] || { echo "$1 $r got SIGUSR1 $(count SIGUSR1 "$r") times" >&2; return 1; }
  done
}

# ancestor PID TEXT: the nearest ancestor of PID whose command line has TEXT.
ancestor() {
  local pid=$1 stat cmd
  while [[ $pid -gt 1 ]]; do
    stat=$(<"/proc/$pid/stat") || return 1
    stat=${stat##*) }
    read -r _ pid _ <<<"$stat"
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $cmd == *"$2"* ]] && { echo "$pid"; return 0; }
  done
  return 1
}

@test "scancel --signal=USR1 reaches every rank on 2 nodes once; USR2 to one node's entry or launcher reaches that node's ranks once; the job goes on and completes" {
  run timeout 60 "$PRIMUS_CLI" slurm sbatch -N 2 -o "$TEST_DIR/job.out" -- direct \
    --script "$MARKER" -- "$OUT" --duration 40
  assert_success
  job=$(job_id_from_output)
  usr1_once_each rank "$job"
  [[ $(job_state "$job") == RUNNING ]]
  # Only node1's entry: its ranks 0 and 1 get it once, node2's none.
  entry=$(ancestor "$(<"$OUT/pid.0")" primus-cli-slurm-entry.sh)
  kill -USR2 "$entry"
  sleep 3
  [[ $(count SIGUSR2 0) == 1 && $(count SIGUSR2 1) == 1 ]]
  [[ $(count SIGUSR2 2) == 0 && $(count SIGUSR2 3) == 0 ]]
  # Only node2's direct launcher: ranks 2 and 3.
  launcher=$(ancestor "$(<"$OUT/pid.2")" primus-cli-direct.sh)
  kill -USR2 "$launcher"
  sleep 2
  local r
  for r in 0 1 2 3; do
    [[ $(count SIGUSR2 "$r") == 1 ]] || { echo "rank $r got SIGUSR2 $(count SIGUSR2 "$r") times" >&2; false; }
  done
  [[ $(job_state "$job") == RUNNING ]]
  wait_state "$job" COMPLETED 90
  run cat "$TEST_DIR/job.out"
  assert_output --regexp "\[NODE-0\(node1\)\] \[INFO\] SIGUSR1: sender: Slurm \(delivered to every process of the step\); every rank already has it"
  assert_output --regexp "\[NODE-0\(node1\)\] \[INFO\] SIGUSR2 \(sender: slurm-entry \(forwarded\)\): forwarded once to 2 of 2 local rank"
  assert_output --regexp "\[NODE-1\(node2\)\] \[INFO\] SIGUSR2 \(sender: unknown .*forwarded once to 2 of 2 local rank"
  assert_output --regexp "\[NODE-1\(node2\)\] \[INFO\] slurm-entry: launcher finished: exit status 0"
  for r in 0 1 2 3; do
    [[ $(count SIGTERM "$r") == 0 ]]
  done
}

# wait_count SIGNAL N SECONDS RANK...: until every rank counted SIGNAL N times.
wait_count() {
  local sig=$1 want=$2 limit=$3 i r ok
  shift 3
  for ((i = 0; i < limit * 10; i++)); do
    ok=1
    for r in "$@"; do [[ $(count "$sig" "$r") == "$want" ]] || ok=0; done
    ((ok)) && return 0
    sleep 0.1
  done
  return 1
}

@test "scancel --signal=USR1 --batch (a B:USR1 notice) to a --requeue job: the batch shell forwards it, every rank gets it once, the job is requeued, never FAILED" {
  run timeout 60 "$PRIMUS_CLI" slurm sbatch -N 2 --requeue -o "$TEST_DIR/job.out" -- direct \
    --script "$MARKER" -- "$OUT" --duration 30
  assert_success
  job=$(job_id_from_output)
  wait_ranks 120 0 1 2 3
  scancel --signal=USR1 --batch "$job"
  wait_count SIGUSR1 1 30 0 1 2 3 || { cat "$TEST_DIR/job.out" >&2; false; }
  # The notice with --requeue is a preemption: the ranks end cleanly and the
  # entry requeues the job (before the fix the batch shell died: FAILED, signal 10).
  local i
  for ((i = 0; i < 900; i++)); do
    grep -q "requeue: job $job is being requeued" "$TEST_DIR/job.out" 2>/dev/null && break
    [[ $(job_state "$job") != FAILED ]] || break
    sleep 0.1
  done
  [[ $(job_state "$job") != FAILED ]]
  run cat "$TEST_DIR/job.out"
  assert_output --partial "received SIGUSR1 (batch step notice); forwarded to its step (srun)"
  assert_output --partial "requeue: job $job is being requeued (preemption notice SIGUSR1"
  scancel "$job"
  local r
  for r in 0 1 2 3; do
    [[ $(count SIGUSR1 "$r") == 1 && $(count SIGTERM "$r") == 0 ]]
  done
}

@test "srun-native: scancel --signal=USR1 reaches each of the 4 workers once, USR2 to one entry reaches its worker once" {
  run timeout 60 "$PRIMUS_CLI" slurm --srun-native sbatch -N 2 --ntasks-per-node=2 -o "$TEST_DIR/job.out" \
    -- direct --script "$MARKER" -- "$OUT" --duration 25
  assert_success
  job=$(job_id_from_output)
  usr1_once_each worker "$job"
  entry=$(ancestor "$(<"$OUT/pid.3")" primus-cli-slurm-entry.sh)
  kill -USR2 "$entry"
  sleep 3
  [[ $(count SIGUSR2 3) == 1 && $(count SIGUSR2 0) == 0 && $(count SIGUSR2 2) == 0 ]]
  wait_state "$job" COMPLETED 90
}

@test "slurm.signal=USR1@50 with a 3-minute limit: every rank gets USR1 before the end and the job completes" {
  # Slurm may send the notice up to 60 s early (sbatch(1)): with 3 minutes it
  # comes 70-130 s after the start, once the ranks run even on a loaded host (a
  # 1-minute limit let it come before torchrun had started the ranks).
  printf 'slurm:\n  signal: USR1@50\n' >"$TEST_DIR/cfg.yaml"
  run timeout 60 "$PRIMUS_CLI" --config "$TEST_DIR/cfg.yaml" slurm sbatch -N 2 --time=3 \
    -o "$TEST_DIR/job.out" -- direct --script "$MARKER" -- "$OUT" --exit-on-notice 0
  assert_success
  assert_output --partial -- "--signal=USR1@50"
  job=$(job_id_from_output)
  wait_state "$job" COMPLETED 240
  local r
  for r in 0 1 2 3; do
    [[ $(count SIGUSR1 "$r") == 1 ]] || { echo "rank $r got SIGUSR1 $(count SIGUSR1 "$r") times" >&2; false; }
  done
  run cat "$TEST_DIR/job.out"
  refute_output --partial "CANCELLED"
}

@test "slurm.requeue: a workload exiting with the requeue code 85 is requeued once; its second run sees SLURM_RESTART_COUNT=1 and finishes" {
  printf 'slurm:\n  requeue: true\n' >"$TEST_DIR/cfg.yaml"
  run timeout 60 "$PRIMUS_CLI" --config "$TEST_DIR/cfg.yaml" slurm sbatch -N 2 --open-mode=append \
    -o "$TEST_DIR/job.out" -- direct --script "$MARKER" -- "$OUT" --requeue-first 85 --duration 2
  assert_success
  assert_output --regexp "sbatch -N 2 --open-mode=append -o [^ ]+ --requeue "
  job=$(job_id_from_output)
  wait_state "$job" COMPLETED 240
  local r
  for r in 0 1 2 3; do
    run cat "$OUT/restart.$r"
    assert_output $'unset\n1'
  done
  run cat "$TEST_DIR/job.out"
  # Every rank exits 85 at once: node 0 sees its own ranks' code, or, when
  # node 1 ended first and srun cancelled the step, node 1's marker.
  assert_output --regexp "\[NODE-0\(node1\)\] \[WARN\] slurm-entry: requeue: job $job is being requeued \((the workload|a rank on another node) exited with the requeue code 85"
  [[ $(grep -c "slurm-entry: requeue: job $job is being requeued" <<<"$output") == 1 ]]
  assert_output --regexp "slurm-entry: job $job step 0: 2 node\(s\) node\[1-2\], this is node 0 .*, restart 0"
  assert_output --regexp "slurm-entry: job $job step 0: 2 node\(s\) node\[1-2\], this is node 0 .*, restart 1"
  [[ $(scontrol show job -o "$job" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p') == 1 ]]
}

@test "KillWait (2 s here) becomes the grace: scancel of a 2-node job stops every rank within KillWait - 1 s" {
  [[ $(scontrol show config | sed -n 's/^KillWait *= *\([0-9]*\).*/\1/p') == 2 ]]
  run timeout 60 "$PRIMUS_CLI" slurm sbatch -N 2 -o "$TEST_DIR/job.out" -- direct \
    --script "$MARKER" -- "$OUT" --term-delay 0.2
  assert_success
  job=$(job_id_from_output)
  wait_ranks 120 0 1 2 3
  # Stopped within the grace or killed at its end (a loaded 2-core host can
  # take longer than 1 s to end torchrun): either way by our SIGKILL at 1 s,
  # before Slurm's at KillWait.
  scancel "$job"
  wait_state "$job" CANCELLED 30
  sleep 1
  run cat "$TEST_DIR/job.out"
  assert_output --regexp "\[NODE-0\(node1\)\] \[INFO\] stop grace 1 s \(KillWait 2 s from scontrol show config, minus 1 s\)"
  assert_output --regexp "\[NODE-1\(node2\)\] \[WARN\] stop: SIGTERM, sender: Slurm \(delivered to every process of the step\); (ranks? [0-9, ]+ still running at the stop; )?[0-9]+ process\(es\) stopped( within the|, killed after the) 1 s grace"
  local r
  for r in 0 1 2 3; do
    (($(count SIGTERM "$r") >= 1))
  done
}

# wait_gone PID SECONDS: until PID (a child of this test) has ended.
wait_gone() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "process $1 still runs after $2 s; output:" >&2
  cat "$TEST_DIR/job.out" >&2 2>/dev/null
  return 1
}

@test "kill -TERM of 'primus-cli slurm srun': every rank gets SIGTERM and finishes its checkpoint within the grace (srun would SIGKILL them); exit 143 is reported" {
  # scancel --signal does not escalate: the grace is the launchers' own (8 s).
  # Rank 0's checkpoint takes 3 s, the others' none: node2 is done first, and
  # its exit must not make srun (--kill-on-bad-exit) kill node1 mid-checkpoint.
  export PRIMUS_KILL_GRACE=8
  setsid "$PRIMUS_CLI" slurm srun -N 2 -- direct --script "$MARKER" -- "$OUT" --term-delay 0.2 \
    --term-delay-rank 0 3 >"$TEST_DIR/job.out" 2>&1 &
  local pid=$! rc=0 r
  wait_ranks 120 0 1 2 3
  kill -TERM "$pid"
  wait_gone "$pid" 60
  wait "$pid" || rc=$?
  run cat "$TEST_DIR/job.out"
  echo "exit status $rc" >&2
  [[ $rc == 143 ]]
  for r in 0 1 2 3; do
    (($(count SIGTERM "$r") >= 1)) || { echo "rank $r got no SIGTERM" >&2; false; }
    [[ -s $OUT/stopped.$r ]] || { echo "rank $r did not finish its checkpoint" >&2; false; }
  done
  refute_output --partial "forcing job termination"
  refute_output --regexp "\[ERROR\].*CANCELLED"
  assert_output --regexp "\[NODE-1\(node2\)\] \[WARN\] slurm-entry: job [0-9]+ step 0: SIGTERM sent to the step, not a cancel of the job"
  # node2 was done first; it waited out the grace instead of ending the step.
  assert_output --regexp "\[NODE-1\(node2\)\] \[INFO\] slurm-entry: the job goes on \(only its step was signalled\): this task exits when the 8 s stop grace has passed"
  assert_output --regexp "\[WARN\] SIGTERM received: sent to every task of step [0-9]+\.0 \(scancel --signal=TERM\), not to srun"
  assert_output --regexp "\[NODE-0\(node1\)\] \[WARN\] stop: SIGTERM, sender: Slurm \(delivered to every process of the step\); .* within the 8 s grace, none killed; exit status 143"
  assert_output --regexp "\[NODE-1\(node2\)\] \[WARN\] stop: SIGTERM, sender: Slurm \(delivered to every process of the step\); .* within the 8 s grace, none killed; exit status 143"
  assert_output --regexp "\[WARN\] srun \(step [0-9]+\.0\) ended after SIGTERM: exit status 143\."
}

@test "scontrol requeue of a running job: every rank gets SIGTERM, each node's entry logs a requeue line and no ERROR ... CANCELLED" {
  run timeout 60 "$PRIMUS_CLI" slurm sbatch -N 2 --open-mode=append -o "$TEST_DIR/job.out" -- direct \
    --script "$MARKER" -- "$OUT" --term-delay 0.3
  assert_success
  job=$(job_id_from_output)
  wait_ranks 120 0 1 2 3
  scontrol requeue "$job"
  # The batch shell's last line comes once the step has ended on both nodes.
  local i r
  for ((i = 0; i < 600; i++)); do
    grep -q "srun of job $job exited with status" "$TEST_DIR/job.out" 2>/dev/null && break
    sleep 0.1
  done
  run cat "$TEST_DIR/job.out"
  assert_output --partial "srun of job $job exited with status"
  for r in 0 1 2 3; do
    (($(count SIGTERM "$r") >= 1)) || { echo "rank $r got no SIGTERM" >&2; false; }
  done
  assert_output --regexp "\[NODE-0\(node1\)\] \[WARN\] slurm-entry: job $job step 0 requeued \(scontrol requeue, or a preemption that requeues\): SIGTERM received on this node; .* runs again as restart 1\."
  assert_output --regexp "\[NODE-1\(node2\)\] \[WARN\] slurm-entry: job $job step 0 requeued \(scontrol requeue, or a preemption that requeues\): SIGTERM received on this node; .* runs again as restart 1\."
  refute_output --regexp "\[ERROR\].*CANCELLED"
  [[ $(scontrol show job -o "$job" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p') == 1 ]]
}
