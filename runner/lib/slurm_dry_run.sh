# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # primus-cli slurm's globals, read and set here
# runner/lib/slurm_dry_run.sh: `primus-cli slurm --dry-run`: the exact srun/sbatch
# call (and batch script) it would run, and node 0's own dry run under a
# simulated step shape, so the user sees what every node would do; nothing is
# submitted. Sourced by runner/primus-cli-slurm.sh; defines only primus_*
# names, never changes shell options.

# primus_slurm_simulate_node0: run the entry in dry-run as node 0 of the step would.
# The step's shape (PRIMUS_SIM_NODES, _NODELIST, _TPN, _TASKS, _PLACEHOLDER) is
# python/primus_runner/launch/slurm_submit.py's (the plan's sim records).
primus_slurm_simulate_node0() {
  if [[ -n ${PRIMUS_SIM_ERROR[1]-} ]]; then
    LOG_ERROR "${PRIMUS_SIM_ERROR[0]}"
    bad_usage "${PRIMUS_SIM_ERROR[1]}"
  fi
  local -a unset_args=() name
  for name in $(compgen -e); do
    [[ $name == SLURM_* || $name == SLURMD_* ]] && unset_args+=(-u "$name")
  done
  if ((PRIMUS_SIM_PLACEHOLDER)) && [[ -n ${MASTER_ADDR:-} ]]; then
    LOG_WARN "dry run: MASTER_ADDR=$MASTER_ADDR is left out of node 0's simulation:" \
      "the node names are placeholders until Slurm allocates (give -w/--nodelist to check it)."
    unset_args+=(-u MASTER_ADDR)
  fi
  local -a known=()
  ((PRIMUS_SIM_PLACEHOLDER)) && known=(SLURMD_NODENAME=dryrun-node1 PRIMUS_SLURM_FIRST_HOST=dryrun-node1)
  local tasks=$PRIMUS_SIM_TASKS
  primus_slurm_entry_words --dry-run
  LOG_INFO "dry run: node 0 of $PRIMUS_SIM_NODES would run (Slurm variables simulated:" \
    "SLURM_NODELIST=$PRIMUS_SIM_NODELIST$( ((PRIMUS_SIM_PLACEHOLDER)) && printf ', placeholder names'))"
  env "${unset_args[@]}" \
    SLURM_JOB_ID=dry-run SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 \
    SLURM_JOB_NUM_NODES="$PRIMUS_SIM_NODES" SLURM_NNODES="$PRIMUS_SIM_NODES" SLURM_STEP_NUM_NODES="$PRIMUS_SIM_NODES" \
    SLURM_NODELIST="$PRIMUS_SIM_NODELIST" SLURM_JOB_NODELIST="$PRIMUS_SIM_NODELIST" \
    SLURM_STEP_NODELIST="$PRIMUS_SIM_NODELIST" SLURM_NTASKS="$tasks" SLURM_STEP_NUM_TASKS="$tasks" \
    SLURM_STEP_TASKS_PER_NODE="$PRIMUS_SIM_TPN(x$PRIMUS_SIM_NODES)" SLURM_TASKS_PER_NODE="$PRIMUS_SIM_TPN(x$PRIMUS_SIM_NODES)" \
    "${known[@]}" \
    bash "${PRIMUS_ENTRY_WORDS[@]}"
}

# primus_slurm_secrets_note: where the secrets given with --env went (dry run and log).
primus_slurm_secrets_note() {
  ((${#PRIMUS_MOVED_ENV_NAMES[@]})) || return 0
  LOG_INFO "secrets ${PRIMUS_MOVED_ENV_NAMES[*]} (given with --env) travel in $PRIMUS_LAUNCHER's environment" \
    "(--export), by name only: their values are on no command line and not in the batch script."
}

primus_slurm_print_dry_run() {
  local quoted
  primus_slurm_secrets_note
  primus_slurm_shown_words quoted "${PRIMUS_SLURM_CMD[@]}"
  if [[ $PRIMUS_LAUNCHER == sbatch ]]; then
    LOG_INFO "dry run: would submit (the batch script below on sbatch's stdin):"
    printf '%s\n' "$quoted" "----- batch script -----" "${PRIMUS_BATCH_SCRIPT_SHOWN%$'\n'}" \
      "----- end of batch script -----"
  else
    LOG_INFO "dry run: would run:"
    printf '%s\n' "$quoted"
  fi
  local rc=0
  primus_slurm_simulate_node0 || rc=$?
  if ((rc != 0)); then
    LOG_ERROR "dry run: node 0's launcher would fail (exit $rc, see above); nothing was submitted."
    exit "$rc"
  fi
  LOG_INFO "dry run: nothing was submitted."
}
