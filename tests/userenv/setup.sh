#!/usr/bin/env bash
# tests/userenv/setup.sh: the user environments the launch tests run workloads in,
# distinct from the runner's own .venv (two interpreters, never confused).
#
# Usage: tests/userenv/setup.sh [DIR]     (DIR default: $PRIMUS_USERENV_DIR, else <repo>/.userenv)
#
# Creates, idempotently (a stamp file per env records what was installed):
#   DIR/torch     python3 -m venv + torch==$TORCH_VERSION (first, from the same CPU wheel
#                 as .venv, so lightning cannot pull a CUDA build), then jax, jaxlib, lightning
#   DIR/notorch   python3 -m venv with nothing installed (the "env without torch" case)
# TORCH_VERSION (default 2.13.0) and TORCH_INDEX_URL (optional) as in the Makefile.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:-${PRIMUS_USERENV_DIR:-$root/.userenv}}
torch_version=${TORCH_VERSION:-2.13.0}
base_python=${PRIMUS_USERENV_BASE_PYTHON:-python3}
mkdir -p -- "$dir"

# make_venv DIR: a fresh venv at DIR unless one is there.
make_venv() {
  [[ -x $1/bin/python ]] || "$base_python" -m venv "$1"
}

want="torch==$torch_version jax jaxlib lightning"
stamp=$dir/torch/.primus-installed
if [[ ! -f $stamp || $(<"$stamp") != "$want" ]]; then
  make_venv "$dir/torch"
  pip=("$dir/torch/bin/python" -m pip install --quiet --disable-pip-version-check)
  index=()
  [[ -z ${TORCH_INDEX_URL:-} ]] || index=(--index-url "$TORCH_INDEX_URL")
  echo "userenv: installing torch==$torch_version into $dir/torch" >&2
  "${pip[@]}" "torch==$torch_version" "${index[@]}"
  echo "userenv: installing jax jaxlib lightning into $dir/torch" >&2
  "${pip[@]}" jax jaxlib lightning
  printf '%s' "$want" >"$stamp"
fi
make_venv "$dir/notorch"
