# shellcheck shell=bash
# runner/lib/validation.sh: the shell's one door to the rules engine.
#
#   primus_env_check WHO [env check options...]
#
# Every validation rule lives once, in Python (python/primus_runner/env/rules/:
# distributed.py for host names, the MASTER_PORT range, NNODES/NODE_RANK/
# GPUS_PER_NODE and loopback; primus.py, neuron.py, neuron_launch.py for the
# rest). This function runs `python3 -m primus_runner env check` on the current
# environment and maps its answer: 0 valid (warnings printed), 2 errors (printed
# by env check; one line here says what to do).
#
# Fallback when Python cannot run (no interpreter, missing PyYAML): no rule is
# re-implemented in bash, because a second copy would drift from the first.
# The function says so in one warning ("environment not validated") and
# returns 0, so sourcing by hand still works; the launcher itself cannot start
# without Python (its rank mapping is Python), so every launch is validated.
# Sourced; needs runner/lib/common.sh.

primus_env_check() {
  local who=$1 rc=0
  shift
  primus_python env check "$@" || rc=$?
  case $rc in
    0) return 0 ;;
    2)
      LOG_ERROR "$who: environment validation failed (see the errors above). Fix the variables named there; PRIMUS_SKIP_VALIDATION=1 skips validation (not recommended)."
      return 2
      ;;
    *)
      LOG_WARN_RANK0 "$who: env check could not run (exit status $rc); environment not validated (no rule is re-implemented in bash). Fix: run 'make setup' or set PRIMUS_PYTHON to a python3 with PyYAML."
      return 0
      ;;
  esac
}
