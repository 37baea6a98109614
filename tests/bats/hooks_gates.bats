#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell; hook bodies are single-quoted on purpose
# Hook gate declarations (runner/lib/hook_gates.sh, execute_hooks.sh --help):
# what a hook needs to do anything (skip-when, needs-command, needs-file)
# closes it, and a closed built-in hook run by hand does nothing either, so not
# starting it loses nothing. The gate/when-unset lines: hooks.bats.

load hooks_helper

setup() { hooks_setup; }

# gated_hook FILE DECLARATION: a hook that leaves a marker named after FILE.
gated_hook() {
  printf '#!/usr/bin/env bash\n%s\ntouch "$MARK.%s"\n' "$2" "${1##*/}" >"$1"
}

# ran NAME: the hook NAME left its marker (and the marker is cleared).
ran() {
  [[ -e $MARK.$1 ]] || return 1
  rm -f "$MARK.$1"
}

@test "needs-command: closed unless the command is on the hook's PATH, an earlier hook's env.PATH included" {
  mkdir -p "$T/h" "$T/bin"
  gated_hook "$T/h/20_cmd.sh" '# primus-hook-needs-command: primus_t_tool'
  hooks --hooks-dir "$T/h" train pretrain
  assert_success
  ! ran 20_cmd.sh || fail "started without primus_t_tool on PATH"
  printf '#!/bin/sh\n' >"$T/bin/primus_t_tool"
  hooks --hooks-dir "$T/h" train pretrain
  ! ran 20_cmd.sh || fail "started with primus_t_tool not executable"
  chmod +x "$T/bin/primus_t_tool"
  PATH="$T/bin:$PATH" hooks --hooks-dir "$T/h" train pretrain
  assert_success
  ran 20_cmd.sh || fail "not started with primus_t_tool on PATH"
  echo "echo env.PATH=$T/bin:\$PATH" >"$T/h/10_path.sh"
  hooks --hooks-dir "$T/h" train pretrain
  assert_success
  ran 20_cmd.sh || fail "not started after an earlier hook put primus_t_tool on PATH"
}

@test "needs-file: the file must be in the directory of the first variable set; none set is no condition" {
  mkdir -p "$T/h" "$T/first" "$T/second"
  gated_hook "$T/h/20_file.sh" '# primus-hook-needs-file: req.txt in PRIMUS_T_FIRST PRIMUS_T_SECOND'
  hooks --hooks-dir "$T/h" train pretrain
  ran 20_file.sh || fail "not started with neither variable set"
  PRIMUS_T_SECOND=$T/second hooks --hooks-dir "$T/h" train pretrain
  ! ran 20_file.sh || fail "started without req.txt in the second directory"
  touch "$T/second/req.txt"
  PRIMUS_T_SECOND=$T/second hooks --hooks-dir "$T/h" train pretrain
  ran 20_file.sh || fail "not started with req.txt in the second directory"
  PRIMUS_T_FIRST=$T/first PRIMUS_T_SECOND=$T/second hooks --hooks-dir "$T/h" train pretrain
  assert_success
  ! ran 20_file.sh || fail "started: the first directory, which has no req.txt, decides"
  mkdir "$T/first/req.txt"
  PRIMUS_T_FIRST=$T/first hooks --hooks-dir "$T/h" train pretrain
  ! ran 20_file.sh || fail "started for a directory named req.txt"
}

@test "skip-when: closes a hook its gate opened; another value, an unset one or an earlier hook's env. line decide too" {
  mkdir -p "$T/h"
  gated_hook "$T/h/20_skip.sh" $'# primus-hook-gate: PRIMUS_T_ON\n# primus-hook-skip-when: PRIMUS_T_DONE=1 PRIMUS_T_OTHER=yes'
  PRIMUS_T_ON=1 PRIMUS_T_DONE=1 hooks --hooks-dir "$T/h" train pretrain
  assert_success
  ! ran 20_skip.sh || fail "started with PRIMUS_T_DONE=1"
  PRIMUS_T_ON=1 PRIMUS_T_OTHER=yes hooks --hooks-dir "$T/h" train pretrain
  ! ran 20_skip.sh || fail "started with PRIMUS_T_OTHER=yes"
  PRIMUS_T_ON=1 PRIMUS_T_DONE=0 hooks --hooks-dir "$T/h" train pretrain
  ran 20_skip.sh || fail "not started with PRIMUS_T_DONE=0"
  PRIMUS_T_ON=1 hooks --hooks-dir "$T/h" train pretrain
  ran 20_skip.sh || fail "not started with PRIMUS_T_DONE unset"
  PRIMUS_T_DONE=1 hooks --hooks-dir "$T/h" train pretrain
  ! ran 20_skip.sh || fail "started with its gate closed"
  echo 'echo env.PRIMUS_T_DONE=1' >"$T/h/10_done.sh"
  PRIMUS_T_ON=1 hooks --hooks-dir "$T/h" train pretrain
  assert_success
  ! ran 20_skip.sh || fail "started after an earlier hook set PRIMUS_T_DONE=1"
}

