#!/usr/bin/env bash
# 03_enable_ainic.sh: RCCL settings for AMD Pollara AI NICs (AINIC).
# primus-hook-gate: USING_AINIC
#
# Gate: USING_AINIC=1 (0 / unset: do nothing). Upstream AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/.
# Emits 19 env. lines; each is the value already set (yours, --env, detected,
# or an earlier hook's such as 03_detect_nccl_ib_tc.sh), else the default below.
# A base_env.sh reference default does not count as set (so NCCL_IB_GID_INDEX
# becomes 1 here unless you or the RoCE detection chose one).
#   ANP_HOME_DIR=/workspace/amd-anp RCCL_HOME_DIR=/workspace/rccl MPI_HOME_DIR=/opt/ompi
#   RCCL_AINIC_ROCE=1 (RCCL's built-in ANP support)
#   NCCL_NET_PLUGIN: none when RCCL_AINIC_ROCE=1; else librccl-anp.so if
#     $ANP_HOME_DIR/build/librccl-anp.so exists, else librccl-net.so if that
#     exists, else librccl-anp.so (with a warning; never a failure)
#   NCCL_IB_TC=104 NCCL_IB_FIFO_TC=192 NCCL_IB_GID_INDEX=1 NCCL_IB_SL=0
#   NET_OPTIONAL_RECV_COMPLETION=1 NCCL_IB_ROCE_VERSION_NUM=2 NCCL_MAX_P2P_CHANNELS=56
#   NCCL_IB_USE_INLINE=1 NCCL_GDR_FLUSH_DISABLE=1 NCCL_DMABUF_ENABLE=0
#   NCCL_IGNORE_CPU_AFFINITY=1 NCCL_IB_QPS_PER_CONNECTION=1
#   RCCL_GDR_FLUSH_GPU_MEM_NO_RELAXED_ORDERING=0
#   LD_LIBRARY_PATH: the ROCm lib directory first ($ROCM_HOME/lib, default
#     /opt/rocm/lib, else the first /opt/rocm-*/lib; when it exists), the
#     current entries, then each existing directory not yet listed of
#     /usr/lib/<arch>-linux-gnu, /usr/lib/<arch>-linux-gnu/libibverbs,
#     $RCCL_HOME_DIR/build/release, $ANP_HOME_DIR/build, $MPI_HOME_DIR/install/lib
# Changes no file, so a dry run behaves the same.
set -euo pipefail

case ${USING_AINIC:-0} in 0) exit 0 ;; esac
HOOK_HERE=${BASH_SOURCE[0]%/*}; [[ $HOOK_HERE != "${BASH_SOURCE[0]}" ]] || HOOK_HERE=.
# shellcheck source=runner/helpers/hooks/_lib.sh
source "$HOOK_HERE/_lib.sh"
hook_gate USING_AINIC

# rocm_lib_dir: print the ROCm lib directory, or nothing when none exists.
rocm_lib_dir() {
  local lib=${ROCM_HOME:-/opt/rocm}/lib
  if [[ -d $lib ]]; then
    printf '%s' "$lib"
  elif [[ -z ${ROCM_HOME:-} ]]; then
    local -a found=(/opt/rocm-*/lib)
    [[ -d ${found[0]} ]] && printf '%s' "${found[0]}"
  fi
  return 0
}

# library_path ANP RCCL MPI: print the new LD_LIBRARY_PATH.
library_path() {
  local anp=$1 rccl=$2 mpi=$3 arch=${HOSTTYPE:-x86_64}-linux-gnu rocm entry list=""
  rocm=$(rocm_lib_dir)
  local -a old=() extra=("/usr/lib/$arch" "/usr/lib/$arch/libibverbs" "$rccl/build/release" "$anp/build" "$mpi/install/lib")
  IFS=: read -r -a old <<<"${LD_LIBRARY_PATH-}"
  for entry in "$rocm" "${old[@]}"; do
    [[ -n $entry ]] || continue
    case ":$list:" in *":$entry:"*) ;; *) list+=${list:+:}$entry ;; esac
  done
  for entry in "${extra[@]}"; do
    [[ -d $entry ]] || continue
    case ":$list:" in *":$entry:"*) ;; *) list+=${list:+:}$entry ;; esac
  done
  printf '%s' "$list"
}

main() {
  hook_emit_default ANP_HOME_DIR /workspace/amd-anp
  hook_emit_default RCCL_HOME_DIR /workspace/rccl
  hook_emit_default MPI_HOME_DIR /opt/ompi
  hook_emit_default RCCL_AINIC_ROCE 1
  local plugin
  if [[ $RCCL_AINIC_ROCE == 1 ]]; then
    plugin=none
  elif [[ -f $ANP_HOME_DIR/build/librccl-anp.so ]]; then
    plugin=librccl-anp.so
  elif [[ -f $ANP_HOME_DIR/build/librccl-net.so ]]; then
    plugin=librccl-net.so
  else
    plugin=librccl-anp.so
    if ! hook_is_set NCCL_NET_PLUGIN; then
      hook_warn "RCCL_AINIC_ROCE=$RCCL_AINIC_ROCE and neither librccl-anp.so nor librccl-net.so is in $ANP_HOME_DIR/build; NCCL_NET_PLUGIN=librccl-anp.so must then be found on LD_LIBRARY_PATH (set ANP_HOME_DIR to the AMD ANP install, or RCCL_AINIC_ROCE=1)."
    fi
  fi
  hook_emit_default NCCL_NET_PLUGIN "$plugin"
  hook_emit_default NCCL_IB_TC 104
  hook_emit_default NCCL_IB_FIFO_TC 192
  hook_emit_default NCCL_IB_GID_INDEX 1
  hook_emit_default NCCL_IB_SL 0
  hook_emit_default NET_OPTIONAL_RECV_COMPLETION 1
  hook_emit_default NCCL_IB_ROCE_VERSION_NUM 2
  hook_emit_default NCCL_MAX_P2P_CHANNELS 56
  hook_emit_default NCCL_IB_USE_INLINE 1
  hook_emit_default NCCL_GDR_FLUSH_DISABLE 1
  hook_emit_default NCCL_DMABUF_ENABLE 0
  hook_emit_default NCCL_IGNORE_CPU_AFFINITY 1
  hook_emit_default NCCL_IB_QPS_PER_CONNECTION 1
  hook_emit_default RCCL_GDR_FLUSH_GPU_MEM_NO_RELAXED_ORDERING 0
  hook_emit_env LD_LIBRARY_PATH "$(library_path "$ANP_HOME_DIR" "$RCCL_HOME_DIR" "$MPI_HOME_DIR")"
  hook_info "USING_AINIC=1: NCCL_NET_PLUGIN=$NCCL_NET_PLUGIN NCCL_IB_TC=$NCCL_IB_TC NCCL_IB_FIFO_TC=$NCCL_IB_FIFO_TC NCCL_IB_GID_INDEX=$NCCL_IB_GID_INDEX"
}

main "$@"
