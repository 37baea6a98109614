# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # the entry's globals, read and set here
# runner/lib/slurm_step.sh: the shape of the Slurm step this node's entry runs in:
# tasks per node (SLURM_TASKS_PER_NODE / SLURM_STEP_TASKS_PER_NODE, Slurm's
# "2(x3),1" form), a batch step refused, and srun-native mode (one worker per
# Slurm task). This is the one parsing the shell does before any Python runs
# (the entry must know whether it is task 0 of its node). Sourced by
# runner/primus-cli-slurm-entry.sh; defines only primus_* names, never changes
# shell options; rank mapping itself is python/primus_runner/cluster/ranks.py.

# primus_step_is_count VALUE: a non-negative decimal integer.
primus_step_is_count() { [[ $1 =~ ^[0-9]{1,9}$ ]]; }
# primus_step_is_positive VALUE: an integer >= 1.
primus_step_is_positive() { primus_step_is_count "$1" && ((10#$1 >= 1)); }
# primus_step_is_index_below VALUE N: an integer in 0..N-1.
primus_step_is_index_below() { primus_step_is_count "$1" && ((10#$1 < 10#$2)); }

primus_step_read_step_shape() {
  [[ -n ${SLURM_JOB_ID:-} ]] ||
    entry_die "$PRIMUS_EXIT_INVALID" "not inside a Slurm job: SLURM_JOB_ID is unset. Start this" \
      "script with srun on every node (srun --ntasks-per-node=1 $0 direct -- ...), or use" \
      "'primus-cli slurm srun|sbatch ...' which builds that call."
  PRIMUS_STEP_NODES=${SLURM_STEP_NUM_NODES:-${SLURM_NNODES:-${SLURM_JOB_NUM_NODES:-}}}
  PRIMUS_STEP_NODELIST=${SLURM_STEP_NODELIST:-${SLURM_NODELIST:-${SLURM_JOB_NODELIST:-}}}
  PRIMUS_STEP_NODE_ID=${SLURM_NODEID:-${SLURM_PROCID:-}}
  primus_step_is_positive "$PRIMUS_STEP_NODES" ||
    entry_die "$PRIMUS_EXIT_INVALID" "the number of nodes of this Slurm step is" \
      "'$PRIMUS_STEP_NODES' (from SLURM_STEP_NUM_NODES / SLURM_NNODES / SLURM_JOB_NUM_NODES);" \
      "accepted: an integer >= 1. Start the entry with srun inside the allocation."
  primus_step_is_index_below "$PRIMUS_STEP_NODE_ID" "$PRIMUS_STEP_NODES" ||
    entry_die "$PRIMUS_EXIT_INVALID" "this node's index is '$PRIMUS_STEP_NODE_ID' (from SLURM_NODEID," \
      "else SLURM_PROCID) but the step has $PRIMUS_STEP_NODES node(s); accepted: 0..$((10#$PRIMUS_STEP_NODES - 1))." \
      "Do not export SLURM_* variables by hand; let srun set them."
  [[ -n $PRIMUS_STEP_NODELIST ]] ||
    entry_die "$PRIMUS_EXIT_INVALID" "the node list of this Slurm step is empty" \
      "(SLURM_STEP_NODELIST, SLURM_NODELIST and SLURM_JOB_NODELIST are unset)." \
      "Start the entry with srun inside the allocation."
  PRIMUS_STEP_TASKS=${SLURM_STEP_NUM_TASKS:-${SLURM_NTASKS:-$PRIMUS_STEP_NODES}}
  primus_step_is_positive "$PRIMUS_STEP_TASKS" ||
    entry_die "$PRIMUS_EXIT_INVALID" "the number of tasks of this step is '$PRIMUS_STEP_TASKS'" \
      "(SLURM_STEP_NUM_TASKS / SLURM_NTASKS); accepted: an integer >= 1."
  primus_step_tasks_on_node "${SLURM_STEP_TASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-}}" "$PRIMUS_STEP_NODE_ID"
}

# primus_step_tasks_on_node SPEC INDEX: PRIMUS_NODE_TASKS = the task count of node INDEX in a
# Slurm tasks-per-node spec such as "2(x3),1"; empty when SPEC does not say.
# Linear in SPEC; no subshell.
primus_step_tasks_on_node() {
  local spec=$1 index=$2 item count repeat seen=0
  PRIMUS_NODE_TASKS=""
  [[ -n $spec ]] || return 0
  local -a items
  primus_split items , "$spec"
  for item in "${items[@]}"; do
    if [[ $item =~ ^([0-9]+)\(x([0-9]+)\)$ ]]; then
      count=${BASH_REMATCH[1]}
      repeat=${BASH_REMATCH[2]}
    elif [[ $item =~ ^[0-9]+$ ]]; then
      count=$item
      repeat=1
    else
      return 0
    fi
    if ((10#$index < seen + 10#$repeat)); then
      PRIMUS_NODE_TASKS=$((10#$count))
      return 0
    fi
    seen=$((seen + 10#$repeat))
  done
}

# primus_step_refuse_batch_step: the entry run by the batch script itself (no srun) of a
# multi-node job would start on the first node only.
primus_step_refuse_batch_step() {
  [[ -z ${SLURM_STEP_ID:-${SLURM_STEPID:-}} ]] || return 0
  local job_nodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
  if ! primus_step_is_count "$job_nodes" || ((10#$job_nodes <= 1)); then
    return 0
  fi
  entry_die "$PRIMUS_EXIT_INVALID" "running in the batch script of a $job_nodes-node job" \
    "(SLURM_JOB_ID=$SLURM_JOB_ID, no SLURM_STEP_ID): only this node would start and the" \
    "others would never join the rendezvous. Start it on every node with:" \
    "srun --ntasks-per-node=1 $0 ${PRIMUS_ENTRY_MODE:-direct} ..."
}

primus_step_srun_native_wanted() {
  [[ -n $PRIMUS_ENTRY_SRUN_NATIVE ]] && return $((1 - PRIMUS_ENTRY_SRUN_NATIVE))
  # The words are registry data (shared_facts, runner/lib/facts.sh); env check warns
  # about any other value, which leaves the decision to the config.
  local word
  for word in "${PRIMUS_SRUN_NATIVE_ON[@]}"; do [[ ${PRIMUS_SLURM_SRUN_NATIVE:-} == "$word" ]] && return 0; done
  for word in "${PRIMUS_SRUN_NATIVE_OFF[@]}"; do [[ ${PRIMUS_SLURM_SRUN_NATIVE:-} == "$word" ]] && return 1; done
  load_config_once
  local value
  primus_config_get_into value slurm.srun_native 0
  [[ $value == 1 || $value == true ]]
}

primus_step_several_tasks_per_node() {
  ((10#$PRIMUS_STEP_TASKS > 10#$PRIMUS_STEP_NODES)) && return 0
  [[ -n $PRIMUS_NODE_TASKS ]] && ((PRIMUS_NODE_TASKS > 1))
}

# primus_step_check_tasks_per_node: one torchrun per node, or srun-native on request.
primus_step_check_tasks_per_node() {
  primus_step_several_tasks_per_node || return 0
  if primus_step_srun_native_wanted; then
    primus_step_setup_srun_native
    return 0
  fi
  local spec=${SLURM_STEP_TASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-?}}
  if [[ ${SLURM_PROCID:-0} == 0 ]]; then
    entry_die "$PRIMUS_EXIT_INVALID" "this step runs $PRIMUS_STEP_TASKS tasks on $PRIMUS_STEP_NODES node(s)" \
      "(SLURM_STEP_TASKS_PER_NODE=$spec): every task would start its own torchrun and the job" \
      "would hang or oversubscribe the GPUs. Fix: one task per node, e.g." \
      "srun --ntasks-per-node=1 (primus-cli slurm adds it unless you give --ntasks-per-node" \
      "or --ntasks); torchrun then starts GPUS_PER_NODE workers per node. Or, to run one" \
      "worker per Slurm task without torchrun, add --srun-native (or slurm.srun_native: true)."
  fi
  entry_die "$PRIMUS_EXIT_INVALID" "refused: $PRIMUS_STEP_TASKS tasks on $PRIMUS_STEP_NODES node(s);" \
    "see task 0's message (--ntasks-per-node=1, or --srun-native)."
}

# primus_step_setup_srun_native: each Slurm task is one worker; the launcher runs it with
# python3 (direct --single), no torchrun.
primus_step_setup_srun_native() {
  [[ $PRIMUS_ENTRY_MODE == direct ]] ||
    entry_die "$PRIMUS_EXIT_INVALID" "--srun-native runs the workload with 'direct --single';" \
      "mode '$PRIMUS_ENTRY_MODE' is not supported with it. Use mode direct, or one task per node."
  local local_id=${SLURM_LOCALID:-} proc_id=${SLURM_PROCID:-}
  primus_step_is_index_below "$proc_id" "$PRIMUS_STEP_TASKS" ||
    entry_die "$PRIMUS_EXIT_INVALID" "srun-native needs SLURM_PROCID in 0..$((10#$PRIMUS_STEP_TASKS - 1))" \
      "(seen '$proc_id'); start the entry with srun."
  primus_step_is_count "$local_id" ||
    entry_die "$PRIMUS_EXIT_INVALID" "srun-native needs SLURM_LOCALID (seen '$local_id');" \
      "start the entry with srun."
  local local_size=${PRIMUS_NODE_TASKS:-${SLURM_NTASKS_PER_NODE:-}}
  primus_step_is_positive "$local_size" ||
    entry_die "$PRIMUS_EXIT_INVALID" "srun-native cannot tell how many tasks run on this node" \
      "(SLURM_STEP_TASKS_PER_NODE='${SLURM_STEP_TASKS_PER_NODE:-}'); give --ntasks-per-node=N."
  export RANK=$proc_id LOCAL_RANK=$local_id WORLD_SIZE=$PRIMUS_STEP_TASKS LOCAL_WORLD_SIZE=$local_size
  # The launch helper maps LOCAL_RANK into a per-task GPU mask and the
  # cluster check counts workers, not nodes (PRIMUS_SRUN_NATIVE=1).
  export PRIMUS_SRUN_NATIVE=1
  mode_args_have --single || PRIMUS_ENTRY_MODE_ARGS=(--single "${PRIMUS_ENTRY_MODE_ARGS[@]}")
  entry_log INFO "srun-native: worker RANK=$RANK LOCAL_RANK=$LOCAL_RANK" \
    "WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE (no torchrun)"
}
