#!/usr/bin/env bats
# The user's namespace is theirs (docs/configuration.md "Your variables reach the ranks"):
# every name the user exports that is neither a name of the references nor a
# documented launcher name reaches every rank byte for byte. The names: the
# common ones (MODE, CONFIG, LOG_FILE, ...) and every name a script under
# runner/ assigns (tests/bats/helpers/user_names.bash), each with a hostile
# value; real torchrun (2 ranks, gloo) and run mode single. The container
# (podman) and Slurm (live cluster) cases are in container_podman.bats and
# tests/slurm/slurm_live.bats.

setup() {
  load helpers/launcher
  load helpers/user_names
  launcher_setup
  user_names_list
  user_names_env USER_NAMES_ENV
  mkdir out
}

teardown() {
  launcher_teardown
}

@test "the list holds the common names and the launcher's former globals, not the registry's" {
  local name
  for name in MODE CONFIG LOG_FILE ACTION TIMEOUT NODES SCRIPT ARGS NAME DEBUG VERBOSE DIR FILE \
    ROOT IMAGE OUTPUT WORKDIR CMD PORT BACKEND OPT_DRY_RUN OPT_SCRIPT RUN_CMD hint; do
    [[ " ${USER_NAMES[*]} " == *" $name "* ]] || { echo "missing $name"; return 1; }
  done
  for name in NNODES MASTER_ADDR GPUS_PER_NODE NCCL_DEBUG RUN_MODE PRIMUS_WORKSPACE PATH IFS; do
    [[ " ${USER_NAMES[*]} " != *" $name "* ]] || { echo "listed $name"; return 1; }
  done
  ((${#USER_NAMES[@]} > 100))
}

@test "direct, torchrun with 2 ranks: every exported name reaches both ranks byte for byte" {
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) run env "${USER_NAMES_ENV[@]}" \
    "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" "${USER_NAMES[@]}"
  assert_success
  user_names_check out 0 1
}

@test "direct started by a script in the background (SIGINT ignored on entry: the launcher restarts itself with it at its default): every name reaches both ranks" {
  # The restart is an exec: a local of the launcher alive then went with it into
  # the ranks under the user's name (line, mask: the SigIgn line of /proc).
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) run env "${USER_NAMES_ENV[@]}" \
    bash -c 'trap "" INT; exec "$@"' _ "$PRIMUS_CLI" direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" "${USER_NAMES[@]}"
  assert_success
  user_names_check out 0 1
}

@test "direct --single: every exported name reaches the process byte for byte" {
  MASTER_PORT=$(free_port) run env "${USER_NAMES_ENV[@]}" \
    "$PRIMUS_CLI" direct --single --script "$WORKLOADS/print_env.py" -- "$PWD/out" "${USER_NAMES[@]}"
  assert_success
  user_names_check out 0
}

@test "direct --single --numa (runner/helpers/numa_bind.sh in front): every exported name reaches the process" {
  MASTER_PORT=$(free_port) run env "${USER_NAMES_ENV[@]}" \
    "$PRIMUS_CLI" direct --single --numa --script "$WORKLOADS/print_env.py" -- "$PWD/out" "${USER_NAMES[@]}"
  assert_success
  assert_output --partial "numa binding: on (--numa)"
  user_names_check out 0
}

@test "direct --env NAME for every name: the helper and its records carry each value unchanged" {
  local -a forward=() name
  for name in "${USER_NAMES[@]}"; do forward+=(--env "$name"); done
  MASTER_PORT=$(free_port) run env "${USER_NAMES_ENV[@]}" \
    "$PRIMUS_CLI" direct --single "${forward[@]}" --script "$WORKLOADS/print_env.py" -- "$PWD/out" "${USER_NAMES[@]}"
  assert_success
  user_names_check out 0
}

@test "global flags before the mode, the same names: --debug --config before direct" {
  printf 'direct:\n  run_mode: single\n' >cfg.yaml
  MASTER_PORT=$(free_port) run env "${USER_NAMES_ENV[@]}" \
    "$PRIMUS_CLI" --debug --config cfg.yaml direct --script "$WORKLOADS/print_env.py" -- "$PWD/out" "${USER_NAMES[@]}"
  assert_success
  assert_output --partial "run_mode=single (config direct.run_mode)"
  user_names_check out 0
}

@test "PYTHONPATH, the one name of the user's the launch changes on purpose: the summary says how, the ranks see it so" {
  local mine="$TEST_DIR/my lib"
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) PYTHONPATH=$mine run "$PRIMUS_CLI" direct \
    --script "$WORKLOADS/print_env.py" -- "$PWD/out" PYTHONPATH
  assert_success
  assert_output --partial "  PYTHONPATH: $REPO_ROOT/python and $REPO_ROOT before yours (the reference's forced prepend); torchrun ranks also get $REPO_ROOT/runner/helpers/pystartup first"
  for rank in 0 1; do
    assert_equal "$(<"out/PYTHONPATH.$rank")" "$REPO_ROOT/runner/helpers/pystartup:$REPO_ROOT/python:$REPO_ROOT:$mine"
  done
  # Not set by the user: nothing to say.
  MASTER_PORT=$(free_port) run env -u PYTHONPATH "$PRIMUS_CLI" direct --dry-run --script "$WORKLOADS/print_env.py" -- x
  assert_success
  refute_output --partial "PYTHONPATH:"
}

@test "a hook's env. line of any name (cmd, fd, rc, rec, ...) reaches the rank: no local of the launcher takes it" {
  mkdir -p "$TEST_DIR/h"
  local name
  local -a hook_names=(cmd fd rc rec pair name item value dry patch)
  for name in "${hook_names[@]}"; do
    printf 'echo "env.%s=from hook %s"\n' "$name" "$name" >>"$TEST_DIR/h/00_emit.sh"
  done
  MASTER_PORT=$(free_port) PRIMUS_HOOKS_DIR=$TEST_DIR/h run env "${USER_NAMES_ENV[@]}" \
    "$PRIMUS_CLI" direct --single --script "$WORKLOADS/print_env.py" -- "$PWD/out" "${hook_names[@]}"
  assert_success
  for name in "${hook_names[@]}"; do
    assert_equal "$(<"out/$name.0")" "from hook $name"
  done
}
