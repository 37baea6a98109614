#!/usr/bin/env bash
# hooks/train/pretrain/hipblaslt_tuning.sh: the hipBLASLt tuning flow
# primus-hook-gate: PRIMUS_HIPBLASLT_TUNING PRIMUS_DETERMINISTIC TE_HIPBLASLT_TUNING PRIMUS_HIPBLASLT_TUNING_STAGE
# (reference section 9) for `train pretrain`.
#
# Arguments: the workload args (e.g. --config exp.yaml); --config names the tune
# directory when PRIMUS_MODEL is unset.
#
# PRIMUS_HIPBLASLT_TUNING=1 is the master switch; PRIMUS_HIPBLASLT_TUNING_STAGE
# (default 0) takes effect only with it (a non-zero stage without it is warned
# about and ignored). Tune directory T = <W>/tune_hipblaslt/<PRIMUS_MODEL or the
# --config file's stem, else default>, W = $PRIMUS_WORKSPACE when set, else
# $PRIMUS_PATH/output (upstream's <Primus checkout>/output; base_env.sh sets
# PRIMUS_PATH when the working directory is a Primus checkout), else ./output.
#   stage 0  TE online tuning: env.TE_HIPBLASLT_TUNING_RUN_COUNT (yours, else 10)
#            and env.TE_HIPBLASLT_TUNING_ALGO_COUNT (yours, else 50).
#   stage 1  dump GEMM shapes: creates T/gemm_shape; env.HIPBLASLT_LOG_MASK (yours
#            with the Bench bit 32 added, else 32), env.HIPBLASLT_LOG_FILE (yours,
#            else T/gemm_shape/dump_hipblaslt_gemm_shape_<NODE_RANK>_%i.txt:
#            upstream's name plus _%i, hipBLASLt's process-id placeholder, so
#            the node's ranks never write one file at once; the tuner reads the
#            whole directory), env.HIPBLASLT_TUNING_OVERRIDE_FILE= (empty: no
#            earlier tuning applied while dumping). HIPBLASLT_LOG_LEVEL must be
#            unset: hipBLASLt consults HIPBLASLT_LOG_MASK only when it is unset,
#            and no level logs Bench lines, so the dump would be empty (exit 78).
#   stage 2  offline tuning on node 0: runs $PRIMUS_HIPBLASLT_TUNER (default
#            <PRIMUS_PATH, else this repository>/examples/offline_tune/
#            offline_tune_gemm.py, upstream's tuner; .py runs with
#            $PRIMUS_PYTHON) --dump-shape-path-or-file T/gemm_shape
#            --tune-result-path T/gemm_tune/tune_hipblas_gemm_results.txt
#            --num-devices $GPUS_PER_NODE (default 8); every node emits
#            env.PRIMUS_SKIP_MAIN_LAUNCH=1 so the launcher stops after the hooks.
#   stage 3  apply: HIPBLASLT_TUNING_OVERRIDE_FILE (yours, else the stage-2 result
#            file) must exist (else exit 78), emitted as an absolute path.
# Stages 1-3 also emit TE_HIPBLASLT_TUNING_RUN_COUNT=0 / ALGO_COUNT=0 (TE's own
# online tuning would pick other kernels than the offline flow measures); a
# TE_HIPBLASLT_TUNING=1 is then warned about.
# Deterministic mode (PRIMUS_DETERMINISTIC=1): with PRIMUS_HIPBLASLT_TUNING=1 the
# hook applies nothing and the launcher's env check refuses the launch (the rule
# lives once, in python/primus_runner/env/rules/primus.py); otherwise it emits
# TE_HIPBLASLT_TUNING_RUN_COUNT=0 / ALGO_COUNT=0 (TE_HIPBLASLT_TUNING=1 included).
# Tuning off and not deterministic: TE_HIPBLASLT_TUNING=1 emits the stage-0 counts;
# with none of these variables set the hook emits nothing.
# Exit 78 (-> launch exit 2) for configuration errors, 66 (-> 1) for a missing tuner.
# Under PRIMUS_DRY_RUN=1 nothing is created or run; the env. lines are the same.
set -euo pipefail

if [[ ${PRIMUS_HIPBLASLT_TUNING:-0} == 0 && ${PRIMUS_DETERMINISTIC:-0} != 1 &&
  ${TE_HIPBLASLT_TUNING:-0} == 0 && ${PRIMUS_HIPBLASLT_TUNING_STAGE:-0} == 0 ]]; then
  exit 0
fi
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/../../_lib.sh"

readonly RESULT_NAME=tune_hipblas_gemm_results.txt

