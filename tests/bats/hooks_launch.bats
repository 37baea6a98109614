#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell
# Hooks, framework preparation and patches through `primus-cli direct`
# (docs/hooks-and-patches.md "Hooks, gates and patches"): patch exit 2 lets the launch go on,
# PRIMUS_PATCHES never filters --patch scripts, --dry-run installs nothing, a
# MaxText experiment asks for one process per node (env.RUN_MODE=single), a
# Megatron experiment gets its data prepared once.

setup() {
  load helpers/launcher
  launcher_setup
  TOOLS=$REPO_ROOT/tests/fixtures/hooks/stubs/bin
  EXP=$REPO_ROOT/tests/fixtures/hooks/experiments
  export GPUS_PER_NODE=2 MASTER_PORT=29511 NCCL_SOCKET_IFNAME=lo GLOO_SOCKET_IFNAME=lo
  export STUB_LOG=$TEST_DIR/stub.log PATH="$TOOLS:$PATH" PRIMUS_PYTHON=$TOOLS/python3
  export REAL_PYTHON=$REPO_ROOT/.venv/bin/python PRIMUS_PATH=$TEST_DIR/repo DATA_PATH=$TEST_DIR/data
  export PRIMUS_THIRDPARTY_DIR=$TEST_DIR/third TMPDIR=$TEST_DIR
  unset PRIMUS_PATCHES PRIMUS_SKIP_PIP RUN_MODE MEGATRON_PATH MAXTEXT_PATH TOKENIZED_DATA_PATH
  mkdir -p "$TEST_DIR/repo" "$TEST_DIR/p"
  echo 'echo "env.PATCH_RAN=yes"' >"$TEST_DIR/p/ok.sh"
  printf '%s\n' 'echo "env.SKIP_SAID=1"' 'exit 2' >"$TEST_DIR/p/skip.sh"
}

teardown() {
  launcher_teardown
}

@test "direct: a patch exiting 2 is skipped and the launch goes on; PRIMUS_PATCHES=none does not stop --patch scripts" {
  PRIMUS_PATCHES=none run "$PRIMUS_CLI" direct --module primus_runner --dry-run --patch "$TEST_DIR/p/skip.sh" --patch "$TEST_DIR/p/ok.sh" -- preflight
  assert_success
  assert_output --partial "skip.sh skipped itself (exit 2)"
  assert_output --partial "patch $TEST_DIR/p/ok.sh done"
  assert_output --partial "command: "
}

@test "direct: a patch failing with another code stops the launch (exit 3)" {
  echo 'exit 5' >"$TEST_DIR/p/bad.sh"
  run "$PRIMUS_CLI" direct --module primus_runner --dry-run --patch "$TEST_DIR/p/bad.sh" --patch "$TEST_DIR/p/ok.sh" -- preflight
  assert_failure 3
  refute_output --partial "command: "
}

@test "direct --dry-run, every install gate on: no stub install, clone or build call is received" {
  export REBUILD_PRIMUS_TURBO=1 REBUILD_UEP=1 SDMA_ALL_GATHER=1 USING_AINIC=1 PRIMUS_AUTO_INSTALL=1
  export PRIMUS_INSTALL_EMERGING_OPTIMIZERS=1 PRIMUS_TURBO_SRC=$TEST_DIR/repo
  printf 'no-such-package-xyz\n' >"$TEST_DIR/repo/requirements.txt"
  mkdir -p "$TEST_DIR/Megatron-LM/megatron/core/datasets"
  echo 'all:' >"$TEST_DIR/Megatron-LM/megatron/core/datasets/Makefile"
  MEGATRON_PATH=$TEST_DIR/Megatron-LM run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- train pretrain --config "$EXP/megatron.yaml"
  assert_success
  assert_output --partial "command: "
  run cat "$STUB_LOG"
  refute_output --regexp '^pip (install|uninstall)'
  refute_output --regexp '^(git|gcc|make|apt-get) '
  [[ ! -e $TEST_DIR/data/bookcorpus && ! -e $TEST_DIR/libhip_attr_drain.so ]]
}

