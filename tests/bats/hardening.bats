#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; '$' words are literal test data
# Hardening found by trying to break the launcher (issue 27): hostile workload
# words, hooks that hang, oversized values, unusual inputs.
bats_require_minimum_version 1.5.0

load helpers/launcher

setup() {
  launcher_setup
  mkdir -p out
}

teardown() {
  launcher_teardown
}

# HOSTILE: words torchrun's macro substitution would rewrite, and some more.
HOSTILE=('a$$b' '${local_rank}' '$local_rank' '$' '$$$' 'x${y}z' '$(id)' "it's" ' sp ace ')

@test "words after -- reach every torchrun rank byte for byte (\$, \$\$, \${local_rank} are not rewritten)" {
  export PRIMUS_T_ARGV_OUT=$PWD/out/argv GPUS_PER_NODE=2 MASTER_PORT
  MASTER_PORT=$(free_port)
  run "$PRIMUS_CLI" direct --script "$WORKLOADS/argv.py" -- "${HOSTILE[@]}"
  assert_success
  local rank
  for rank in 0 1; do
    diff <(tr '\0' '\n' <"out/argv.$rank") <(printf '%s\n' "${HOSTILE[@]}")
  done
}

@test "words after -- reach the --single process byte for byte" {
  export PRIMUS_T_ARGV_OUT=$PWD/out/argv
  run "$PRIMUS_CLI" direct --single --script "$WORKLOADS/argv.py" -- "${HOSTILE[@]}"
  assert_success
  diff <(tr '\0' '\n' <out/argv.0) <(printf '%s\n' "${HOSTILE[@]}")
}
