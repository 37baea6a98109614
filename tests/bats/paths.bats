#!/usr/bin/env bats
# primus_dir_of and primus_abs_path (runner/lib/common.sh): the launch path's
# dirname(1) and `cd DIR && pwd` without a process, checked against the tools.

load "$BATS_TEST_DIRNAME/../../node_modules/bats-support/load"
load "$BATS_TEST_DIRNAME/../../node_modules/bats-assert/load"

setup() {
  REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  COMMON=$REPO_ROOT/runner/lib/common.sh
}

@test "primus_dir_of gives what dirname(1) gives" {
  local p d
  for p in a a/ /a /a/b/ a/b//c a//b //a / // ./x ../x x/../.. "a b/c d" "sp ace/" "x/y/z.log" "/only/"; do
    d=$(bash -c 'source "$1"; primus_dir_of out "$2"; printf %s "$out"' _ "$COMMON" "$p")
    [[ $d == "$(dirname -- "$p")" ]] || fail "primus_dir_of '$p' gave '$d', dirname '$(dirname -- "$p")'"
  done
}

@test "primus_abs_path gives what realpath -m -s (cd && pwd, symlinks kept) gives" {
  mkdir -p "$BATS_TEST_TMPDIR/real/sub" && ln -s real "$BATS_TEST_TMPDIR/link"
  cd "$BATS_TEST_TMPDIR"
  local p d
  for p in . .. a/../b /x/./y/../z /.. link/sub link/sub/.. "with space/x" "$BATS_TEST_TMPDIR//real/./sub/"; do
    d=$(bash -c 'source "$1"; primus_abs_path out "$2"; printf %s "$out"' _ "$COMMON" "$p")
    [[ $d == "$(realpath -m -s -- "$p")" ]] || fail "primus_abs_path '$p' gave '$d', realpath '$(realpath -m -s -- "$p")'"
  done
}

@test "the launcher works started as a relative path, through a symlink, and from its own folder" {
  ln -s "$REPO_ROOT/runner/primus-cli" "$BATS_TEST_TMPDIR/pc"
  run "$BATS_TEST_TMPDIR/pc" --version
  assert_success
  cd "$REPO_ROOT/runner"
  run ./primus-cli --version
  assert_success
  run bash primus-cli --version
  assert_success
}
