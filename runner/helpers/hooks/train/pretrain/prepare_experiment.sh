#!/usr/bin/env bash
# hooks/train/pretrain/prepare_experiment.sh: framework preparation for
# `train pretrain` (upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/train/pretrain/).
# primus-hook-checks-first:
#
# Options read (the rest is passed on): --config FILE (the experiment config),
# --data_path DIR (default $DATA_PATH, else <repo>/data), --patch_args FILE
# (default ${TMPDIR:-/tmp}/primus_patch_args.txt, created empty), --backend_path
# DIR, --backend NAME. <repo> = $PRIMUS_PATH, else $PRIMUS_ROOT.
# No --config: a warning, nothing else. Framework = --backend, else
# pre_trainer.framework of the config (both and different: exit 78, launch
# exit 2); none: nothing runs (no python3 at all when the launcher already
# found so, see known_without_framework). Then the steps of
# hooks/train/pretrain/<framework>/
# (the check of prepare.py first: what a dry run can know, no side effect; then
# *.sh sorted, then prepare.py), all in one python3 process
# (python/primus_runner/config/experiment.py):
#   megatron      pip flash-linear-attention==0.5.2 causal-conv1d~=1.5; Emerging-
#                 Optimizers when PRIMUS_INSTALL_EMERGING_OPTIMIZERS is on; data
#                 prepared once (TOKENIZED_DATA_PATH, default <data>/bookcorpus/
#                 <tokenizer_type>/bookcorpus_text_sentence, .done/.failed markers)
#                 -> extra.train_data_path; extra.backend_path (Megatron-LM)
#   torchtitan    editable reinstall of the checkout; extra.model.hf_assets_path,
#                 extra.backend_path
#   maxtext       pip -r <repo>/requirements-jax.txt; extra.backend_path;
#                 env.RUN_MODE=single (one process per node)
#   maxdiffusion  <repo>/examples/maxdiffusion/setup_maxdiffusion_env.sh;
#                 env.RUN_MODE=single, env.NVTE_FRAMEWORK=jax, JAX coordinator
# PRIMUS_SKIP_PIP=1 skips every pip / setup step. Backend path: --backend_path >
# the framework's *_PATH variable > <repo>/third_party/<dir> >
# $PRIMUS_THIRDPARTY_DIR/<dir> (default ~/.cache/Primus/third_party).
# Under PRIMUS_DRY_RUN=1 nothing is installed, built or written; the protocol
# lines are the same. Exit 78 configuration error, 66 missing file or tool.
set -euo pipefail

has_config=0
for arg in "$@"; do
  case $arg in --config | --config=*) has_config=1 ;; esac
done
if ((has_config == 0)); then
  echo "[prepare] train pretrain without --config: no framework preparation." >&2
  exit 0
fi
# known_without_framework ARGS...: the launch helper found that this --config
# names no framework whatever the environment (PRIMUS_EXPERIMENT_NO_FRAMEWORK,
# python/primus_runner/config/experiment_config.py static_framework), no --backend names
# one, and every variable the file requires (PRIMUS_EXPERIMENT_REQUIRED) is
# set, so rendering it cannot fail either. Otherwise Python decides.
known_without_framework() {
  local config="" word name
  [[ -n ${PRIMUS_EXPERIMENT_NO_FRAMEWORK:-} ]] || return 1
  while (($#)); do
    word=$1
    shift
    case $word in
      --backend | --backend=*) return 1 ;;
      --config=*) config=${word#--config=} ;;
      --config) config=${1:-}; (($#)) && shift ;;
    esac
  done
  [[ $config == /* ]] || config=$PWD/$config
  [[ $config == "$PRIMUS_EXPERIMENT_NO_FRAMEWORK" ]] || return 1
  for name in ${PRIMUS_EXPERIMENT_REQUIRED:-}; do
    [[ -n ${!name+set} ]] || return 1
  done
}
if known_without_framework "$@"; then
  echo "[prepare] $PRIMUS_EXPERIMENT_NO_FRAMEWORK names no pre_trainer framework: no framework preparation." >&2
  exit 0
fi
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/../../_lib.sh"
primus_pick_python
PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" exec "$PRIMUS_PYTHON" -m primus_runner.config.experiment pretrain \
  --hooks-dir "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" "$@"
