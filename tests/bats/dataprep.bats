#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell; hook bodies are single-quoted on purpose
# `python3 -m primus_runner data prepare|wait|status` from the shell, as two
# "nodes" on one machine sharing a directory (Primus docs, environment variables, section 8).

load "$BATS_TEST_DIRNAME/../../node_modules/bats-support/load"
load "$BATS_TEST_DIRNAME/../../node_modules/bats-assert/load"

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"

setup() {
  T=$BATS_TEST_TMPDIR
  export PRIMUS_LOG_COLOR=0 PRIMUS_LOG_TIMESTAMP=0
  unset TOKENIZED_DATA_PATH TOKENIZED_TRAIN_DATA_PATH TOKENIZED_EVAL_DATA_PATH PRIMUS_TOKENIZED_DATA_PATH
  unset PRIMUS_DATA_PREP_TIMEOUT_SECONDS PRIMUS_DATA_PREP_FAULT NODE_RANK LOCAL_RANK SLURM_JOB_ID TORCHELASTIC_RUN_ID
  # shellcheck source=runner/lib/common.sh
  source "$ROOT/runner/lib/common.sh"
  printf 'one two\n\nthree\n' >"$T/corpus.txt"
  PREFIX="$T/shared/data/corpus/byte/corpus_text_document"
}

data() {
  primus_python data "$@" --corpus "$T/corpus.txt" --workspace "$T/shared"
}

@test "data prepare: node 1 waits for node 0, then both report the same data" {
  NODE_RANK=1 data prepare >"$T/n1.out" 2>&1 &
  local n1=$!
  local i
  for ((i = 0; i < 1200; i++)); do
    grep -q 'waiting for node rank 0' "$T/n1.out" 2>/dev/null && break
    sleep 0.05
  done
  run grep -c 'waiting for node rank 0' "$T/n1.out"
  assert_output 1
  PRIMUS_DATA_PREP_FAULT=sleep:0.3 NODE_RANK=0 run data prepare
  assert_success
  assert_line 'train_tokens=14'
  wait "$n1"
  run cat "$T/n1.out"
  assert_line 'train_tokens=14'
  assert_line "train_prefix=$PREFIX"
  # "one two" + EOD, "three" + EOD as uint16 little-endian.
  assert_equal "$(od -An -tu2 -v "$PREFIX.bin" | tr -s " \n" " ")" " 111 110 101 32 116 119 111 256 116 104 114 101 101 256 "
}

@test "data prepare: node 0 failure stops node 1 with the reason; status reports it" {
  NODE_RANK=0 PRIMUS_DATA_PREP_FAULT='fail:no space left' run data prepare
  assert_failure 3
  assert_output --partial 'failed: no space left'
  NODE_RANK=1 run data prepare
  assert_failure 3
  assert_output --partial 'no space left'
  run data status
  assert_failure 3
  assert_line 'state=failed'
}

@test "data wait: PRIMUS_DATA_PREP_TIMEOUT_SECONDS=2 gives the timeout error" {
  PRIMUS_DATA_PREP_TIMEOUT_SECONDS=2 run data wait
  assert_failure 3
  assert_output --partial 'timed out after 2 s (PRIMUS_DATA_PREP_TIMEOUT_SECONDS)'
  PRIMUS_DATA_PREP_TIMEOUT_SECONDS=soon run data wait
  assert_failure 2
  assert_output --partial "PRIMUS_DATA_PREP_TIMEOUT_SECONDS='soon' is not a positive number of seconds"
}

@test "data prepare: TOKENIZED_DATA_PATH chooses the output prefix; a rerun reuses it" {
  TOKENIZED_DATA_PATH="$T/out/my data" run data prepare
  assert_success
  assert_line "train_prefix=$T/out/my data"
  [[ -f "$T/out/my data.bin" && -f "$T/out/my data.idx" && -f "$T/out/my data.done" ]]
  TOKENIZED_DATA_PATH="$T/out/my data" run data prepare
  assert_success
  assert_output --partial 'reusing the tokenized data'
}

@test "data --help lists the actions" {
  run primus_python data --help
  assert_success
  assert_output --partial 'prepare'
  assert_output --partial 'status'
  run primus_python data prepare --help
  assert_success
  assert_output --partial 'node rank 0 / local rank 0 prepares'
}
