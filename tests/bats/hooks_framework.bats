#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell
# Framework preparation of `train pretrain` / `train posttrain` (as upstream
# AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/train/) through execute_hooks.sh with the real hooks: framework from
# --backend or the experiment config, per-framework steps, backend paths,
# Megatron data prepared once with the markers, RUN_MODE=single for JAX.
# pip, make and git are PATH stubs recording their arguments.

load hooks_helper

EXP="$FIX/experiments"

setup() {
  hooks_setup
  export PATH="$TOOLS:$PATH" STUB_OUT=$T/stub-out PRIMUS_PYTHON=$TOOLS/python3
  export PRIMUS_PATH=$T/repo DATA_PATH=$T/data PRIMUS_THIRDPARTY_DIR=$T/third
  unset MEGATRON_PATH MAXTEXT_PATH MAXDIFFUSION_PATH TORCHTITAN_PATH BACKEND_PATH TOKENIZED_DATA_PATH
  unset PRIMUS_INSTALL_EMERGING_OPTIMIZERS NVTE_FRAMEWORK JAX_COORDINATOR_IP JAX_COORDINATOR_PORT PIP_CACHE_DIR
  mkdir -p "$STUB_OUT" "$T/repo"
}

# megatron_checkout: a Megatron-LM tree with the dataset helpers' Makefile.
megatron_checkout() {
  mkdir -p "$T/Megatron-LM/megatron/core/datasets"
  echo 'all:' >"$T/Megatron-LM/megatron/core/datasets/Makefile"
  export MEGATRON_PATH=$T/Megatron-LM
}

@test "no --config: a warning, nothing prepared, no python started" {
  hooks train pretrain --data_path x
  assert_success
  [[ ! -s $T/rec && ! -e $STUB_LOG ]]
  run errors
  assert_output --partial "train pretrain without --config: no framework preparation"
}

@test "a config naming no framework: nothing prepared, no tool called" {
  hooks train pretrain --config "$EXP/no_framework.yaml"
  assert_success
  [[ ! -s $T/rec && ! -e $STUB_LOG ]]
  run errors
  assert_output --partial "names no pre_trainer framework: no framework preparation"
}

@test "--backend names the framework; contradicting the config is exit 2; a missing config is exit 1" {
  PRIMUS_SKIP_PIP=1 hooks train pretrain --config "$EXP/no_framework.yaml" --backend maxtext
  assert_failure 2
  run errors
  assert_output --partial "maxtext: the experiment config $EXP/no_framework.yaml sets no pre_trainer dataset_type"
  hooks train pretrain --config "$EXP/maxtext.yaml" --backend megatron
  assert_failure 2
  run errors
  assert_output --partial "--backend megatron contradicts pre_trainer.framework: maxtext"
  hooks train pretrain --config "$T/none.yaml"
  assert_failure 1
  run errors
  assert_output --partial "experiment config '$T/none.yaml' (train pretrain --config) does not exist"
}

@test "megatron: pip step, data prepared once with .done marker, extra.train_data_path and backend_path, make" {
  megatron_checkout
  local prefix=$T/data/bookcorpus/HuggingFaceTokenizer/bookcorpus_text_sentence
  hooks train pretrain --config "$EXP/megatron.yaml"
  assert_success
  run records
  assert_output "extra train_data_path=$prefix
extra backend_path=$T/Megatron-LM"
  [[ -s $prefix.bin && -s $prefix.idx && -s $prefix.done && ! -e $prefix.failed ]]
  run stub_calls
  assert_output "pip install flash-linear-attention==0.5.2 causal-conv1d~=1.5
make -C $T/Megatron-LM/megatron/core/datasets"
  run errors
  assert_output --partial "preparing the tokenized data at $prefix"
  local stamp
  stamp=$(stat -c %Y.%s "$prefix.bin")
  rm -f "$STUB_LOG"
  NODE_RANK=1 PRIMUS_SKIP_PIP=1 hooks train pretrain --config "$EXP/megatron.yaml"
  assert_success
  run records
  assert_line "extra train_data_path=$prefix"
  PRIMUS_SKIP_PIP=1 hooks train pretrain --config "$EXP/megatron.yaml"
  assert_success
  run errors
  assert_output --partial "reusing the tokenized data at $prefix"
  [[ $(stat -c %Y.%s "$prefix.bin") == "$stamp" ]]
}

