#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell; wrapper text in single quotes
# Fail fast: what a dry run can know (the experiment config, the framework's
# checkout) is checked before any hook installs, builds or downloads. Real
# hooks, the real pip: the interpreter and `pip` on PATH are wrappers that note
# every pip run and then run the real one (with PIP_DRY_RUN and PIP_NO_INDEX,
# so even a pip that does run changes nothing and fetches nothing).

setup() {
  load helpers/launcher
  launcher_setup
  EXP=$REPO_ROOT/tests/fixtures/hooks/experiments
  WRAP=$TEST_DIR/wrap PIP_CALLS=$TEST_DIR/pip.calls
  mkdir -p "$WRAP" "$TEST_DIR/repo" "$TEST_DIR/data"
  local real=$REPO_ROOT/.venv/bin
  local name
  for name in python python3; do
    printf '#!/usr/bin/env bash\n[[ ${1-} != -m || ${2-} != pip ]] || echo "$*" >>%q\nexec %q "$@"\n' \
      "$PIP_CALLS" "$real/python" >"$WRAP/$name"
  done
  for name in pip pip3; do
    printf '#!/usr/bin/env bash\necho "pip $*" >>%q\nexec %q "$@"\n' "$PIP_CALLS" "$real/pip" >"$WRAP/$name"
  done
  chmod +x "$WRAP"/*
  export PATH="$WRAP:$PATH" PRIMUS_PYTHON=$WRAP/python3 PIP_DRY_RUN=1 PIP_NO_INDEX=1
  export PRIMUS_PATH=$TEST_DIR/repo DATA_PATH=$TEST_DIR/data PRIMUS_THIRDPARTY_DIR=$TEST_DIR/third
  export TMPDIR=$TEST_DIR
  unset PRIMUS_SKIP_PIP MEGATRON_PATH BACKEND_PATH TOKENIZED_DATA_PATH PIP_CACHE_DIR
  unset REBUILD_PRIMUS_TURBO REBUILD_BNXT REBUILD_UEP PRIMUS_AUTO_INSTALL SDMA_ALL_GATHER
}

teardown() {
  launcher_teardown
}

# launch_timed ARGS...: run primus-cli ARGS; TOOK = its wall time in ms.
launch_timed() {
  local start=${EPOCHREALTIME/[.,]/}
  run "$PRIMUS_CLI" "$@"
  TOOK=$(((${EPOCHREALTIME/[.,]/} - start) / 1000))
}

@test "a Primus config whose Megatron-LM is missing: exit 1 in seconds, no pip started" {
  launch_timed direct --module primus_runner -- train pretrain --config "$EXP/megatron.yaml"
  assert_failure 1
  assert_output --partial "megatron: the Megatron-LM checkout $TEST_DIR/third/Megatron-LM is missing or empty"
  [[ ! -e $PIP_CALLS ]]
  ((TOOK < 10000))
  # The wrappers see a pip run when there is one: with the checkout present
  # the requirements step starts the real pip (which finds nothing to install
  # without an index: exit 66 -> 1).
  mkdir -p "$TEST_DIR/Megatron-LM/megatron"
  MEGATRON_PATH=$TEST_DIR/Megatron-LM run "$PRIMUS_CLI" direct --module primus_runner -- \
    train pretrain --config "$EXP/megatron.yaml"
  assert_failure 1
  run cat "$PIP_CALLS"
  assert_output "-m pip install flash-linear-attention==0.5.2 causal-conv1d~=1.5"
}

@test "a hook that builds (REBUILD_PRIMUS_TURBO=1) waits for the launch's checks: no pip while Megatron-LM is missing" {
  mkdir -p "$TEST_DIR/turbo"
  export REBUILD_PRIMUS_TURBO=1 PRIMUS_TURBO_SRC=$TEST_DIR/turbo
  launch_timed direct --module primus_runner -- train pretrain --config "$EXP/megatron.yaml"
  assert_failure 1
  assert_output --partial "megatron: the Megatron-LM checkout $TEST_DIR/third/Megatron-LM is missing or empty"
  assert_output --partial "prepare_experiment.sh holds checks of this launch and ran first, in dry-run mode, before runner/helpers/hooks/00_rebuild_primus_turbo.sh"
  [[ ! -e $PIP_CALLS ]]
  ((TOOK < 10000))
  # With the checkout the checks pass and the build starts (its pip finds nothing to build).
  mkdir -p "$TEST_DIR/Megatron-LM/megatron"
  MEGATRON_PATH=$TEST_DIR/Megatron-LM run "$PRIMUS_CLI" direct --module primus_runner -- \
    train pretrain --config "$EXP/megatron.yaml"
  assert_failure
  assert_output --partial "prepare_experiment.sh checked first (dry run) in"
  run cat "$PIP_CALLS"
  assert_line "-m pip install --no-build-isolation ."
}

@test "hook runner: hooks declaring checks first run in dry-run mode before the first hook that installs, only then" {
  local dir=$TEST_DIR/hooks
  mkdir -p "$dir/g/n"
  printf '%s\n' '#!/usr/bin/env bash' '# primus-hook-installs: BUILD_IT' \
    'echo "build dry=${PRIMUS_DRY_RUN:-0}" >>"$MARKS"' >"$dir/10_build.sh"
  printf '%s\n' '#!/usr/bin/env bash' '# primus-hook-checks-first:' \
    'echo "check dry=${PRIMUS_DRY_RUN:-0}" >>"$MARKS"' 'exit 78' >"$dir/g/n/check.sh"
  export MARKS=$TEST_DIR/marks
  local hooks=("$REPO_ROOT/runner/helpers/execute_hooks.sh" --hooks-dir "$dir")
  # Nothing installs (BUILD_IT unset): no extra run.
  run "${hooks[@]}" g n
  assert_failure 2
  run cat "$MARKS"
  assert_output $'build dry=0\ncheck dry=0'
  # It installs: the check first, in dry-run mode; its failure stops the run before the build.
  rm "$MARKS"
  BUILD_IT=1 run "${hooks[@]}" g n
  assert_failure 2
  assert_output --partial "before $dir/10_build.sh, which installs"
  run cat "$MARKS"
  assert_output "check dry=1"
  # A dry run installs nothing: every hook once, in order.
  rm "$MARKS"
  BUILD_IT=1 run "${hooks[@]}" --dry-run g n
  assert_failure 2
  run cat "$MARKS"
  assert_output $'build dry=1\ncheck dry=1'
}
