#!/usr/bin/env bats
# `make demo` end to end: the embedded workload on 2 local processes through
# primus-cli direct -> torchrun -> DDP; loss falls; checkpoint written.

setup() {
  load helpers/launcher
  launcher_setup
  export MASTER_PORT
  MASTER_PORT=$(free_port)
}

teardown() {
  launcher_teardown
}

@test "make demo: 2 processes, loss falls, checkpoint present, exit 0" {
  run make -C "$REPO_ROOT" --no-print-directory demo
  assert_success
  assert_output --partial "world size 2"
  assert_output --partial "demo OK: "
  first=$(grep -m1 -o 'step 1/[0-9]* loss [0-9.]*' <<<"$output" | awk '{print $NF}')
  last=$(grep -o 'step [0-9]*/[0-9]* loss [0-9.]*' <<<"$output" | tail -n1 | awk '{print $NF}')
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'
  compgen -G "$PRIMUS_WORKSPACE/cpu_pretrain/checkpoints/*-step*.pt"
}

@test "a second training run keeps the first checkpoint" {
  export PRIMUS_TRAIN_STEPS=3
  run "$PRIMUS_CLI" direct --module primus_runner -- train pretrain --config "$REPO_ROOT/examples/cpu_pretrain.yaml"
  assert_success
  first=$(compgen -G "$PRIMUS_WORKSPACE/cpu_pretrain/checkpoints/*.pt")
  sum=$(md5sum "$first")
  export MASTER_PORT
  MASTER_PORT=$(free_port)
  run "$PRIMUS_CLI" direct --module primus_runner -- train pretrain --config "$REPO_ROOT/examples/cpu_pretrain.yaml"
  assert_success
  [[ $(compgen -G "$PRIMUS_WORKSPACE/cpu_pretrain/checkpoints/*.pt" | wc -l) -eq 2 ]]
  [[ $(md5sum "$first") == "$sum" ]]
}