# switch_value VAR NAME: store NAME's 0/1 value in VAR (unset -> 0); else exit 78.
switch_value() {
  local value=${!2:-0}
  case $value in
    0 | 1) printf -v "$1" '%s' "$value" ;;
    *) hook_config_error "$2='$value' is not a switch; accepted: 1 (on) or 0 / unset (off)." ;;
  esac
}

# count_value NAME DEFAULT: print NAME's value (a non-negative integer) or DEFAULT.
count_value() {
  local value=${!1:-$2}
  [[ $value =~ ^[0-9]+$ ]] ||
    hook_config_error "$1='$value' is not a non-negative integer; accepted: e.g. $1=$2."
  printf '%s' "$value"
}

# emit_te_counts RUN ALGO: the TE hipBLASLt online-tuning counts.
emit_te_counts() {
  hook_emit_env TE_HIPBLASLT_TUNING_RUN_COUNT "$1"
  hook_emit_env TE_HIPBLASLT_TUNING_ALGO_COUNT "$2"
}

# emit_te_online: stage-0 style counts (user values, else 10 / 50).
emit_te_online() {
  local run algo
  run=$(count_value TE_HIPBLASLT_TUNING_RUN_COUNT 10)
  algo=$(count_value TE_HIPBLASLT_TUNING_ALGO_COUNT 50)
  emit_te_counts "$run" "$algo"
}

