#!/usr/bin/env bash
# hooks/train/pretrain/hipblaslt_tuning.sh: the hipBLASLt tuning flow
# primus-hook-gate: PRIMUS_HIPBLASLT_TUNING PRIMUS_DETERMINISTIC TE_HIPBLASLT_TUNING PRIMUS_HIPBLASLT_TUNING_STAGE
# (Primus docs, environment variables, section 9) for `train pretrain`.
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

# The decisions (switches, stage, tune directory, file names, checks) are
# python/primus_runner/launch/hipblaslt.py's, asked once; this hook only does
# what its records say, in order: logs, directories, the tuner, env. lines.

make_dir() {
  if hook_dry_run; then
    hook_info "dry run: would create $1"
  else
    mkdir -p -- "$1"
  fi
}

# apply KIND A B: one record of the plan.
apply() {
  case $1 in
    info) hook_info "$2" ;;
    warn) hook_warn "$2" ;;
    config-error) hook_config_error "$2" ;;
    missing) hook_missing "$2" ;;
    mkdir) make_dir "$2" ;;
    arg) PRIMUS_HB_ARGS+=("$2") ;;
    run)
      local -a cmd=("$3")
      if [[ $2 == python ]]; then
        primus_pick_python
        cmd=("$PRIMUS_PYTHON" "$3")
      fi
      hook_run "${cmd[@]}" "${PRIMUS_HB_ARGS[@]}"
      ;;
    env) hook_emit_env "$2" "$3" ;;
    *) hook_fail "unknown record '$1' from python/primus_runner/launch/hipblaslt.py" ;;
  esac
}

main() {
  local -a rec
  PRIMUS_HB_ARGS=()
  primus_pick_python
  exec {PRIMUS_HB_PLAN}< <(PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
    "$PRIMUS_PYTHON" -m primus_runner.launch.hipblaslt plan "$@")
  while mapfile -n 3 -d '' -t rec <&"$PRIMUS_HB_PLAN" && [[ ${#rec[@]} == 3 ]]; do
    apply "${rec[@]}"
  done
  wait "$!" || hook_fail "python/primus_runner/launch/hipblaslt.py failed (its message is above)."
}

main "$@"
