#!/usr/bin/env bats
# primus-cli env list|explain|check|docs (python/primus_runner/env/commands.py) through the
# real entry point, and a direct launch stopped by an env check error.

bats_require_minimum_version 1.5.0

setup() {
  load helpers/launcher
  launcher_setup
  PY=$REPO_ROOT/.venv/bin/python
  [[ -x $PY ]] || PY=python3
  TRN1=(PRIMUS_SYSFS_ROOT="$REPO_ROOT/tests/fixtures/sysfs/trn1.32xlarge"
    PRIMUS_DEV_ROOT="$REPO_ROOT/tests/fixtures/sysfs/trn1.32xlarge")
}

teardown() {
  launcher_teardown
}

# clean_env CMD...: run CMD with only PATH and HOME (plus what the caller adds before CMD
# as NAME=VALUE words).
clean_env() {
  env -i PATH="$PATH" HOME="$HOME" PRIMUS_LOG_COLOR=0 "$@"
}

@test "env explain prints type, default, where set and used, and the rules" {
  run "$PRIMUS_CLI" env explain MASTER_PORT
  assert_success
  assert_line --index 0 "MASTER_PORT"
  assert_output --partial "type:        port"
  assert_output --partial "default:     1234"
  assert_output --partial "set by:"
  assert_output --partial "used by:"
  assert_output --partial "forwarded (container allowlist)"
  assert_output --partial "[error] master_port_range: MASTER_PORT must be a whole number from 1024 to 65535"
}

@test "env explain of a deprecated Neuron name gives its replacement" {
  run "$PRIMUS_CLI" env explain NEURON_RT_NUM_CORES
  assert_success
  assert_output --partial "deprecated:"
  assert_output --partial "use NEURON_RT_VISIBLE_CORES or NEURON_LOGICAL_NC_CONFIG"
}

@test "env explain of a misspelt name exits 2 with the closest name" {
  run --separate-stderr "$PRIMUS_CLI" env explain NEURON_RT_VISIBLE_CORE
  assert_failure 2
  [[ $stderr == *"unknown variable 'NEURON_RT_VISIBLE_CORE'"* ]]
  [[ $stderr == *"Did you mean NEURON_RT_VISIBLE_CORES?"* ]]
}