@test "built-in hooks closed by what they need do nothing when run by hand either, and the runner does not start them" {
  # 10_auto_nccl_net.sh after detection, with an RDMA device and empty lists.
  mkdir -p "$T/sys/sys/class/infiniband/mlx5_0/ports/1" "$T/repo" "$T/root"
  echo "4: ACTIVE" >"$T/sys/sys/class/infiniband/mlx5_0/ports/1/state"
  echo "primus-t-not-installed" >"$T/root/requirements.txt"
  local -a closed=(PRIMUS_DETECTION_DONE=1 PRIMUS_SYSFS_ROOT="$T/sys" NCCL_IB_HCA= MASTER_ADDR=10.0.0.1
    PRIMUS_PATH="$T/repo" PRIMUS_ROOT="$T/root" PATH=/usr/bin:/bin PRIMUS_STRICT_REQUIREMENTS=1)
  local hook
  for hook in 10_auto_nccl_net.sh 06_fix_aiter_asm_dir.sh 05_check_primus_requirements.sh; do
    run env "${closed[@]}" bash "$HOOKS/$hook"
    assert_success
    assert_output ""
  done
  # The same hooks open: each one does something (so the closed runs above could fail).
  run env PRIMUS_SYSFS_ROOT="$T/sys" NCCL_IB_HCA= bash "$HOOKS/10_auto_nccl_net.sh"
  assert_output --partial "env.NCCL_IB_HCA=mlx5_0"
  run env PRIMUS_ROOT="$T/root" PRIMUS_STRICT_REQUIREMENTS=1 PRIMUS_PYTHON="$REAL_PYTHON" bash "$HOOKS/05_check_primus_requirements.sh"
  assert_failure 66
  # Through the runner: none of the three is started.
  mkdir -p "$T/h"
  cp "$HOOKS/_lib.sh" "$HOOKS/10_auto_nccl_net.sh" "$HOOKS/06_fix_aiter_asm_dir.sh" "$HOOKS/05_check_primus_requirements.sh" "$T/h/"
  env "${closed[@]}" PRIMUS_LOG_LEVEL=DEBUG "$EXEC_HOOKS" --hooks-dir "$T/h" train pretrain >"$T/rec" 2>"$T/err" || fail "runner failed: $(cat "$T/err")"
  run grep -c 'skipped: its gate declarations close it' "$T/err"
  assert_output 3
  run grep -c 'starting' "$T/err"
  assert_output 0
}

@test "declarations read ahead (the launcher, while the helper starts) decide as the files read at the time" {
  run bash -c '
    source "$1/runner/lib/common.sh"; source "$1/runner/lib/hook_gates.sh"
    files=("$1"/runner/helpers/hooks/*.sh "$1"/runner/helpers/hooks/*/*/*.sh)
    vars=(USING_UEP REBUILD_BNXT USING_AINIC AITER_LOG_LEVEL PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND
      NCCL_IB_HCA NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME PRIMUS_DETECTION_DONE PRIMUS_HIPBLASLT_TUNING)
    N=() V=() n=0 differ=0
    for trial in 1 2 3 4 5 6 7 8; do
      for v in "${vars[@]}"; do case $(((RANDOM + trial) % 4)) in 0) unset "$v" ;; 1) export "$v=0" ;; 2) export "$v=1" ;; 3) export "$v=" ;; esac; done
      now=()
      for f in "${files[@]}"; do a=0; primus_hook_gate_open "$f" N V || a=1; now+=("$a"); done
      primus_hook_gates_preload "${files[@]}"
      i=0
      for f in "${files[@]}"; do
        b=0; primus_hook_gate_open "$f" N V || b=1
        n=$((n + 1)); [[ $b == "${now[i]}" ]] || { differ=$((differ + 1)); echo "differs: $f"; }
        i=$((i + 1))
      done
      __PRIMUS_GATE_DECLS=()
    done
    echo "compared $n read ahead: ${#files[@]} files, differences $differ"' _ "$ROOT"
  assert_success
  assert_output --regexp '^compared [0-9]+ read ahead: [0-9]+ files, differences 0$'
  [[ $(grep -o 'read ahead: [0-9]*' <<<"$output" | grep -o '[0-9]*$') -ge 12 ]]
}
