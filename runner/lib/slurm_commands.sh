# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # primus-cli slurm's globals, read and set here
# runner/lib/slurm_commands.sh: the calls `primus-cli slurm` builds: the entry's
# command line, the srun call, and for sbatch the batch script (given on stdin,
# so Slurm spools its own copy) that runs srun on every node; words quoted for
# display and for the script. Sourced by runner/primus-cli-slurm.sh; reads its
# resolved options (PRIMUS_OPT_*, PRIMUS_SLURM_FLAGS, PRIMUS_SLURM_MODE_ARGS, and
# PRIMUS_ADDED_FLAGS / PRIMUS_SLURM_INNER as python/primus_runner/launch/
# slurm_submit.py decided them), builds arrays and text, decides no value
# itself, defines only primus_* names, never changes shell options.

# primus_slurm_entry_words [--dry-run]: the entry's command line (into PRIMUS_ENTRY_WORDS).
primus_slurm_entry_words() {
  PRIMUS_ENTRY_WORDS=("$PRIMUS_SLURM_RUNNER_DIR/primus-cli-slurm-entry.sh")
  [[ ${1:-} == --dry-run ]] && PRIMUS_ENTRY_WORDS+=(--dry-run)
  ((PRIMUS_OPT_DEBUG)) && PRIMUS_ENTRY_WORDS+=(--debug)
  [[ -n $PRIMUS_OPT_CONFIG ]] && PRIMUS_ENTRY_WORDS+=(--config "$PRIMUS_OPT_CONFIG")
  if ((PRIMUS_OPT_SRUN_NATIVE)); then
    PRIMUS_ENTRY_WORDS+=(--srun-native)
  else
    PRIMUS_ENTRY_WORDS+=(--no-srun-native)
  fi
  PRIMUS_ENTRY_WORDS+=("$PRIMUS_SLURM_MODE" "${PRIMUS_SLURM_MODE_ARGS[@]}")
}

primus_slurm_build_srun() {
  primus_slurm_entry_words
  PRIMUS_SLURM_CMD=(srun "${PRIMUS_SLURM_FLAGS[@]}" "${PRIMUS_ADDED_FLAGS[@]}" "${PRIMUS_ENTRY_WORDS[@]}")
}

# primus_slurm_quote_words VAR WORDS...: VAR = the words quoted for bash (values stay data).
primus_slurm_quote_words() {
  local __qw_out=$1
  shift
  local __quoted
  printf -v __quoted '%q ' "$@"
  printf -v "$__qw_out" '%s' "${__quoted% }"
}

# primus_slurm_shown_words VAR WORDS...: VAR = the words quoted for display, with secrets
# masked (docs/security.md "Security"): a word NAME=VALUE whose NAME is a secret shows
# NAME=****, and the values of secret variables of this shell show ****.
primus_slurm_shown_words() {
  local __sw_out=$1 __sw_word __sw_text="" __sw_q
  shift
  for __sw_word in "$@"; do
    if [[ $__sw_word =~ ^([A-Za-z_][A-Za-z0-9_]*)=. ]] && primus_is_secret_name "${BASH_REMATCH[1]}"; then
      __sw_q="${BASH_REMATCH[1]}=****"
    else
      printf -v __sw_q '%q' "$__sw_word"
    fi
    __sw_text+="${__sw_text:+ }$__sw_q"
  done
  primus_mask_into "$__sw_out" "$__sw_text"
}

