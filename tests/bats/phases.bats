#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# A launch that explains its time (python/primus_runner/monitor/phases.py): one
# waterfall line at the start of the run, each phase a `phase` event in the
# run's record beside the log, and with NNODES=2 node 0 names the slowest node
# per phase. Two nodes are simulated on this host: two real launches (real
# torchrun, gloo) with NODE_RANK 0 and 1 sharing MASTER_ADDR/PORT and the
# workspace, as a Slurm job's nodes share a filesystem.

setup() {
  load helpers/launcher
  launcher_setup
  OUT=$TEST_DIR/out
  mkdir -p "$OUT"
  WL=$WORKLOADS/monitor_cases.py
}

teardown() {
  launcher_teardown
}

PHASES_RE='launch phases: plan [0-9.]+s \| layers [0-9.]+s \| hooks [0-9.]+s \| verdict [0-9.]+s \| spawn [0-9.]+s \| rendezvous [0-9.]+s \| first output [0-9.]+s$'

@test "a 2-rank launch prints one waterfall line before the run's end and writes each phase to its record, in order" {
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) STEP_S=0.2 \
    run timeout 150 "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" steps 3
  assert_success
  [[ $(grep -cE "$PHASES_RE" <<<"$output") -eq 1 ]]
  # At the start of the run: before the ranks' last line.
  [[ $(grep -nE "$PHASES_RE" <<<"$output" | cut -d: -f1) -lt $(grep -n "rank 0 done" <<<"$output" | cut -d: -f1) ]]
  log=$(compgen -G "$PRIMUS_WORKSPACE/logs/primus-*-node0.log")
  grep -qE "$PHASES_RE" "$log"
  record=${log%.log}.events.jsonl
  # One event per phase, each starting where the one before ended, none negative,
  # the first at the launch's start.
  "$REPO_ROOT/.venv/bin/python" - "$record" <<'PY'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if '"phase"' in line]
names = [e["phase"] for e in events]
assert names == ["plan", "layers", "hooks", "verdict", "spawn", "rendezvous", "first_output"], names
for before, after in zip(events, events[1:]):
    assert after["start"] == before["end"], (before, after)
assert all(e["end"] >= e["start"] for e in events)
assert all(e["launch_start"] == events[0]["start"] for e in events)
assert events[-1]["end"] - events[0]["start"] < 120
PY
}

@test "a launch in run mode single: the line stops at spawn (the run's process is the rank); the closing line stays last" {
  GPUS_PER_NODE=1 timeout 120 "$PRIMUS_CLI" direct --single --script "$WORKLOADS/signal_marker.py" -- "$OUT" \
    --stop-file "$OUT/stop" >launch.out 2>&1 &
  launcher=$!
  single_re='launch phases: plan [0-9.]+s \| layers [0-9.]+s \| hooks [0-9.]+s \| verdict [0-9.]+s \| spawn [0-9.]+s$'
  poll_until 60 grep -qE "$single_re" launch.out || { cat launch.out; false; }
  touch "$OUT/stop"
  rc=0
  wait "$launcher" || rc=$?
  cat launch.out
  [[ $rc -eq 0 ]]
  [[ $(grep -cE "$single_re" launch.out) -eq 1 ]]
  tail -n 1 launch.out | grep -q "workload finished successfully"
}

@test "two nodes, node 1's hook slowed by 5 s: node 0's log names node 1 in the hooks phase" {
  mkdir hooks1
  printf '#!/bin/bash\n# slow on purpose (phases.bats)\nsleep 5\n' >hooks1/01_slow.sh
  chmod +x hooks1/01_slow.sh
  export NNODES=2 MASTER_ADDR=127.0.0.1 MASTER_PORT GPUS_PER_NODE=1 STEP_S=0.2
  MASTER_PORT=$(free_port)
  NODE_RANK=0 timeout 180 "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" steps 3 >node0.out 2>&1 &
  node0=$!
  NODE_RANK=1 PRIMUS_HOOKS_DIR=$PWD/hooks1 timeout 180 "$PRIMUS_CLI" direct --script "$WL" -- "$OUT" steps 3 \
    >node1.out 2>&1 &
  node1=$!
  rc0=0 rc1=0
  wait "$node0" || rc0=$?
  wait "$node1" || rc1=$?
  cat node0.out node1.out
  [[ $rc0 -eq 0 && $rc1 -eq 0 ]]
  grep -qE "$PHASES_RE" node1.out
  line=$(grep "launch phases, slowest node of 2: " node0.out)
  [[ $line =~ \|\ hooks\ node\ 1\ ([0-9.]+)s\ \(fastest\ ([0-9.]+)s\) ]]
  awk -v slow="${BASH_REMATCH[1]}" -v fast="${BASH_REMATCH[2]}" 'BEGIN { exit !(slow >= 5 && fast < 5) }'
  [[ $line != *"no record from"* ]]
  # Node 0's log has it too; node 1 prints no job-wide line.
  grep -q "launch phases, slowest node of 2: .*| hooks node 1 " "$PRIMUS_WORKSPACE"/logs/primus-*-node0.log
  run grep -c "slowest node" node1.out
  [[ $output == 0 ]]
}
