#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell; patch bodies are single-quoted on purpose
# Patches (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/execute_patches.sh): execute_patches.sh runs every given
# patch in order with the hook protocol; exit 2 = skipped, continue;
# PRIMUS_PATCHES is not read (it selects Primus's Python patches).

load hooks_helper

setup() { hooks_setup; }

make_patches() {
  mkdir -p "$T/p"
  echo 'echo "env.PATCH_A=1"' >"$T/p/fix_a.sh"
  echo 'print("extra.patched=b c")' >"$T/p/fix_b.py"
  echo 'echo "env.PATCH_C=$PRIMUS_DRY_RUN"' >"$T/p/fix_c.sh"
  printf '%s\n' 'echo "env.SKIPPED_SAID=yes"' 'echo "nothing to do here" >&2' 'exit 2' >"$T/p/skip.sh"
}

@test "patches: all given patches run in order with the hook protocol" {
  make_patches
  patches "$T/p/fix_a.sh" "$T/p/fix_b.py" "$T/p/fix_c.sh"
  assert_success
  run records
  assert_output "env PATCH_A=1
extra patched=b c
env PATCH_C="
}

@test "patches: PRIMUS_PATCHES (none, a list, all) does not select --patch scripts: every one runs" {
  make_patches
  for value in none fix_zz all ""; do
    PRIMUS_PATCHES=$value patches "$T/p/fix_a.sh" "$T/p/fix_c.sh"
    assert_success
    run records
    assert_output "env PATCH_A=1
env PATCH_C="
    run errors
    refute_output --partial PRIMUS_PATCHES
  done
}

@test "patches: exit 2 means skipped: its lines still apply, the next patch runs, exit 0" {
  make_patches
  patches "$T/p/skip.sh" "$T/p/fix_a.sh"
  assert_success
  run records
  assert_output "env SKIPPED_SAID=yes
env PATCH_A=1"
  run errors
  assert_output --partial 'nothing to do here'
  assert_output --regexp "patch .*/p/skip\.sh skipped itself \(exit 2\)"
}

@test "patches: --dry-run reaches the patches; a missing patch file is exit 1; a failing patch exit 3" {
  make_patches
  patches --dry-run "$T/p/fix_c.sh"
  assert_success
  run records
  assert_output 'env PATCH_C=1'
  patches "$T/p/nope.sh"
  assert_failure 1
  echo 'exit 9' >"$T/p/bad.sh"
  patches "$T/p/fix_a.sh" "$T/p/bad.sh" "$T/p/fix_c.sh"
  assert_failure 3
  run errors
  assert_output --partial "patch '$T/p/bad.sh' failed with exit code 9"
  run records
  refute_output --partial PATCH_C
}

@test "patches: --help documents exit 2 and that PRIMUS_PATCHES is not read" {
  run "$EXEC_PATCHES" --help
  assert_success
  assert_output --partial '2      skipped'
  assert_output --partial 'PRIMUS_PATCHES is not read here'
}
