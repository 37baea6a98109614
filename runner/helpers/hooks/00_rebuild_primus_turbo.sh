#!/usr/bin/env bash
# 00_rebuild_primus_turbo.sh: rebuild Primus-Turbo from source before the launch.
# primus-hook-gate: REBUILD_PRIMUS_TURBO
# primus-hook-installs:
#
# Gate: REBUILD_PRIMUS_TURBO=1 (0 / unset: do nothing).
# Inputs (Primus docs, environment variables, section 10):
#   GPU_ARCHS          semicolon-separated targets compiled in (default gfx942;gfx950)
#   MAX_JOBS           parallel compile jobs for the pip build (unset: the build's default)
#   PRIMUS_SKIP_PIP=1  skip `pip install -r requirements.txt` (the build still runs)
#   PRIMUS_TURBO_SRC   an existing Primus-Turbo checkout to build (no clone)
#   PRIMUS_TURBO_REPO  repository to clone (default https://github.com/AMD-AGI/Primus-Turbo.git)
#   PRIMUS_TURBO_REF   branch/tag/commit to check out after cloning
#   PRIMUS_TURBO_BUILD_DIR  node-local work directory (default ${TMPDIR:-/tmp}/primus_turbo_<host>)
# Steps: git clone --recursive (fresh checkout), optional checkout, then with
# $PRIMUS_PYTHON: -m pip install -r requirements.txt; -m pip install
# --no-build-isolation . (GPU_ARCHS and MAX_JOBS exported to the build).
# Emits no env./extra. lines. Under PRIMUS_DRY_RUN=1 prints the commands only.
set -euo pipefail

case ${REBUILD_PRIMUS_TURBO:-0} in 0) exit 0 ;; esac
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"
hook_gate REBUILD_PRIMUS_TURBO

# check_gpu_archs VALUE: every ;-separated item looks like gfx942 or gfx90a:xnack+.
check_gpu_archs() {
  local item
  local -a items
  IFS=';' read -r -a items <<<"$1"
  ((${#items[@]})) || hook_config_error "GPU_ARCHS is empty; accepted: ;-separated targets such as gfx942;gfx950."
  for item in "${items[@]}"; do
    [[ $item =~ ^gfx[0-9a-f]+(:[a-z-]+[+-])*$ ]] ||
      hook_config_error "GPU_ARCHS='$1' has '$item', which is not a GPU target; accepted: ;-separated targets such as gfx942;gfx950 (no spaces, no commas)."
  done
}

# checkout_source: set SRC to the tree to build (clone unless PRIMUS_TURBO_SRC).
checkout_source() {
  if [[ -n ${PRIMUS_TURBO_SRC:-} ]]; then
    [[ -d $PRIMUS_TURBO_SRC ]] || hook_missing "PRIMUS_TURBO_SRC='$PRIMUS_TURBO_SRC' is not a directory; point it at a Primus-Turbo checkout or unset it to clone."
    SRC=$PRIMUS_TURBO_SRC
    hook_info "building the existing checkout $SRC"
    return 0
  fi
  local build_dir=${PRIMUS_TURBO_BUILD_DIR:-${TMPDIR:-/tmp}/primus_turbo_${HOSTNAME:-host}}
  local repo=${PRIMUS_TURBO_REPO:-https://github.com/AMD-AGI/Primus-Turbo.git}
  SRC=$build_dir/Primus-Turbo
  if [[ -e $SRC ]]; then
    hook_run rm -rf -- "$SRC"
  fi
  hook_run mkdir -p -- "$build_dir"
  hook_run git clone --recursive -- "$repo" "$SRC"
  if [[ -n ${PRIMUS_TURBO_REF:-} ]]; then
    [[ $PRIMUS_TURBO_REF != -* ]] ||
      hook_config_error "PRIMUS_TURBO_REF='$PRIMUS_TURBO_REF' starts with '-' and would be read by git as an option; accepted: a branch, tag or commit."
    hook_run git -C "$SRC" checkout "$PRIMUS_TURBO_REF"
  fi
}

main() {
  local archs=${GPU_ARCHS:-gfx942;gfx950}
  check_gpu_archs "$archs"
  if [[ -n ${MAX_JOBS:-} && ! $MAX_JOBS =~ ^[1-9][0-9]*$ ]]; then
    hook_config_error "MAX_JOBS='$MAX_JOBS' is not a positive integer; accepted: e.g. MAX_JOBS=64, or unset."
  fi
  if [[ -z ${PRIMUS_TURBO_SRC:-} ]] && ! command -v git >/dev/null; then
    hook_missing "git is not on PATH; it is needed to fetch Primus-Turbo (or set PRIMUS_TURBO_SRC to a checkout)."
  fi
  primus_pick_python
  hook_info "REBUILD_PRIMUS_TURBO=1: rebuilding Primus-Turbo for GPU_ARCHS=$archs${MAX_JOBS:+ with MAX_JOBS=$MAX_JOBS}"
  local SRC
  checkout_source
  if [[ ${PRIMUS_SKIP_PIP:-0} == 1 ]]; then
    hook_info "PRIMUS_SKIP_PIP=1: not installing $SRC/requirements.txt; using the packages already installed"
  elif [[ -f $SRC/requirements.txt ]] || hook_dry_run; then
    hook_run "$PRIMUS_PYTHON" -m pip install -r "$SRC/requirements.txt"
  fi
  export GPU_ARCHS=$archs
  if [[ -n ${MAX_JOBS:-} ]]; then export MAX_JOBS; fi
  if hook_dry_run; then
    hook_run "$PRIMUS_PYTHON" -m pip install --no-build-isolation "$SRC"
  else
    (cd -- "$SRC" && hook_run "$PRIMUS_PYTHON" -m pip install --no-build-isolation .)
  fi
  if hook_dry_run; then
    hook_info "dry run: nothing was changed"
  else
    hook_info "Primus-Turbo rebuilt from $SRC"
  fi
}

main "$@"