@test "env list --format json parses as JSON and holds both references" {
  run --separate-stderr "$PRIMUS_CLI" env list --format json
  assert_success
  count=$(printf '%s' "$output" | "$PY" -c '
import json, sys
rows = json.load(sys.stdin)
names = {r["name"] for r in rows}
assert {"MASTER_ADDR", "SLURM_JOB_NUM_NODES", "NEURON_RT_LOG_LEVEL_<submodule>",
        "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "DOCKER_IMAGE"} <= names
print(len(rows))')
  ((count >= 219))
}

@test "env list --subsystem filters and a bad subsystem exits 2" {
  run "$PRIMUS_CLI" env list --subsystem slurm
  assert_success
  assert_line --index 1 --regexp '^SLURM_NNODES +uint'
  run "$PRIMUS_CLI" env list --subsystem nope
  assert_failure 2
}

@test "env check in a clean environment exits 0 and prints one line" {
  run --separate-stderr clean_env "$PRIMUS_CLI" env check
  assert_success
  assert_output "[env check] no problems found"
  [[ -z $stderr ]]
}

@test "env check of Neuron variables on a CPU host names the accelerator they are for and --accelerator neuron" {
  NEURON_LOGICAL_NC_CONFIG=2 run "$PRIMUS_CLI" env check
  assert_success
  assert_output --partial "NEURON_LOGICAL_NC_CONFIG='2': is a setting of the Neuron runtime (Trainium/Inferentia), but this host's accelerator is cpu"
  assert_output --partial "primus-cli env check --accelerator neuron"
  # The flag it names checks them: on trn1 an LNC of 2 is an error.
  NEURON_LOGICAL_NC_CONFIG=2 PRIMUS_NEURON_INSTANCE=trn1.32xlarge run "$PRIMUS_CLI" env check --accelerator neuron
  assert_failure 2
  assert_output --partial "ERROR NEURON_LOGICAL_NC_CONFIG='2'"
  refute_output --partial "accelerator is cpu"
}

@test "env check: an error exits 2 and names variable, value, reason and fix on stderr" {
  # env check resolves the accelerator as a launch does: a Neuron host.
  run --separate-stderr clean_env "${TRN1[@]}" NEURON_RT_DBG_DMA_PACKETIZATION_SIZE=2000000 "$PRIMUS_CLI" env check
  assert_failure 2
  assert_output ""
  [[ $stderr == *"[env check] ERROR NEURON_RT_DBG_DMA_PACKETIZATION_SIZE='2000000': "* ]]
  [[ $stderr == *"1048575"* ]]
  [[ $stderr == *"Fix: use at most 1048575"* ]]
}

@test "env check: a warning exits 0, and 2 with --strict" {
  run --separate-stderr clean_env "${TRN1[@]}" NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS=100 "$PRIMUS_CLI" env check
  assert_success
  [[ $stderr == *"WARNING NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS='100'"*"clamps it to 63"* ]]
  run --separate-stderr clean_env "${TRN1[@]}" NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS=100 "$PRIMUS_CLI" env check --strict
  assert_failure 2
  [[ $stderr == *"ERROR NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS='100'"*"[--strict]"* ]]
}

@test "env check --env-file: single quotes keep \$(...) as text, unquoted it is refused and never run; secrets masked" {
  # shellcheck disable=SC2016 # the $(...) must reach the file unexpanded
  printf '%s\n' '# job settings' "export PRIMUS_PATCHES='\$(touch pwned),,x'" \
    'NEURON_RT_API_TOKEN=abc-secret-123' >job.env
  run --separate-stderr clean_env "$PRIMUS_CLI" env check --env-file job.env --format json
  assert_success
  [[ ! -e pwned ]]
  # shellcheck disable=SC2016 # Python source, not shell
  printf '%s' "$output" | "$PY" -c '
import json, sys
report = json.load(sys.stdin)
values = {f["variable"]: f["value"] for f in report["findings"]}
assert values["PRIMUS_PATCHES"] == "$(touch pwned),,x", values
assert values["NEURON_RT_API_TOKEN"] == "****", values'
  [[ $output != *abc-secret-123* && $stderr != *abc-secret-123* ]]
  # shellcheck disable=SC2016 # the $(...) must reach the file unexpanded
  printf '%s\n' 'export PRIMUS_PATCHES=$(touch pwned),,x' >bad.env
  run --separate-stderr clean_env "$PRIMUS_CLI" env check --env-file bad.env
  assert_failure 2
  [[ $stderr == *"bad.env line 1 (PRIMUS_PATCHES)"*"never executed"* ]]
  [[ ! -e pwned ]]
}

@test "env docs writes the Markdown reference that docs/environment.md holds" {
  run "$PRIMUS_CLI" env docs --out "$TEST_DIR/environment.md"
  assert_success
  cmp "$TEST_DIR/environment.md" "$REPO_ROOT/docs/environment.md"
}

@test "a direct launch is stopped by an env check error before anything starts" {
  marker=$TEST_DIR/workload-started
  printf 'open("%s", "w").write("started")\n' "$marker" >workload.py
  run --separate-stderr env XLA_GPU_AUTOTUNE_LEVEL=0 "$PRIMUS_CLI" direct --single \
    --script workload.py -- train pretrain
  assert_failure 2
  [[ $stderr == *"ERROR XLA_GPU_AUTOTUNE_LEVEL='0'"* ]]
  [[ $stderr == *"nothing was started"* ]]
  [[ ! -e $marker ]]
  # The same launch without the bad value starts the workload.
  run --separate-stderr "$PRIMUS_CLI" direct --single --script workload.py -- train pretrain
  assert_success
  [[ -e $marker ]]
}

@test "env check and a direct dry run with an inherited PRIMUS_ROOT naming another tree still run the launcher's own package" {
  # The launch helper starts without the site step (python -S): no installed
  # copy of primus_runner stands in for the package next to the launcher.
  mkdir -p "$TEST_DIR/other/python"
  run clean_env PRIMUS_ROOT="$TEST_DIR/other" PRIMUS_RUNNER_DIR="$TEST_DIR/other" "$PRIMUS_CLI" env check
  assert_success
  refute_output --partial "No module named"
  run clean_env PRIMUS_ROOT="$TEST_DIR/other" GPUS_PER_NODE=1 PRIMUS_WORKSPACE="$TEST_DIR/ws" \
    "$PRIMUS_CLI" direct --dry-run --python "$PY" --module primus_runner -- preflight
  assert_success
  assert_output --partial "dry run: nothing was started"
}