@test "direct: train pretrain with a MaxText experiment -> env.RUN_MODE=single from the hook (one process per node)" {
  PRIMUS_SKIP_PIP=1 run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- train pretrain --config "$EXP/maxtext.yaml"
  assert_success
  assert_output --partial "--backend_path $TEST_DIR/third/maxtext"
  # the launcher honours it: single mode, the script itself is the command (no torchrun)
  assert_output --partial "run_mode=single (RUN_MODE)"
  assert_line --regexp '\] command: [^ ]*python[^ ]* -m primus_runner train pretrain '
  refute_output --partial "torch.distributed.run"
  PRIMUS_SKIP_PIP=1 PRIMUS_LOG_LEVEL=DEBUG run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- train pretrain --config "$EXP/maxtext.yaml"
  assert_output --partial "hook prepare_experiment.sh: env RUN_MODE=single"
}

@test "direct: train pretrain with a Megatron experiment -> data prepared once, markers written, path passed on" {
  mkdir -p "$TEST_DIR/Megatron-LM/megatron/core/datasets"
  echo 'all:' >"$TEST_DIR/Megatron-LM/megatron/core/datasets/Makefile"
  local prefix=$TEST_DIR/data/bookcorpus/HuggingFaceTokenizer/bookcorpus_text_sentence
  PRIMUS_SKIP_PIP=1 MEGATRON_PATH=$TEST_DIR/Megatron-LM PRIMUS_SKIP_MAIN_LAUNCH=0 \
    run "$PRIMUS_CLI" direct --module primus_runner --env PRIMUS_SKIP_MAIN_LAUNCH=1 -- train pretrain --config "$EXP/megatron.yaml"
  assert_success
  [[ -s $prefix.bin && -s $prefix.idx && -s $prefix.done ]]
  PRIMUS_SKIP_PIP=1 MEGATRON_PATH=$TEST_DIR/Megatron-LM run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- train pretrain --config "$EXP/megatron.yaml"
  assert_success
  assert_output --partial "--train_data_path $prefix --backend_path $TEST_DIR/Megatron-LM"
}

@test "direct: a config naming no framework costs the hook no Python start; a required variable unset still stops the launch there" {
  # An interpreter that notes every start of the experiment module.
  printf '#!/usr/bin/env bash\n[[ " $* " == *" primus_runner.config.experiment "* ]] && echo start >>"%s"\nexec "%s" "$@"\n' \
    "$TEST_DIR/experiment.starts" "$TOOLS/python3" >"$TEST_DIR/python3"
  chmod +x "$TEST_DIR/python3"
  printf 'exp: ${PRIMUS_T_NAME:x}\nneeds: ${PRIMUS_T_NEEDED}\nmodules:\n  pre_trainer:\n    steps: 2\n' >"$TEST_DIR/exp.yaml"
  PRIMUS_T_NEEDED=1 PRIMUS_PYTHON=$TEST_DIR/python3 run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- \
    train pretrain --config "$TEST_DIR/exp.yaml"
  assert_success
  assert_output --partial "[prepare] $TEST_DIR/exp.yaml names no pre_trainer framework: no framework preparation."
  [[ ! -e $TEST_DIR/experiment.starts ]]
  # Unset, the hook's Python renders the file and names the variable (exit 2).
  PRIMUS_PYTHON=$TEST_DIR/python3 run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- \
    train pretrain --config "$TEST_DIR/exp.yaml"
  assert_failure 2
  assert_output --partial "needs PRIMUS_T_NEEDED"
  [[ $(wc -l <"$TEST_DIR/experiment.starts") == 1 ]]
  # A framework in the file: the hook's Python runs and dispatches it.
  rm -f "$TEST_DIR/experiment.starts"
  PRIMUS_SKIP_PIP=1 PRIMUS_PYTHON=$TEST_DIR/python3 run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- \
    train pretrain --config "$EXP/maxtext.yaml"
  [[ $(wc -l <"$TEST_DIR/experiment.starts") == 1 ]]
  assert_output --partial "framework maxtext"
}

@test "direct: an experiment naming no framework -> no preparation step runs" {
  run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- train pretrain --config "$EXP/no_framework.yaml"
  assert_success
  assert_output --partial "names no pre_trainer framework: no framework preparation"
  refute_output --partial "--backend_path"
  if [[ -e $STUB_LOG ]]; then
    run grep '^pip install' "$STUB_LOG"
    assert_failure
  fi
}

