# shellcheck shell=bash
# runner/lib/flight_recorder.sh: PyTorch's flight recorder on ROCm/CUDA hosts (issue 25).
# Sourced by runner/primus-cli-direct.sh; defines only primus_* / PRIMUS_* names
# and never changes shell options. It exports the three variables (registered in
# python/primus_runner/data/variables.yaml) and keeps any value the user set; it
# reads no dump (python/primus_runner/diagnose/bundle.py lists the files found).
#
#   primus_flight_recorder_env VAR LOG_FILE
#       PRIMUS_ACCELERATOR rocm or cuda: TORCH_NCCL_TRACE_BUFFER_SIZE=20000,
#       TORCH_NCCL_DUMP_ON_TIMEOUT=1, TORCH_NCCL_DEBUG_INFO_TEMP_FILE=
#       <log without .log>.ranks/flight-recorder-rank- (PyTorch appends the rank);
#       VAR = one summary line naming them ("" on other hosts). Called again
#       when the log file's name changes: a value this function set follows it.
# PyTorch: the dump needs TORCH_NCCL_TRACE_BUFFER_SIZE > 0 with
# TORCH_NCCL_DUMP_ON_TIMEOUT (https://docs.pytorch.org/docs/stable/torch_nccl_environment_variables.html);
# 20000 entries is torchtitan's default ring size (comm.trace_buf_size,
# https://github.com/pytorch/torchtitan/pull/103). The Neuron runtime has no
# flight recorder; see README "Hangs and stacks" (NEURON_RT_INSPECT_ON_FAIL).

PRIMUS_FR_OURS=""   # the TORCH_NCCL_DEBUG_INFO_TEMP_FILE value this file set

primus_flight_recorder_env() {
  local -n __primus_fr_line=$1
  __primus_fr_line=""
  [[ ${PRIMUS_ACCELERATOR:-} == rocm || ${PRIMUS_ACCELERATOR:-} == cuda ]] || return 0
  local prefix=${2%.log}.ranks/flight-recorder-rank- name origin text=""
  if [[ -z ${TORCH_NCCL_DEBUG_INFO_TEMP_FILE:-} || ${TORCH_NCCL_DEBUG_INFO_TEMP_FILE:-} == "$PRIMUS_FR_OURS" ]]; then
    export TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$prefix
    PRIMUS_FR_OURS=$prefix
  fi
  [[ -n ${TORCH_NCCL_TRACE_BUFFER_SIZE:-} ]] || { export TORCH_NCCL_TRACE_BUFFER_SIZE=20000; PRIMUS_FR_SET_SIZE=1; }
  [[ -n ${TORCH_NCCL_DUMP_ON_TIMEOUT:-} ]] || { export TORCH_NCCL_DUMP_ON_TIMEOUT=1; PRIMUS_FR_SET_DUMP=1; }
  for name in TORCH_NCCL_TRACE_BUFFER_SIZE TORCH_NCCL_DUMP_ON_TIMEOUT TORCH_NCCL_DEBUG_INFO_TEMP_FILE; do
    origin=yours
    case $name in
      TORCH_NCCL_TRACE_BUFFER_SIZE) [[ -z ${PRIMUS_FR_SET_SIZE:-} ]] || origin=default ;;
      TORCH_NCCL_DUMP_ON_TIMEOUT) [[ -z ${PRIMUS_FR_SET_DUMP:-} ]] || origin=default ;;
      *) [[ ${!name} != "$PRIMUS_FR_OURS" ]] || origin=default ;;
    esac
    text+=" $name=${!name} ($origin)"
  done
  __primus_fr_line="  flight recorder:$text"
}
