#!/usr/bin/env bash
# 02_rebuild_bnxt.sh: rebuild the Broadcom bnxt_re RDMA user-space driver from a
# primus-hook-gate: REBUILD_BNXT
# primus-hook-installs:
# vendor tar package.
#
# Gate: REBUILD_BNXT=1 (0 / unset: do nothing). Reference section 10.
# Required: PATH_TO_BNXT_TAR_PACKAGE=/path/to/libbnxt_re-<version>.tar.gz
#   (unset -> configuration error, exit 78 -> launch exit 2; not a file -> exit
#   66 -> launch exit 1).
# Steps: tar -xzf into a fresh work directory; in libbnxt_re-*/: sh ./autogen.sh,
# ./configure, make clean all install; keep the distribution's
# libibverbs/libbnxt_re-rdmav34.so as .inbox; write
# /etc/ld.so.conf.d/libbnxt_re.conf (/usr/local/lib); ldconfig; install
# bnxt_re.driver into /etc/libibverbs.d/.
# PRIMUS_BNXT_SYSROOT (default /) prefixes /etc and /usr/lib (chroot installs;
# ldconfig then runs with -r). Emits no env./extra. lines.
# Under PRIMUS_DRY_RUN=1 prints the commands only.
set -euo pipefail

case ${REBUILD_BNXT:-0} in 0) exit 0 ;; esac
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"
hook_gate REBUILD_BNXT

WORK=""
cleanup() {
  if [[ -n $WORK ]]; then rm -rf -- "$WORK"; fi
}

# check_package: PATH_TO_BNXT_TAR_PACKAGE must name a readable file.
check_package() {
  local pkg=${PATH_TO_BNXT_TAR_PACKAGE:-}
  [[ -n $pkg ]] ||
    hook_config_error "REBUILD_BNXT=1 needs PATH_TO_BNXT_TAR_PACKAGE=/path/to/libbnxt_re-<version>.tar.gz; it is unset. (Upstream Primus skips the rebuild here and launches with the inbox driver you asked to replace; set the package, or REBUILD_BNXT=0 to launch with the inbox driver.)"
  [[ -f $pkg && -r $pkg ]] ||
    hook_missing "PATH_TO_BNXT_TAR_PACKAGE='$pkg' is not a readable file; copy the libbnxt_re tar package to every node (or shared storage) and point the variable at it."
}

# install_system_files SRC ROOT: inbox backup, ld.so config, ldconfig, driver file.
install_system_files() {
  local src=$1 root=$2
  local libdir=$root/usr/lib/${HOSTTYPE:-x86_64}-linux-gnu/libibverbs
  local inbox=$libdir/libbnxt_re-rdmav34.so
  if [[ -e $inbox && ! -e $inbox.inbox ]]; then
    hook_run mv -- "$inbox" "$inbox.inbox"
  fi
  local conf=$root/etc/ld.so.conf.d/libbnxt_re.conf
  if hook_dry_run; then
    hook_info "dry run: would write '/usr/local/lib' to $conf"
  else
    mkdir -p -- "${conf%/*}"
    printf '%s\n' /usr/local/lib >"$conf"
    hook_info "wrote $conf"
  fi
  if [[ -n $root ]]; then
    hook_run ldconfig -r "$root"
  else
    hook_run ldconfig
  fi
  hook_run mkdir -p -- "$root/etc/libibverbs.d"
  hook_run cp -f -- "$src/bnxt_re.driver" "$root/etc/libibverbs.d/"
}

main() {
  check_package
  local pkg=$PATH_TO_BNXT_TAR_PACKAGE root=${PRIMUS_BNXT_SYSROOT:-}
  root=${root%/}
  hook_info "REBUILD_BNXT=1: rebuilding bnxt_re from $pkg"
  if hook_dry_run; then
    local work=${TMPDIR:-/tmp}/primus-bnxt.XXXXXX
    hook_run tar -xzf "$pkg" -C "$work"
    hook_info "dry run: would run in $work/libbnxt_re-*/: sh ./autogen.sh; ./configure; make clean all install"
    install_system_files "$work/libbnxt_re-*" "$root"
    hook_info "dry run: nothing was changed"
    return 0
  fi
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/primus-bnxt.XXXXXX")
  trap cleanup EXIT
  hook_run tar -xzf "$pkg" -C "$WORK"
  local -a found
  shopt -s nullglob
  found=("$WORK"/libbnxt_re-*/)
  shopt -u nullglob
  ((${#found[@]} == 1)) ||
    hook_fail "$pkg holds ${#found[@]} libbnxt_re-* directories at its top level; expected exactly one (a Broadcom libbnxt_re source package)."
  local src=${found[0]%/}
  (
    cd -- "$src"
    hook_run sh ./autogen.sh
    hook_run ./configure
    hook_run make clean all install
  )
  install_system_files "$src" "$root"
  hook_info "bnxt_re rebuilt and installed"
}

main "$@"