@test "direct: hooks and patches started by the hook runner (a subshell of the launcher) see none of its own variables" {
  # The runner is a subshell of the launcher: its state (PRIMUS_HR_*) and its
  # hand-over to the helper must not reach a hook's or a patch's environment.
  mkdir -p "$TEST_DIR/h"
  echo 'env | grep -c "^PRIMUS_HR_" >"$0.count" || true' >"$TEST_DIR/h/00_env.sh"
  echo 'env | grep -c "^PRIMUS_HR_" >"$0.count" || true' >"$TEST_DIR/p/env.sh"
  PRIMUS_HOOKS_DIR=$TEST_DIR/h run "$PRIMUS_CLI" direct --module primus_runner --dry-run --patch "$TEST_DIR/p/env.sh" -- preflight
  assert_success
  [[ $(<"$TEST_DIR/h/00_env.sh.count") == 0 ]] || fail "a hook saw $(<"$TEST_DIR/h/00_env.sh.count") PRIMUS_HR_ variable(s)"
  [[ $(<"$TEST_DIR/p/env.sh.count") == 0 ]] || fail "a patch saw $(<"$TEST_DIR/p/env.sh.count") PRIMUS_HR_ variable(s)"
}

@test "direct: an earlier hook's env. value reaches later hooks in a small and in a large environment; a name the launcher holds read-only is refused" {
  # The hook process exports the values itself in a small environment and
  # leaves them to env(1) in a large one (>= 200 variables).
  mkdir -p "$TEST_DIR/h"
  printf '%s\n' 'echo "env.HOOK_PLAIN=a b  c"' 'echo "env.HOOK_QUOTE=it'"'"'s \$HOME"' >"$TEST_DIR/h/00_set.sh"
  printf '%s\n' 'printf "%s|%s\n" "$HOOK_PLAIN" "$HOOK_QUOTE" >"$0.seen"' >"$TEST_DIR/h/01_see.sh"
  PRIMUS_HOOKS_DIR=$TEST_DIR/h run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
  assert_success
  [[ $(<"$TEST_DIR/h/01_see.sh.seen") == "a b  c|it's \$HOME" ]] || fail "small environment: the later hook saw '$(<"$TEST_DIR/h/01_see.sh.seen")'"
  rm -f "$TEST_DIR/h/01_see.sh.seen"
  local -a many=()
  for ((i = 0; i < 250; i++)); do many+=("PRIMUS_TEST_FILL_$i=$i"); done
  PRIMUS_HOOKS_DIR=$TEST_DIR/h run env "${many[@]}" "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
  assert_success
  [[ $(<"$TEST_DIR/h/01_see.sh.seen") == "a b  c|it's \$HOME" ]] || fail "large environment: the later hook saw '$(<"$TEST_DIR/h/01_see.sh.seen")'"
  # The launcher's own read-only names: a clear refusal (it was an opaque exit 1).
  echo 'echo "env.__PRIMUS_HELPER_MAIN=from hook"' >"$TEST_DIR/h/02_internal.sh"
  PRIMUS_HOOKS_DIR=$TEST_DIR/h run "$PRIMUS_CLI" direct --module primus_runner --dry-run -- preflight
  assert_failure 2
  assert_output --partial "'02_internal.sh' line 1: env.__PRIMUS_HELPER_MAIN names a read-only variable of primus-runner itself"
}

@test "hook runner: a name with an attribute that alters or refuses the value is not exported by the hook process" {
  run bash -c 'source "$1"; source "$2"; declare -u UPPER; __primus_hr_export_all PLAIN=x UPPER=abc' _ "$REPO_ROOT/runner/lib/common.sh" "$REPO_ROOT/runner/lib/hook_runner.sh"
  assert_failure 1
  run bash -c 'source "$1"; source "$2"; declare -i NUM; __primus_hr_export_all NUM=1+1' _ "$REPO_ROOT/runner/lib/common.sh" "$REPO_ROOT/runner/lib/hook_runner.sh"
  assert_failure 1
  run bash -c 'source "$1"; source "$2"; ARR=(x y); __primus_hr_export_all ARR=1' _ "$REPO_ROOT/runner/lib/common.sh" "$REPO_ROOT/runner/lib/hook_runner.sh"
  assert_failure 1
  run bash -c 'source "$1"; source "$2"; __primus_hr_export_all PLAIN="a b" OTHER=; env | grep -E "^(PLAIN|OTHER)="' _ "$REPO_ROOT/runner/lib/common.sh" "$REPO_ROOT/runner/lib/hook_runner.sh"
  assert_success
  assert_line "PLAIN=a b"
  assert_line "OTHER="
}
