#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() and backticks are literal test data
# runner/helpers/numa_bind.sh: bind a local rank to its device's NUMA node with
# numactl (real numactl, apt package `numactl`), fall back to CPU affinity via
# psutil, warn and run unbound when neither works; exec so exit codes and
# signals pass through.

bats_require_minimum_version 1.5.0

load "$BATS_TEST_DIRNAME/../../node_modules/bats-support/load"
load "$BATS_TEST_DIRNAME/../../node_modules/bats-assert/load"

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
BIND="$ROOT/runner/helpers/numa_bind.sh"
FIX="$ROOT/tests/fixtures/sysfs"

setup() {
  export PRIMUS_LOG_COLOR=0 PRIMUS_LOG_TIMESTAMP=0 PRIMUS_LOG_LEVEL=INFO
  unset PRIMUS_SYSFS_ROOT PRIMUS_DEV_ROOT LOCAL_RANK PRIMUS_ACCELERATOR PRIMUS_GPU_MODEL
  unset PRIMUS_NEURON_INSTANCE HIP_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES CUDA_VISIBLE_DEVICES
  # The first CPU this test may use, and a fake CPU-only host with 64 NUMA nodes
  # (local rank R -> node R mod 64): node 0 and node 63 hold that CPU, node 62
  # only CPUs that do not exist. No real host has node 62 or 63, so numactl
  # cannot bind there and the fallbacks are exercised on any machine.
  FIRST_CPU=$(awk '/^Cpus_allowed_list/ {split($2, a, /[-,]/); print a[1]}' /proc/self/status)
  TREE=$BATS_TEST_TMPDIR/tree
  local node
  for ((node = 0; node < 64; node++)); do
    mkdir -p "$TREE/sys/devices/system/node/node$node"
    echo "$FIRST_CPU" >"$TREE/sys/devices/system/node/node$node/cpulist"
  done
  echo "100000-100003" >"$TREE/sys/devices/system/node/node62/cpulist"
}

# no_numactl_path: a PATH holding the tools the script needs, without numactl.
no_numactl_path() {
  local bin=$BATS_TEST_TMPDIR/bin tool
  mkdir -p "$bin"
  for tool in bash dirname sed grep cat hostname true echo; do
    ln -sf "$(type -P "$tool")" "$bin/$tool"
  done
  printf '%s' "$bin"
}

@test "numactl is installed here (apt package numactl)" {
  run command -v numactl
  assert_success
}

@test "binds with numactl --cpunodebind --membind on this machine" {
  run "$BIND" 0 -- numactl --show
  assert_success
  assert_line "policy: bind"
  assert_line --regexp "^nodebind: 0 ?$"
  assert_line --regexp "^membind: 0 ?$"
}

@test "LOCAL_RANK comes from the environment with the short form" {
  LOCAL_RANK=0 run "$BIND" -- numactl --show
  assert_success
  assert_line "policy: bind"
}

@test "without numactl the CPU affinity is set through psutil" {
  PATH=$(no_numactl_path) PRIMUS_SYSFS_ROOT=$TREE run "$BIND" 0 -- grep Cpus_allowed_list /proc/self/status
  assert_success
  assert_output --regexp "^Cpus_allowed_list:[[:space:]]+$FIRST_CPU\$"
}

@test "when numactl cannot bind (node absent here) the CPU affinity is the fallback" {
  PRIMUS_SYSFS_ROOT=$TREE run "$BIND" 63 -- grep Cpus_allowed_list /proc/self/status
  assert_success
  assert_output --regexp "^Cpus_allowed_list:[[:space:]]+$FIRST_CPU\$"
  refute_output --partial "WARN"
}

@test "when neither numactl nor the CPU affinity works it warns and runs unbound" {
  PRIMUS_SYSFS_ROOT=$TREE run "$BIND" 62 -- echo ran
  assert_success
  assert_line "ran"
  assert_output --partial "numactl cannot bind to node 62 here, and CPU affinity for node 62 (CPUs 100000-100003) was not set (empty); running local rank 62 unbound"
  PATH=$(no_numactl_path) PRIMUS_SYSFS_ROOT=$TREE run "$BIND" 62 -- echo ran
  assert_line "ran"
  assert_output --partial "numactl not on PATH, and CPU affinity for node 62"
}

@test "an MI300X rank is bound to its GPU's node (node 1 for GPU 5)" {
  PRIMUS_SYSFS_ROOT="$FIX/mi300x-roce" run "$BIND" 5 -- echo ran
  assert_success
  assert_line "ran"
  # Node 1 of the fixture has CPUs 48-95,144-191: either numactl binds to node 1
  # (a real two-node host) or the fallbacks say which node they tried.
  if ! numactl --cpunodebind=1 --membind=1 -- true 2>/dev/null; then
    assert_output --partial "CPU affinity for node 1 (CPUs 48-95,144-191)"
  fi
}

@test "no device for the rank: warns and runs unbound" {
  PRIMUS_SYSFS_ROOT="$FIX/mi300x-roce" run "$BIND" 8 -- echo ran
  assert_success
  assert_line "ran"
  assert_output --partial "no NUMA node known for local rank 8's device; running unbound"
}

@test "detection failure: warns and runs unbound" {
  PRIMUS_ACCELERATOR=tpu run "$BIND" 0 -- echo ran
  assert_success
  assert_line "ran"
  assert_output --partial "PRIMUS_ACCELERATOR='tpu'"
  assert_output --partial "device detection failed (see above); running local rank 0 unbound"
}

@test "exit codes and signals of the command pass through" {
  run "$BIND" 0 -- bash -c 'exit 7'
  assert_failure 7
  run "$BIND" 0 -- bash -c 'kill -TERM $$'
  assert_failure 143
  PATH=$(no_numactl_path) run "$BIND" 0 -- bash -c 'exit 9'
  assert_failure 9
}

@test "the command replaces the script (same PID, exec)" {
  run bash -c '"$1" 0 -- bash -c "echo \$\$" & echo "$!"; wait' _ "$BIND"
  assert_success
  [[ ${lines[0]} == "${lines[1]}" ]]
}

@test "arguments pass byte-for-byte and are never executed" {
  run "$BIND" 0 -- printf '<%s>\n' 'a b' '$(touch /tmp/pwned-numa)' '*' "semi;colon" $'new\nline'
  assert_success
  assert_output "$(printf '<%s>\n' 'a b' '$(touch /tmp/pwned-numa)' '*' "semi;colon" $'new\nline')"
  [[ ! -e /tmp/pwned-numa ]]
}

@test "bad arguments exit 2; a missing command exits 127; --help exits 0" {
  run "$BIND" abc -- true
  assert_failure 2
  assert_output --partial "LOCAL_RANK 'abc' is not a non-negative integer"
  run "$BIND" 0 true
  assert_failure 2
  assert_output --partial "expected '--' after LOCAL_RANK '0'"
  run "$BIND" 0 --
  assert_failure 2
  run "$BIND"
  assert_failure 2
  run -127 "$BIND" 0 -- /nonexistent/program
  assert_output --partial "command '/nonexistent/program' not found"
  run "$BIND" --help
  assert_success
  assert_output --partial "numactl --cpunodebind=N --membind=N"
}