# primus_slurm_batch_script_text VAR ENTRY_ARGS_QUOTED: VAR = the batch script.
primus_slurm_batch_script_text() {
  # shellcheck disable=SC2016 # expanded by the batch script, on the node
  local -a inner=(srun --nodes='"$SLURM_JOB_NUM_NODES"' "${PRIMUS_SLURM_INNER[@]}")
  local runner_q entry_q
  primus_slurm_quote_words runner_q "$PRIMUS_SLURM_RUNNER_DIR"
  # shellcheck disable=SC2016 # expanded by the batch script, on the node
  entry_q='"$PRIMUS_RUNNER_DIR/primus-cli-slurm-entry.sh"'
  printf -v "$1" '%s' "#!/bin/bash
# Batch script written by 'primus-cli slurm sbatch'. Slurm runs it on the first
# node of the allocation; its srun starts the entry on every node (one task per
# node), where it maps ranks and runs the '$PRIMUS_SLURM_MODE' launcher.
export PRIMUS_RUNNER_DIR=\${PRIMUS_RUNNER_DIR:-$runner_q}
$( ((PRIMUS_REQUEUE)) && echo "export PRIMUS_SLURM_REQUEUE=1")
$( ((${PRIMUS_SPARE_NODES:-0})) && echo "export PRIMUS_SLURM_SPARE_NODES=$PRIMUS_SPARE_NODES")
trap 'echo \"primus-cli slurm: job \${SLURM_JOB_ID:-?} received SIGTERM (scancel, scontrol requeue, time limit or preemption)\" >&2' TERM
# A notice to the batch shell (scancel --signal=USR1 --batch, what
# --signal=B:USR1@T sites send) would end it, and the job with it (the default
# action of USR1/USR2). The shell traps it and hands it to srun, which passes it
# to every task (seen on Slurm 22.05: the batch shell's children do not get it);
# srun runs in the background so that the trap runs at once.
primus_forward() {
  echo \"primus-cli slurm: job \${SLURM_JOB_ID:-?} received SIG\$1 (batch step notice); forwarded to its step (srun)\" >&2
  kill -\"\$1\" \"\$srun_pid\" 2>/dev/null
}
trap 'primus_forward USR1' USR1
trap 'primus_forward USR2' USR2
# The tasks' own exit statuses: the first to end decides the job's, not srun's
# highest (runner/helpers/step_exit.sh).
PRIMUS_STEP_EXITS=\$(\"\$PRIMUS_RUNNER_DIR/helpers/step_exit.sh\" start 2>/dev/null)
export PRIMUS_STEP_EXITS
# PRIMUS_ON_FAILURE=restart: the job runs as steps, restarted on the healthy nodes
# (python/primus_runner/launch/restart_loop.py --slurm; docs/restart-on-failure.md).
if [ \"\${PRIMUS_ON_FAILURE:-}\" = restart ] && [ -z \"\${PRIMUS_RESTART_COUNT:-}\" ]; then
  PYTHONPATH=\"\$PRIMUS_RUNNER_DIR/../python\${PYTHONPATH:+:\$PYTHONPATH}\" exec \"\${PRIMUS_PYTHON:-python3}\" -m primus_runner restart-loop --slurm -- ${inner[*]} $entry_q $2
fi
${inner[*]} $entry_q $2 &
srun_pid=\$!
while :; do
  wait \"\$srun_pid\"
  rc=\$?
  kill -0 \"\$srun_pid\" 2>/dev/null || break
done
echo \"primus-cli slurm: srun of job \${SLURM_JOB_ID:-?} exited with status \$rc\"
if [ -n \"\$PRIMUS_STEP_EXITS\" ]; then
  decided=\$(\"\$PRIMUS_RUNNER_DIR/helpers/step_exit.sh\" end \"\$PRIMUS_STEP_EXITS\" \"\$rc\")
  case \$decided in '' | *[!0-9]*) ;; *) rc=\$decided ;; esac
fi
exit \"\$rc\"
"
}

# primus_slurm_build_sbatch: the sbatch call (PRIMUS_SLURM_CMD), its batch
# script (PRIMUS_BATCH_SCRIPT) and the script as shown, secrets masked
# (PRIMUS_BATCH_SCRIPT_SHOWN).
primus_slurm_build_sbatch() {
  primus_slurm_entry_words
  local args_q
  primus_slurm_quote_words args_q "${PRIMUS_ENTRY_WORDS[@]:1}"
  primus_slurm_batch_script_text PRIMUS_BATCH_SCRIPT "$args_q"
  primus_slurm_shown_words args_q "${PRIMUS_ENTRY_WORDS[@]:1}"
  primus_slurm_batch_script_text PRIMUS_BATCH_SCRIPT_SHOWN "$args_q"
  PRIMUS_SLURM_CMD=(sbatch "${PRIMUS_SLURM_FLAGS[@]}" "${PRIMUS_ADDED_FLAGS[@]}")
}
