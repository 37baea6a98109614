# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # the direct launcher's globals, read here
# runner/lib/launch_summary.sh: the launch configuration the direct launcher
# prints before it starts anything (and as the whole output of a dry run):
# distributed values, processes per node and where the count came from, the
# interpreter, the entry, NUMA binding, log file, the --env items (secrets as
# ****) and the exact command. Sourced by runner/primus-cli-direct.sh; prints
# only, in one log call (one masking pass); defines only primus_* names and never
# changes shell options.

# primus_launch_print_summary [LINE...]: the launch configuration and the command, plus any
# extra lines, in one log call (one masking pass).
primus_launch_print_summary() {
  # Where the process count came from, while nothing changed it since prepare.
  local count_from=""
  if [[ -n ${PRIMUS_PREPARE_NOTE[GPUS_PER_NODE]-} && ${PRIMUS_PREPARE_NOTE[GPUS_PER_NODE=]-} == "$GPUS_PER_NODE" ]]; then
    count_from=" (${PRIMUS_PREPARE_NOTE[GPUS_PER_NODE]})"
  fi
  local nproc="$GPUS_PER_NODE$count_from"
  [[ $PRIMUS_WL_RUN_MODE != single ]] || primus_single_nproc_text nproc
  local -a lines=("launch configuration:"
    "  NNODES=$NNODES NODE_RANK=$NODE_RANK GPUS_PER_NODE=$GPUS_PER_NODE MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT"
    "  processes per node: $nproc"
    "  accelerator=${PRIMUS_ACCELERATOR:-auto} gpu_model=${PRIMUS_GPU_MODEL:-none} run_mode=$PRIMUS_WL_RUN_MODE ($PRIMUS_WL_RUN_MODE_ORIGIN)"
    "  python=$PRIMUS_WL_EXE ($PRIMUS_WL_PYTHON_ORIGIN) torch=${PRIMUS_WL_TORCH_VERSION:-none}${PRIMUS_WL_TORCH_PATH:+ ($PRIMUS_WL_TORCH_PATH)}"
    "  entry=${PRIMUS_WL_ENTRY[*]} ($PRIMUS_WL_ENTRY_ORIGIN)"
    "  numa binding: ${PRIMUS_PREPARE_NOTE[PRIMUS_NUMA_BIND]-}"
    "  workspace=$PRIMUS_LAUNCH_WORKSPACE log_file=$PRIMUS_LAUNCH_LOG")
  # The one name of the user's the launch changes on purpose (docs/configuration.md "Your
  # variables reach the ranks"): said when the user had set it.
  if [[ ${__PRIMUS_ORIGIN[PYTHONPATH]-} == user+default ]]; then
    local where="before yours (the reference's forced prepend)"
    [[ $PRIMUS_WL_RUN_MODE == single ]] || where+="; torchrun ranks also get $PRIMUS_ROOT/runner/helpers/pystartup first"
    lines+=("  PYTHONPATH: $PRIMUS_ROOT/python and $PRIMUS_ROOT $where")
  fi
  local item shown
  for item in "${PRIMUS_CLI_ENV[@]}"; do
    primus_mask_value_into shown "${item%%=*}" "${item#*=}"
    # A newline or other control character is shown quoted ($'a\nb'): a raw
    # second line would look like a log line of its own.
    [[ $shown != *[[:cntrl:]]* ]] || printf -v shown '%q' "$shown"
    lines+=("  env ${item%%=*}=$shown")
  done
  local quoted
  printf -v quoted '%q ' "${PRIMUS_LAUNCH_CMD[@]}"
  lines+=("command: ${quoted% }" "$@")
  local IFS=$'\n'
  LOG_INFO "${lines[*]}"
}
