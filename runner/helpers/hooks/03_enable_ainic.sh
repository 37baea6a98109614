#!/usr/bin/env bash
# 03_enable_ainic.sh: RCCL settings for AMD Pollara AI NICs (AINIC).
# primus-hook-gate: USING_AINIC
#
# Gate: USING_AINIC=1 (0 / unset: do nothing). Reference sections 4, 10, 11.
# Inputs: ANP_HOME_DIR (default /opt/amd-anp), RCCL_HOME_DIR (default /opt/rccl),
# MPI_HOME_DIR (default /opt/ompi).
# The network plugin is the first of librccl-anp.so, librccl-net.so found in
# $ANP_HOME_DIR/build (neither -> exit 66, launch exit 1).
# Emits env. lines for: ANP_HOME_DIR RCCL_HOME_DIR MPI_HOME_DIR NCCL_NET_PLUGIN
# NCCL_IB_GID_INDEX=1 NCCL_MAX_P2P_CHANNELS=56 NCCL_IB_TC=41 NCCL_IB_FIFO_TC=185
# NET_OPTIONAL_RECV_COMPLETION=1 NCCL_IB_USE_INLINE=1
# RCCL_GDR_FLUSH_GPU_MEM_NO_RELAXED_ORDERING=0 NCCL_GDR_FLUSH_DISABLE=1
# NCCL_DMABUF_ENABLE=0 NCCL_IGNORE_CPU_AFFINITY=1 NCCL_IB_QPS_PER_CONNECTION=1
# and LD_LIBRARY_PATH with $RCCL_HOME_DIR/build/release, $ANP_HOME_DIR/build,
# $MPI_HOME_DIR/lib and the system verbs directories in front (entries already
# present are not repeated). These replace the base_env.sh defaults (hook env.
# beats exported values); to override one, use --env NAME=VALUE.
# Changes no file, so a dry run behaves the same.
set -euo pipefail

case ${USING_AINIC:-0} in 0) exit 0 ;; esac
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
hook_gate USING_AINIC

# prepend_paths VAR PATH...: VAR = PATHs (in order) then the old value, without duplicates.
prepend_paths() {
  local __var=$1 __old=${!1:-} __new="" __p
  shift
  for __p in "$@"; do
    case ":$__new:" in *":$__p:"*) continue ;; esac
    __new+=${__new:+:}$__p
  done
  local -a __rest
  IFS=: read -r -a __rest <<<"$__old"
  for __p in "${__rest[@]}"; do
    [[ -n $__p ]] || continue
    case ":$__new:" in *":$__p:"*) continue ;; esac
    __new+=:$__p
  done
  printf -v "$__var" '%s' "$__new"
}

main() {
  local anp=${ANP_HOME_DIR:-/opt/amd-anp} rccl=${RCCL_HOME_DIR:-/opt/rccl} mpi=${MPI_HOME_DIR:-/opt/ompi}
  local plugin
  if [[ -f $anp/build/librccl-anp.so ]]; then
    plugin=librccl-anp.so
  elif [[ -f $anp/build/librccl-net.so ]]; then
    plugin=librccl-net.so
  else
    hook_missing "USING_AINIC=1 but neither librccl-anp.so nor librccl-net.so is in ANP_HOME_DIR/build ($anp/build); set ANP_HOME_DIR to the AMD ANP install or use an image that has it."
  fi
  local dir
  for dir in "$rccl/build/release" "$mpi/lib"; do
    [[ -d $dir ]] || hook_warn "$dir does not exist (RCCL_HOME_DIR=$rccl, MPI_HOME_DIR=$mpi); the job may load another RCCL/MPI."
  done
  local arch=${HOSTTYPE:-x86_64}-linux-gnu ld=${LD_LIBRARY_PATH:-}
  prepend_paths ld "/usr/lib/$arch" "/usr/lib/$arch/libibverbs" "$rccl/build/release" "$anp/build" "$mpi/lib"
  hook_info "USING_AINIC=1: NCCL_NET_PLUGIN=$plugin from $anp/build; RCCL_HOME_DIR=$rccl MPI_HOME_DIR=$mpi"
  hook_emit_env ANP_HOME_DIR "$anp"
  hook_emit_env RCCL_HOME_DIR "$rccl"
  hook_emit_env MPI_HOME_DIR "$mpi"
  hook_emit_env NCCL_NET_PLUGIN "$plugin"
  hook_emit_env NCCL_IB_GID_INDEX 1
  hook_emit_env NCCL_MAX_P2P_CHANNELS 56
  hook_emit_env NCCL_IB_TC 41
  hook_emit_env NCCL_IB_FIFO_TC 185
  hook_emit_env NET_OPTIONAL_RECV_COMPLETION 1
  hook_emit_env NCCL_IB_USE_INLINE 1
  hook_emit_env RCCL_GDR_FLUSH_GPU_MEM_NO_RELAXED_ORDERING 0
  hook_emit_env NCCL_GDR_FLUSH_DISABLE 1
  hook_emit_env NCCL_DMABUF_ENABLE 0
  hook_emit_env NCCL_IGNORE_CPU_AFFINITY 1
  hook_emit_env NCCL_IB_QPS_PER_CONNECTION 1
  hook_emit_env LD_LIBRARY_PATH "$ld"
}

main "$@"
