#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031 # bats runs each test in a subshell
# The fleet doctor on the live Slurm cluster (tests/slurm/cluster.sh: node1..node4
# on 127.0.77.1-4, each with its own hostname; run with tests/slurm/run.sh):
# a healthy fleet exits 0; a node handed another host tree by the cluster's
# TaskProlog is named and excluded; a node made slow with tc (htb + u32 filter
# on the loopback, traffic to and from that node's address) is named by --probe
# with its figure and excluded, and nothing else is, run after run; with two
# nodes a slow pair names both as suspects and excludes neither. The tc change
# is always undone in teardown.

# REPO_ROOT, PRIMUS_CLI, bats-support/-assert and the cluster_* set-up.
load helpers/cluster

ODD_NODE=node3
# The slowed node: node2. All "nodes" share this host's loopback, where a
# connection's source address is 127.0.0.1 whoever opens it, so tc can only
# tell a node's traffic by its own listening address; gloo connects the higher
# address to the lower one, so node2 is slowed towards node3 and node4 and not
# towards node1: slow in some pairs only, the case where either end of a slow
# pair may be the slow one and the confirmation round decides.
SLOW_NODE=node2
# Its address on the cluster's network (tests/slurm/cluster.sh: PRIMUS_SLURM_NET).
SLOW_ADDR=${PRIMUS_SLURM_NET:-127.0.77}.2

setup_file() {
  cluster_require idle
}

setup() {
  # The nodes' own host trees and accelerator: what the doctor checks.
  cluster_setup doctor-live PRIMUS_SYSFS_ROOT PRIMUS_DEV_ROOT PRIMUS_ACCELERATOR
  export PRIMUS_PYTHON=$REPO_ROOT/.venv/bin/python
  TC_ADDED=0
}

teardown() {
  if ((TC_ADDED)); then
    tc qdisc del dev lo root 2>/dev/null || true
  fi
  rm -f "$PRIMUS_SLURM_DIR/etc/task_env/$ODD_NODE"
  cluster_teardown
}

# the last line of $output
last_line() { printf '%s\n' "${output##*$'\n'}"; }

@test "slurm doctor inside a 4-node salloc: every node checked, fleet healthy, exit 0, JSON of every check" {
  run salloc -N 4 --time=5 "$PRIMUS_CLI" slurm doctor --json "$TEST_DIR/fleet.json"
  echo "$output"
  assert_success
  assert_output --partial "phase 1/2: node checks on every node"
  assert_output --partial "phase 2/2: comparing the nodes"
  refute_output --regexp "phase [0-9]/(1|3)"
  assert_output --partial "[doctor] 4 node(s), 0 failed - fleet healthy"
  refute_output --partial -- "--exclude="
  run "$PRIMUS_PYTHON" -c 'import json,sys; r=json.load(open(sys.argv[1]))
print(sorted(x["host"] for x in r["reports"]), min(len(x["checks"]) for x in r["reports"]),
      sorted({c["value"][:9] for x in r["reports"] for c in x["checks"] if c["name"] == "clock offset"}))' \
    "$TEST_DIR/fleet.json"
  assert_success
  assert_output --regexp "^\['node1', 'node2', 'node3', 'node4'\] (1[0-9]) "
  # node 0 is the reference clock; the others measured an offset against it.
  assert_output --partial "this is n"
  assert_output --regexp "'[+-][0-9]"
}

@test "slurm doctor -N 4: a node handed another host tree (TaskProlog) is named against the majority and excluded" {
  printf 'export PRIMUS_SYSFS_ROOT=%s\nexport PRIMUS_DEV_ROOT=%s\n' \
    "$REPO_ROOT/tests/fixtures/sysfs/mi300x-2gpu" "$REPO_ROOT/tests/fixtures/sysfs/mi300x-2gpu" \
    >"$PRIMUS_SLURM_DIR/etc/task_env/$ODD_NODE"
  run "$PRIMUS_CLI" slurm doctor -N 4
  echo "$output"
  assert_failure 3
  # Ranked worst first: node3 heads the table with what differs from the majority.
  assert_line --regexp "^node3 +FAIL .*differs: accelerator: rocm \(majority: cpu\)"
  assert_output --partial "differs: devices: 2 (majority: 0)"
  assert_output --partial "[doctor] 4 node(s), 1 failed - leave them out:"
  [[ $(last_line) == "--exclude=node3" ]]
}

# slow_down ADDR: every packet to or from ADDR on lo through a 200 mbit/s class.
slow_down() {
  local qdisc
  qdisc=$(tc qdisc show dev lo)
  [[ $qdisc == *"noqueue"* || -z $qdisc ]] || {
    echo "lo already has a qdisc ($qdisc): not touching it" >&3
    return 1
  }
  tc qdisc add dev lo root handle 1: htb
  TC_ADDED=1
  tc class add dev lo parent 1: classid 1:1 htb rate 200mbit ceil 200mbit
  tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip dst "$1/32" flowid 1:1
  tc filter add dev lo parent 1: protocol ip prio 2 u32 match ip src "$1/32" flowid 1:1
}

@test "slurm doctor -N 4 --probe: a node slowed by tc (htb + u32 on lo) is named with its figure and excluded, alone" {
  slow_down "$SLOW_ADDR"
  # --ratio 0.5: 4 "nodes" share 2 cores here, so healthy pairs vary by up to
  # ~30%; the slowed node's pairs measure ~0.02x the reference.
  run "$PRIMUS_CLI" slurm doctor -N 4 --probe --ratio 0.5 --json "$TEST_DIR/fleet.json"
  echo "$output"
  assert_failure 3
  assert_output --partial "phase 1/3: node checks on every node"
  assert_output --partial "phase 2/3: probe on every node"
  assert_output --partial "phase 3/3: comparing the nodes"
  refute_output --regexp "phase [0-9]/(1|2)"
  assert_line --regexp "^$SLOW_NODE +FAIL +[0-9.e-]+ +[0-9]+ +0\.0[0-9] +probe: slow with a node known to be good: [0-9.e-]+ GB/s with node3"
  refute_output --partial "suspect"
  [[ $(last_line) == "--exclude=$SLOW_NODE" ]]
  # node4, slow with node2 too, was confirmed fast with node1: not excluded.
  run "$PRIMUS_PYTHON" -c 'import json,sys; r=json.load(open(sys.argv[1]))
print(" ".join(v["host"] + ":" + format(v["ratio"], ".2f") for v in r["ranking"]))
print(" ".join(sorted(p["peer"] + ":" + str(p["round"]) for x in r["reports"] if x["host"] == "node4"
                      for p in x["probe"]["pairs"])))' "$TEST_DIR/fleet.json"
  echo "$output"
  assert_line --index 0 --regexp "^$SLOW_NODE:0\.0[0-9] "
  assert_line --index 1 "node1:4 node2:2 node2:3 node3:1"
}

@test "slurm doctor -w node2,node3 --probe: a slow pair of two nodes names both as suspects and excludes neither" {
  slow_down "$SLOW_ADDR"
  # Two nodes are one pair, their own reference: only a floor calls it slow.
  run "$PRIMUS_CLI" slurm doctor -w node2,node3 --probe --floor-gbps 0.2
  echo "$output"
  assert_success
  assert_line --regexp "^node2 +suspect .*with two nodes a slow pair cannot say which end is slow"
  assert_line --regexp "^node3 +suspect "
  assert_output --partial "[doctor] suspect, not excluded: node2, node3"
  assert_output --partial "[doctor] 2 node(s), 0 failed - no node to leave out"
  refute_output --partial -- "--exclude="
}
