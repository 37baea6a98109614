# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # the entry's globals, read and set here
# runner/lib/slurm_step.sh: the Slurm step this node's entry runs in, as
# python/primus_runner/scheduler/step.py decides it (asked once, records
# NUL-delimited, stored and never evaluated): the step's shape (PRIMUS_STEP_*),
# the mode (PRIMUS_ENTRY_MODE: the one named, else config slurm.mode), a batch
# step refused, several tasks per node refused or run as
# srun-native workers (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE exported
# and --single added to the mode's options). Sourced by
# runner/primus-cli-slurm-entry.sh (entry_die, entry_log, mode_args_have and
# its PRIMUS_ENTRY_* globals); defines only primus_* names, never changes
# shell options.

# primus_step_apply KIND NAME VALUE: one record of step.py's answer.
primus_step_apply() {
  case $1 in
    set)
      case $2 in
        PRIMUS_STEP_NODES | PRIMUS_STEP_NODELIST | PRIMUS_STEP_NODE_ID | PRIMUS_STEP_TASKS | \
          PRIMUS_ENTRY_MODE) printf -v "$2" '%s' "$3" ;;
        *) entry_die "$PRIMUS_EXIT_RUNTIME" "slurm-step named an unknown variable '$2'" ;;
      esac
      ;;
    export) export "$2=$3" ;;
    single) mode_args_have --single || PRIMUS_ENTRY_MODE_ARGS=(--single "${PRIMUS_ENTRY_MODE_ARGS[@]}") ;;
    info) entry_log INFO "$2" ;;
    refuse) entry_die "$PRIMUS_EXIT_INVALID" "$2" ;;
    *) entry_die "$PRIMUS_EXIT_RUNTIME" "slurm-step sent an unknown record '$1'" ;;
  esac
}

# primus_step_plan: ask step.py once (the entry's path, the mode named, the
# --srun-native flag, --config) and apply its records in order.
primus_step_plan() {
  local -a fields args=(slurm-step --entry "$0" --mode "$PRIMUS_ENTRY_MODE"
    --srun-native "$PRIMUS_ENTRY_SRUN_NATIVE" --config "$PRIMUS_ENTRY_CONFIG")
  local i
  mapfile -d '' -t fields < <(primus_python "${args[@]}")
  # bash >= 5.1: $! is the process substitution; wait returns its status.
  wait "$!" || entry_die "$?" "could not read this Slurm step (the error is above)."
  for ((i = 0; i + 2 < ${#fields[@]}; i += 3)); do
    primus_step_apply "${fields[i]}" "${fields[i + 1]}" "${fields[i + 2]}"
  done
}
