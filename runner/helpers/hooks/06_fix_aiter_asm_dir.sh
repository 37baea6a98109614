#!/usr/bin/env bash
# 06_fix_aiter_asm_dir.sh: make AITER find its prebuilt kernels for this GPU.
# primus-hook-needs-command: rocminfo
#
# No gate; normally exit 0. Upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/. Needs rocminfo on PATH,
# the Python package aiter (one $PRIMUS_PYTHON call) with
# <aiter>/../aiter_meta/hsa, and a gfx... token in `rocminfo` output (the first,
# lower-cased); else nothing to do. Then:
#   - an AITER_ASM_DIR assignment in <aiter>/jit/core.py that points below
#     .../hsa/ (for example .../hsa/gfx942/) is reset to .../hsa/;
#   - each hsa/<gfx>/<entry> gets a relative symlink hsa/<entry> -> <gfx>/<entry>
#     (real files and directories there are kept, wrong links repaired).
# Emits nothing. Under PRIMUS_DRY_RUN=1 only says what it would change.
set -uo pipefail

command -v rocminfo >/dev/null || exit 0
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"

# aiter_dir: print the directory of the installed aiter package.
aiter_dir() {
  "$PRIMUS_PYTHON" -c '
import importlib.util, sys
spec = importlib.util.find_spec("aiter")
if spec is None or not spec.submodule_search_locations:
    sys.exit(1)
print(list(spec.submodule_search_locations)[0])' 2>/dev/null
}

# fix_core FILE: reset an AITER_ASM_DIR pointing below .../hsa/ to .../hsa/.
readonly ASM_RE="^([[:space:]]*AITER_ASM_DIR[[:space:]]*=.*/hsa/)[^\"'/][^\"']*([\"'])"
fix_core() {
  local file=$1
  [[ -f $file ]] || return 0
  grep -qE "$ASM_RE" -- "$file" || return 0
  if hook_dry_run; then
    hook_info "dry run: would reset AITER_ASM_DIR in $file to .../hsa/"
    return 0
  fi
  sed -i -E "s#$ASM_RE#\\1\\2#" -- "$file"
  hook_info "reset AITER_ASM_DIR in $file to .../hsa/"
}

# link_entries HSA GFX: hsa/<entry> -> <gfx>/<entry> for each entry of hsa/<gfx>.
link_entries() {
  local hsa=$1 gfx=$2 path entry target
  shopt -s nullglob
  for path in "$hsa/$gfx"/*; do
    entry=${path##*/}
    target=$gfx/$entry
    if [[ -L $hsa/$entry ]]; then
      [[ $(readlink -- "$hsa/$entry") != "$target" ]] || continue
    elif [[ -e $hsa/$entry ]]; then
      continue
    fi
    if hook_dry_run; then
      hook_info "dry run: would link $hsa/$entry -> $target"
    else
      ln -sfn -- "$target" "$hsa/$entry"
    fi
  done
  shopt -u nullglob
}

main() {
  primus_pick_python
  local pkg hsa gfx
  pkg=$(aiter_dir) || exit 0
  hsa=$(cd -- "$pkg/.." && pwd)/aiter_meta/hsa
  [[ -d $hsa ]] || exit 0
  gfx=$(rocminfo 2>/dev/null | grep -oiE -m1 'gfx[0-9a-z]+' | head -n1)
  gfx=${gfx,,}
  [[ -n $gfx && -d $hsa/$gfx ]] || exit 0
  fix_core "$pkg/jit/core.py"
  link_entries "$hsa" "$gfx"
  return 0
}

main "$@"
