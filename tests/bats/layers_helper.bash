# tests/bats/layers_helper.bash: shared set-up for the environment-layer suites
# shellcheck disable=SC2034 # variables defined here are used by the suites that load this file
# (base_env_sourcing.bats, layers_*.bats). Every run starts from `env -i` with
# only what the test passes, so the developer's environment cannot leak in.

bats_require_minimum_version 1.5.0
REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
load "$REPO_ROOT/node_modules/bats-support/load"
load "$REPO_ROOT/node_modules/bats-assert/load"

ENVS=$REPO_ROOT/runner/helpers/envs
BASE_ENV=$ENVS/base_env.sh
PRIMUS_ENV=$ENVS/primus-env.sh
VENV_PY=$REPO_ROOT/.venv/bin/python
SYSFS=$REPO_ROOT/tests/fixtures/sysfs

# clean_bash VAR=VALUE... -- SCRIPT: run SCRIPT with `bash --norc` under env -i
# with PATH, HOME, no log colour/timestamps, and the given variables.
clean_bash() {
  local -a vars=()
  while (($#)) && [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$BATS_TEST_TMPDIR" \
    PRIMUS_LOG_COLOR=0 PRIMUS_LOG_TIMESTAMP=0 "${vars[@]}" \
    bash --norc -c "$1"
}

# bare_python: a real python3 without psutil or PyYAML (a venv without pip and
# without system site-packages, built from the project's interpreter). Prints
# its path; built once per file.
bare_python() {
  local dir=$BATS_FILE_TMPDIR/bare-venv base
  if [[ ! -x $dir/bin/python ]]; then
    base=$("$VENV_PY" -c 'import sys; print(sys._base_executable)')
    "$base" -m venv --without-pip "$dir" >/dev/null
  fi
  echo "$dir/bin/python"
}

# env_value NAME: the value of NAME in the `env -0` dump in $output_env.
env_value() {
  local line
  while IFS= read -r -d '' line; do
    if [[ ${line%%=*} == "$1" ]]; then
      printf '%s' "${line#*=}"
      return 0
    fi
  done <"$BATS_TEST_TMPDIR/env.dump"
  return 1
}

# assert_env NAME VALUE: NAME is exported with exactly VALUE (from env.dump).
assert_env() {
  local got
  if ! got=$(env_value "$1"); then
    fail "$1 is not exported (expected '$2')"
  fi
  [[ $got == "$2" ]] || fail "$1='$got', expected '$2'"
}

# refute_env NAME: NAME is not exported (from env.dump).
refute_env() {
  local got
  if got=$(env_value "$1"); then
    fail "$1 is exported as '$got', expected unset"
  fi
}
