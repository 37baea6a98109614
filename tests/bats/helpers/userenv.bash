# tests/bats/helpers/userenv.bash: the user environments made by tests/userenv/setup.sh
# (`make test` runs it before bats). Sourced after helpers/launcher.
# shellcheck disable=SC2034 # variables defined here are used by the suites that load this file

USERENV_DIR=${PRIMUS_USERENV_DIR:-$REPO_ROOT/.userenv}
USERENV_TORCH=$USERENV_DIR/torch
USERENV_NOTORCH=$USERENV_DIR/notorch

# userenv_require: fail (never skip) when the set-up has not been run.
userenv_require() {
  if [[ ! -x $USERENV_TORCH/bin/python || ! -f $USERENV_TORCH/.primus-installed || ! -x $USERENV_NOTORCH/bin/python ]]; then
    echo "user environments missing under $USERENV_DIR; run tests/userenv/setup.sh (make test does)" >&2
    return 1
  fi
}

# userenv_activate DIR: what `source DIR/bin/activate` does to the environment
# (PATH first, VIRTUAL_ENV), and no PRIMUS_WORKLOAD_PYTHON: python3 on PATH wins.
userenv_activate() {
  export VIRTUAL_ENV=$1 PATH=$1/bin:$PATH
  unset PRIMUS_WORKLOAD_PYTHON PYTHONHOME
}