@test "megatron: a failing preparation writes the .failed marker and stops the launch (exit 3)" {
  megatron_checkout
  local prefix=$T/data/bookcorpus/HuggingFaceTokenizer/bookcorpus_text_sentence
  PRIMUS_SKIP_PIP=1 PRIMUS_DATA_PREP_FAULT='fail:disk full' hooks train pretrain --config "$EXP/megatron.yaml"
  assert_failure 3
  [[ -s $prefix.failed && ! -e $prefix.done ]]
  grep -q 'disk full' "$prefix.failed"
}

@test "megatron: mock_data -> no dataset; TOKENIZED_DATA_PATH wins; missing Megatron-LM is exit 1" {
  megatron_checkout
  PRIMUS_SKIP_PIP=1 hooks train pretrain --config "$EXP/megatron_mock.yaml"
  assert_success
  run records
  assert_output "extra backend_path=$T/Megatron-LM"
  [[ ! -e $T/data/bookcorpus ]]
  PRIMUS_SKIP_PIP=1 TOKENIZED_DATA_PATH=$T/tok/d hooks train pretrain --config "$EXP/megatron.yaml"
  assert_success
  run records
  assert_line "extra train_data_path=$T/tok/d"
  [[ -s $T/tok/d.done ]]
  unset MEGATRON_PATH
  PRIMUS_SKIP_PIP=1 hooks train pretrain --config "$EXP/megatron_mock.yaml"
  assert_failure 1
  run errors
  assert_output --partial "the Megatron-LM checkout $T/third/Megatron-LM is missing or empty"
}

@test "megatron: --dry-run installs, prepares and builds nothing; the lines are the same" {
  megatron_checkout
  local prefix=$T/data/bookcorpus/HuggingFaceTokenizer/bookcorpus_text_sentence
  hooks --dry-run train pretrain --config "$EXP/megatron.yaml"
  assert_success
  [[ ! -e $STUB_LOG && ! -e $T/data && ! -e $T/primus_patch_args.txt ]]
  run records
  assert_output "extra train_data_path=$prefix
extra backend_path=$T/Megatron-LM"
  run errors
  assert_output --partial "dry run: would run: $TOOLS/python3 -m pip install flash-linear-attention==0.5.2 causal-conv1d~=1.5"
}

@test "megatron: Emerging-Optimizers only when switched on, at the pinned commit" {
  megatron_checkout
  PRIMUS_SKIP_PIP=1 PRIMUS_INSTALL_EMERGING_OPTIMIZERS=on hooks --dry-run train pretrain --config "$EXP/megatron_mock.yaml"
  assert_success
  run errors
  assert_output --partial "git+https://github.com/NVIDIA-NeMo/Emerging-Optimizers.git@93d9eb3a6c899b50de73992826451fba3ab6adfb"
  PRIMUS_SKIP_PIP=1 PRIMUS_INSTALL_EMERGING_OPTIMIZERS=off hooks --dry-run train pretrain --config "$EXP/megatron_mock.yaml"
  run errors
  refute_output --partial Emerging-Optimizers
}

@test "maxtext: requirements-jax.txt installed, env.RUN_MODE=single, backend path from third_party" {
  printf '# jax\njax==0.4.35\n' >"$T/repo/requirements-jax.txt"
  mkdir -p "$T/repo/third_party/maxtext"
  hooks train pretrain --config "$EXP/maxtext.yaml"
  assert_success
  run records
  assert_output "extra backend_path=$T/repo/third_party/maxtext
env RUN_MODE=single"
  run stub_calls
  assert_output "pip install -r $T/repo/requirements-jax.txt"
  rm -f "$T/repo/requirements-jax.txt"
  hooks train pretrain --config "$EXP/maxtext.yaml"
  assert_failure 1
  PRIMUS_SKIP_PIP=1 MAXTEXT_PATH=$T/mt hooks train pretrain --config "$EXP/maxtext.yaml" --backend_path "$T/given"
  assert_success
  run records
  assert_line "extra backend_path=$T/given"
}

