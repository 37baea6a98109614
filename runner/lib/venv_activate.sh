# shellcheck shell=bash
# runner/lib/venv_activate.sh: VENV_ACTIVATE, as the upstream Primus runner
# reads it (AMD-AGI/Primus fd1eeabb, runner/primus-cli-direct.sh:457-465): a set
# VENV_ACTIVATE names an activation script (a venv's bin/activate, a conda
# env's activate wrapper) that the direct launcher sources before it picks the
# workload's interpreter, so `python3 on PATH` is that environment's. Unset or
# empty: nothing. Set to a missing file: exit 1 before anything starts.
#
# Owns only that step. It does not pick the interpreter (runner/lib/workload.sh
# does, after this) and is not run by the container launcher on the host (the
# inner direct does it inside the image when VENV_ACTIVATE is passed there with
# --env). The script is the user's own set-up code and runs under --dry-run too,
# so the dry run shows the interpreter the launch would use; like upstream, it
# is sourced with nounset off (activation scripts read unset variables such as
# PS1), and the caller's options are restored afterwards.

# primus_venv_activate: source $VENV_ACTIVATE when set (see above).
primus_venv_activate() {
  local file=${VENV_ACTIVATE:-}
  [[ -n $file ]] || return 0
  if [[ ! -f $file || ! -r $file ]]; then
    primus_die "$PRIMUS_EXIT_MISSING" "VENV_ACTIVATE='$file' is set but that file does not exist or cannot be read; nothing was started (the upstream Primus runner stops the same way). Fix: export VENV_ACTIVATE=/path/to/venv/bin/activate, or unset VENV_ACTIVATE to use python3 on PATH."
  fi
  local had_u=0 rc=0
  [[ $- != *u* ]] || had_u=1
  set +u
  # shellcheck source=/dev/null
  source "$file" || rc=$?
  ((had_u == 0)) || set -u
  if ((rc != 0)); then
    primus_die "$PRIMUS_EXIT_MISSING" "sourcing VENV_ACTIVATE='$file' failed (status $rc); nothing was started. Fix: check that the file is the environment's activation script (e.g. <venv>/bin/activate)."
  fi
  LOG_INFO "VENV_ACTIVATE: sourced $file (python3 on PATH is now $(command -v python3 || echo none))"
}