# tune_root ARGS...: print the tune directory (absolute) for the workload ARGS.
tune_root() {
  local config="" tag
  while (($#)); do
    case $1 in
      --config) config=${2-}; shift $(($# >= 2 ? 2 : 1)) ;;
      --config=*) config=${1#--config=}; shift ;;
      *) shift ;;
    esac
  done
  tag=${PRIMUS_MODEL:-}
  if [[ -z $tag && -n $config ]]; then
    tag=${config##*/}
    tag=${tag%.yaml}
    tag=${tag%.yml}
  fi
  tag=${tag:-default}
  local workspace=./output
  if [[ -n ${PRIMUS_WORKSPACE:-} ]]; then
    workspace=$PRIMUS_WORKSPACE
  elif [[ -n ${PRIMUS_PATH:-} ]]; then
    workspace=$PRIMUS_PATH/output
  fi
  [[ $workspace == /* ]] || workspace=$PWD/${workspace#./}
  printf '%s/tune_hipblaslt/%s' "${workspace%/}" "$tag"
}

make_dir() {
  if hook_dry_run; then
    hook_info "dry run: would create $1"
  else
    mkdir -p -- "$1"
  fi
}

stage_dump_shapes() {
  local root=$1
  if [[ -n ${HIPBLASLT_LOG_LEVEL+set} ]]; then
    hook_config_error "stage 1 (dump GEMM shapes) needs HIPBLASLT_LOG_LEVEL unset, but it is '${HIPBLASLT_LOG_LEVEL}': hipBLASLt then ignores HIPBLASLT_LOG_MASK and no level logs the Bench lines, so no shape would be dumped. Unset HIPBLASLT_LOG_LEVEL for this stage."
  fi
  local mask=${HIPBLASLT_LOG_MASK:-32}
  [[ $mask =~ ^[0-9]+$ ]] ||
    hook_config_error "HIPBLASLT_LOG_MASK='$mask' is not a number; accepted: a bit mask such as 32 (Bench)."
  mask=$((mask | 32))
  local file=${HIPBLASLT_LOG_FILE:-$root/gemm_shape/dump_hipblaslt_gemm_shape_${NODE_RANK:-0}_%i.txt}
  make_dir "${file%/*}"
  hook_info "stage 1: dumping GEMM shapes to $file (HIPBLASLT_LOG_MASK=$mask)"
  hook_emit_env HIPBLASLT_LOG_MASK "$mask"
  hook_emit_env HIPBLASLT_LOG_FILE "$file"
  hook_emit_env HIPBLASLT_TUNING_OVERRIDE_FILE ""
}

stage_tune() {
  local root=$1
  if [[ ${NODE_RANK:-0} =~ ^0*$ ]]; then
    local shapes=$root/gemm_shape result=$root/gemm_tune/$RESULT_NAME
    local tuner=${PRIMUS_HIPBLASLT_TUNER:-${PRIMUS_PATH:-$PRIMUS_ROOT}/examples/offline_tune/offline_tune_gemm.py}
    [[ -f $tuner ]] ||
      hook_missing "the hipBLASLt offline tuner '$tuner' does not exist; set PRIMUS_HIPBLASLT_TUNER to Primus's examples/offline_tune/offline_tune_gemm.py (or another tuner taking --dump-shape-path-or-file, --tune-result-path, --num-devices)."
    local -a shape_files=()
    shopt -s nullglob
    shape_files=("$shapes"/*)
    shopt -u nullglob
    ((${#shape_files[@]})) ||
      hook_config_error "stage 2 (offline tune) found no GEMM shapes in $shapes; run stage 1 first (PRIMUS_HIPBLASLT_TUNING_STAGE=1) with the same PRIMUS_WORKSPACE (or PRIMUS_PATH) and model."
    local gpus=${GPUS_PER_NODE:-${PRIMUS_DISTRIBUTED_DEFAULTS[GPUS_PER_NODE]}}
    [[ $gpus =~ ^[1-9][0-9]*$ ]] || hook_config_error "GPUS_PER_NODE='$gpus' is not a positive integer."
    make_dir "${result%/*}"
    local -a cmd=("$tuner")
    if [[ $tuner == *.py ]]; then
      primus_pick_python
      cmd=("$PRIMUS_PYTHON" "$tuner")
    fi
    hook_run "${cmd[@]}" --dump-shape-path-or-file "$shapes" --tune-result-path "$result" --num-devices "$gpus"
    hook_info "stage 2: tuning result in $result; the training launch is skipped (run stage 3 to use it)"
  else
    hook_info "stage 2: offline tuning runs on node 0 only; this node skips the training launch"
  fi
  hook_emit_env PRIMUS_SKIP_MAIN_LAUNCH 1
}

stage_apply() {
  local root=$1
  local file=${HIPBLASLT_TUNING_OVERRIDE_FILE:-$root/gemm_tune/$RESULT_NAME}
  [[ $file == /* ]] || file=$PWD/$file
  if [[ ! -f $file ]]; then
    if [[ -n ${HIPBLASLT_TUNING_OVERRIDE_FILE:-} ]]; then
      hook_config_error "stage 3 (apply tuned kernels): HIPBLASLT_TUNING_OVERRIDE_FILE='$HIPBLASLT_TUNING_OVERRIDE_FILE' does not exist; point it at a stage-2 result file (tune_hipblas_gemm_results.txt) reachable from every node."
    fi
    hook_config_error "stage 3 (apply tuned kernels): no tuning result at $file and HIPBLASLT_TUNING_OVERRIDE_FILE is unset; run stage 2 first (PRIMUS_HIPBLASLT_TUNING_STAGE=2) or set HIPBLASLT_TUNING_OVERRIDE_FILE."
  fi
  [[ -s $file ]] || hook_warn "HIPBLASLT_TUNING_OVERRIDE_FILE $file is empty; no kernel will be overridden."
  hook_info "stage 3: applying tuned kernels from $file"
  hook_emit_env HIPBLASLT_TUNING_OVERRIDE_FILE "$file"
}

main() {
  local tuning deterministic te stage=${PRIMUS_HIPBLASLT_TUNING_STAGE:-0}
  switch_value tuning PRIMUS_HIPBLASLT_TUNING
  switch_value deterministic PRIMUS_DETERMINISTIC
  switch_value te TE_HIPBLASLT_TUNING
  [[ $stage =~ ^[0-3]$ ]] ||
    hook_config_error "PRIMUS_HIPBLASLT_TUNING_STAGE='$stage' is not a stage; accepted: 0 (off), 1 (dump shapes), 2 (offline tune), 3 (apply tuned kernels)."
  if ((deterministic)); then
    if ((tuning)); then
      # The rule lives once, in the rules engine (hipblaslt_vs_deterministic); the
      # launcher's env check, which runs after the hooks and before anything
      # starts, refuses the launch with it.
      hook_info "deterministic mode with hipBLASLt tuning requested: nothing applied (env check refuses this combination)."
      return 0
    fi
    # TE_HIPBLASLT_TUNING=1: the counts below switch TE's online tuning off
    # (env check warns: rule te_tuning_vs_deterministic).
    ((stage == 0)) || hook_warn "PRIMUS_HIPBLASLT_TUNING_STAGE=$stage is ignored: PRIMUS_HIPBLASLT_TUNING is not 1."
    emit_te_counts 0 0
    return 0
  fi
  if ((tuning == 0)); then
    ((stage == 0)) || hook_warn "PRIMUS_HIPBLASLT_TUNING_STAGE=$stage is ignored: PRIMUS_HIPBLASLT_TUNING is not 1 (set it to 1 to enable the tuning flow)."
    if ((te)); then emit_te_online; fi
    return 0
  fi
  if ((stage == 0)); then
    emit_te_online
    return 0
  fi
  ((te == 0)) || hook_warn "TE_HIPBLASLT_TUNING=1 is overridden during hipBLASLt stage $stage: TE online tuning is disabled (counts 0)."
  local root
  root=$(tune_root "$@")
  case $stage in
    1) stage_dump_shapes "$root" ;;
    2) stage_tune "$root" ;;
    3) stage_apply "$root" ;;
  esac
  emit_te_counts 0 0
}

main "$@"
