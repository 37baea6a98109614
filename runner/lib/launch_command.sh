# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # the direct launcher's globals, read and set here
# runner/lib/launch_command.sh: the command the direct launcher runs: the
# workload's own command in run mode single (behind numa_bind.sh when NUMA
# binding is on), else torchrun (PRIMUS_TORCHRUN, or the workload interpreter
# with runner/helpers/torchrun_quiet.py) with run_worker.sh in front of every
# rank. Sourced by runner/primus-cli-direct.sh; it reads the launcher's resolved
# globals (PRIMUS_WL_*, PRIMUS_WORKLOAD_ARGS, PRIMUS_EXTRA_ARGS, GPUS_PER_NODE,
# NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT, PRIMUS_LAUNCH_LOG,
# PRIMUS_LAUNCH_ALL_RANKS, PRIMUS_OPT_SILENT) and sets PRIMUS_LAUNCH_CMD (and
# PRIMUS_LAUNCH_RANK_DIR); it decides no value itself, defines only primus_*
# names and never changes shell options.

# primus_launch_torchrun_command: PRIMUS_TORCHRUN, else the workload interpreter's own torchrun.
primus_launch_torchrun_command() {
  if [[ -n ${PRIMUS_TORCHRUN:-} ]]; then
    PRIMUS_TORCHRUN_CMD=("$PRIMUS_TORCHRUN")
  else
    # torchrun_quiet.py runs torch.distributed.run unchanged, minus the
    # SignalException traceback torchrun prints on every stop.
    PRIMUS_TORCHRUN_CMD=("$PRIMUS_WL_EXE" "$PRIMUS_CLI_DIR/helpers/torchrun_quiet.py")
  fi
}

# primus_launch_console_filter VAR: store in VAR the local ranks whose output
# reaches the console (comma list; empty: none).
primus_launch_console_filter() {
  local last=$((GPUS_PER_NODE - 1)) ranks=()
  ((NODE_RANK == 0)) && ranks+=(0)
  ((NODE_RANK == NNODES - 1)) && ((last != 0 || NODE_RANK != 0)) && ranks+=("$last")
  local IFS=,
  printf -v "$1" '%s' "${ranks[*]}"
}

# primus_launch_build_command: PRIMUS_LAUNCH_CMD, the command that starts the workload
# (run mode single: the script itself; torchrun: torchrun with run_worker.sh).
primus_launch_build_command() {
  local -a script_cmd=("$PRIMUS_WL_EXE" "${PRIMUS_WL_ENTRY[@]}")
  if [[ $PRIMUS_WL_RUN_MODE == single ]]; then
    PRIMUS_LAUNCH_CMD=("${script_cmd[@]}" "${PRIMUS_WORKLOAD_ARGS[@]}" "${PRIMUS_EXTRA_ARGS[@]}")
    if [[ ${PRIMUS_NUMA_BIND:-0} == 1 ]]; then
      PRIMUS_LAUNCH_CMD=("$PRIMUS_CLI_DIR/helpers/numa_bind.sh" "${LOCAL_RANK:-0}" -- "${PRIMUS_LAUNCH_CMD[@]}")
    fi
    return
  fi
  primus_launch_torchrun_command
  PRIMUS_LAUNCH_CMD=("${PRIMUS_TORCHRUN_CMD[@]}" --nproc_per_node "$GPUS_PER_NODE" --nnodes "$NNODES"
    --node_rank "$NODE_RANK" --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT")
  # Every rank's output is kept under <log>.ranks/ (run_worker.sh links it as
  # rank-<RANK>.log); torchrun's tee echoes it with a [default<N>]: prefix.
  PRIMUS_LAUNCH_RANK_DIR=${PRIMUS_LAUNCH_LOG%.log}.ranks
  PRIMUS_LAUNCH_CMD+=(--log-dir "$PRIMUS_LAUNCH_RANK_DIR")
  # PRIMUS_CONSOLE_RANKS: the local ranks the console shows, for run_worker.sh
  # (a rank whose log file cannot be written sends its lines on itself).
  local filter=""
  if [[ $PRIMUS_LAUNCH_ALL_RANKS == 1 || $PRIMUS_OPT_SILENT == 1 ]]; then
    PRIMUS_LAUNCH_CMD+=(--tee 3)  # --silent: the launcher's stdout is the log file
    [[ $PRIMUS_OPT_SILENT == 1 ]] || filter=all
  else
    primus_launch_console_filter filter
    if [[ -n $filter ]]; then
      PRIMUS_LAUNCH_CMD+=(--tee 3 --local-ranks-filter "$filter")
    else
      PRIMUS_LAUNCH_CMD+=(--redirects 3)
    fi
  fi
  export PRIMUS_CONSOLE_RANKS=$filter
  # -u as torchrun gives its Python workers when it starts them itself (its
  # --no-python here drops it): without it a rank's prints to its per-rank file
  # are block-buffered and reach the console in bursts, unlike plain torchrun.
  script_cmd=("$PRIMUS_WL_EXE" -u "${PRIMUS_WL_ENTRY[@]}")
  primus_torchrun_words script_cmd "${script_cmd[@]}" "${PRIMUS_WORKLOAD_ARGS[@]}" "${PRIMUS_EXTRA_ARGS[@]}"
  PRIMUS_LAUNCH_CMD+=(--no-python "$PRIMUS_CLI_DIR/helpers/run_worker.sh" "${script_cmd[@]}")
}
