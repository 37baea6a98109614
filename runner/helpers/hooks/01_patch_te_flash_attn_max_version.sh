#!/usr/bin/env bash
# 01_patch_te_flash_attn_max_version.sh: raise Transformer Engine's cap on the
# primus-hook-gate: PATCH_TE_FLASH_ATTN
# flash-attn version it accepts.
#
# Gate: PATCH_TE_FLASH_ATTN=1 (0 / unset: do nothing). Reference section 7.
# Finds the installed transformer_engine package of $PRIMUS_PYTHON (honours
# PYTHONPATH), every .py file in it holding a line
#   _flash_attn_max_version = PkgVersion("X")
# and rewrites X to $PRIMUS_TE_FLASH_ATTN_MAX_VERSION (default 3.0.0.post1).
# Idempotent: a file already at the target is left untouched. Before the first
# change a backup FILE.primus-orig is kept (never overwritten later).
# Exit 66 (-> launch exit 1) when transformer_engine is not installed; a
# transformer_engine without such a line is reported and left alone.
# Emits no env./extra. lines. Under PRIMUS_DRY_RUN=1 only says what it would change.
set -euo pipefail

case ${PATCH_TE_FLASH_ATTN:-0} in 0) exit 0 ;; esac
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"
hook_gate PATCH_TE_FLASH_ATTN

readonly PATTERN='^[[:space:]]*_flash_attn_max_version[[:space:]]*=[[:space:]]*PkgVersion\("[^"]*"\)'

# te_package_dirs: print the directories of the installed transformer_engine.
te_package_dirs() {
  # find_spec on a top-level name locates the package without importing it.
  "$PRIMUS_PYTHON" -c '
import importlib.util, sys
spec = importlib.util.find_spec("transformer_engine")
if spec is None or not spec.submodule_search_locations:
    sys.exit(1)
print("\n".join(spec.submodule_search_locations))'
}

# patch_file FILE TARGET: rewrite the cap in FILE to TARGET (backup first).
patch_file() {
  local file=$1 target=$2 current
  current=$(grep -m1 -oE "$PATTERN" -- "$file")
  current=${current#*PkgVersion(\"}
  current=${current%\")}
  if ! grep -E "$PATTERN" -- "$file" | grep -vqF "PkgVersion(\"$target\")"; then
    hook_info "$file already allows flash-attn up to $target; unchanged"
    return 0
  fi
  if hook_dry_run; then
    hook_info "dry run: would patch $file: _flash_attn_max_version $current -> $target (backup $file.primus-orig)"
    return 0
  fi
  if [[ ! -e $file.primus-orig ]]; then
    cp -p -- "$file" "$file.primus-orig"
  fi
  sed -i -E "s/^([[:space:]]*_flash_attn_max_version[[:space:]]*=[[:space:]]*PkgVersion\\()\"[^\"]*\"\\)/\\1\"$target\")/" -- "$file"
  hook_info "patched $file: _flash_attn_max_version $current -> $target (backup $file.primus-orig)"
}

main() {
  local target=${PRIMUS_TE_FLASH_ATTN_MAX_VERSION:-3.0.0.post1}
  [[ $target =~ ^[0-9A-Za-z][0-9A-Za-z.+-]*$ ]] ||
    hook_config_error "PRIMUS_TE_FLASH_ATTN_MAX_VERSION='$target' is not a version; accepted: e.g. 3.0.0.post1."
  primus_pick_python
  local -a dirs files=()
  local dir file
  mapfile -t dirs < <(te_package_dirs || true)
  ((${#dirs[@]})) ||
    hook_missing "PATCH_TE_FLASH_ATTN=1 but transformer_engine is not installed for $PRIMUS_PYTHON (PYTHONPATH=${PYTHONPATH:-}); install Transformer Engine or unset PATCH_TE_FLASH_ATTN."
  for dir in "${dirs[@]}"; do
    while IFS= read -r -d '' file; do
      files+=("$file")
    done < <(grep -rlEZ --include='*.py' "$PATTERN" -- "$dir" || true)
  done
  if ((${#files[@]} == 0)); then
    hook_warn "PATCH_TE_FLASH_ATTN=1 but no _flash_attn_max_version = PkgVersion(...) line in transformer_engine at ${dirs[*]}; this version does not cap flash-attn there. Nothing patched."
    return 0
  fi
  for file in "${files[@]}"; do
    patch_file "$file" "$target"
  done
}

main "$@"