@test "maxdiffusion: PRIMUS_SKIP_PIP skips the set-up; RUN_MODE=single, NVTE_FRAMEWORK=jax, JAX coordinator on 2 nodes" {
  PRIMUS_SKIP_PIP=1 NNODES=2 MASTER_ADDR=node0 MASTER_PORT=1234 NCCL_SOCKET_IFNAME=eth0 hooks train pretrain --config "$EXP/maxdiffusion.yaml"
  assert_success
  run records
  assert_output "env RUN_MODE=single
env NVTE_FRAMEWORK=jax
env JAX_COORDINATOR_IP=node0
env JAX_COORDINATOR_PORT=1234"
  mkdir -p "$T/repo/examples/maxdiffusion"
  echo 'echo setup ran >>"$STUB_LOG"' >"$T/repo/examples/maxdiffusion/setup_maxdiffusion_env.sh"
  NVTE_FRAMEWORK=pytorch hooks train pretrain --config "$EXP/maxdiffusion.yaml"
  assert_success
  run records
  assert_output "env RUN_MODE=single"
  run stub_calls
  assert_output "setup ran"
}

@test "torchtitan: editable reinstall, patch-args file deleted, cached tokenizer used; no assets is exit 1" {
  mkdir -p "$T/third/torchtitan" "$T/data/torchtitan/Llama-3.1-8B"
  echo '{}' >"$T/data/torchtitan/Llama-3.1-8B/tokenizer.json"
  hooks train pretrain --config "$EXP/torchtitan.yaml"
  assert_success
  run records
  assert_output "extra model.hf_assets_path=$T/data/torchtitan/Llama-3.1-8B
extra backend_path=$T/third/torchtitan"
  run stub_calls
  assert_output "pip install -e $T/third/torchtitan --config-settings editable_mode=compat"
  [[ ! -e $T/primus_patch_args.txt ]]
  rm -rf "$T/data/torchtitan"
  hooks train pretrain --config "$EXP/torchtitan.yaml"
  assert_failure 1
}

@test "posttrain: no framework folder -> nothing; a framework's steps run once each, their lines forwarded once" {
  hooks train posttrain --config "$EXP/posttrain.yaml"
  assert_success
  [[ ! -s $T/rec ]]
  mkdir -p "$T/h/train/posttrain/demo"
  cp "$HOOKS/_lib.sh" "$T/h/"
  cp -r "$HOOKS/train/posttrain/dispatch_framework.sh" "$T/h/train/posttrain/"
  printf 'echo "extra.finetune=true"\necho "args=$*" >>"$STUB_LOG"\n' >"$T/h/train/posttrain/demo/00_a.sh"
  printf 'print("env.POST_PY=1")\n' >"$T/h/train/posttrain/demo/01_b.py"
  hooks --hooks-dir "$T/h" train posttrain --config "$EXP/posttrain.yaml" --x 1
  assert_success
  run records
  assert_output "extra finetune=true
env POST_PY=1"
  run stub_calls
  assert_output "args=--config $EXP/posttrain.yaml --x 1"
}

@test "every framework checks what a dry run can know before its first install step" {
  printf 'jax==0.4.35\n' >"$T/repo/requirements-jax.txt"
  mkdir -p "$T/repo/examples/maxdiffusion" "$T/third/torchtitan"
  echo 'echo setup ran >>"$STUB_LOG"' >"$T/repo/examples/maxdiffusion/setup_maxdiffusion_env.sh"
  local framework
  for framework in maxtext maxdiffusion; do  # no pre_trainer dataset_type
    hooks train pretrain --config "$EXP/no_framework.yaml" --backend "$framework"
    assert_failure 2
  done
  hooks train pretrain --config "$EXP/torchtitan.yaml"  # no tokenizer assets
  assert_failure 1
  hooks train pretrain --config "$EXP/megatron.yaml"  # no Megatron-LM checkout
  assert_failure 1
  run stub_calls
  assert_output ""
}
