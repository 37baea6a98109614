# shellcheck shell=bash
# runner/lib/flight_recorder.sh: PyTorch's flight recorder on ROCm/CUDA hosts.
# Sourced by runner/lib/watchdog.sh; defines only primus_* / PRIMUS_* names and
# never changes shell options. It exports the variables (registered in
# python/primus_runner/data/variables.yaml) and keeps any value the user set
# under either of a variable's names; it reads no dump
# (python/primus_runner/diagnose/bundle.py lists the files found).
#
#   primus_flight_recorder_env VAR LOG_FILE
#       PRIMUS_ACCELERATOR rocm or cuda: the ring size 20000, dump on timeout
#       1, the dump file prefix <log without .log>.ranks/flight-recorder-rank-
#       (PyTorch appends the rank); VAR = one summary line naming them ("" on
#       other hosts). Called again when the log file's name changes: a value
#       this function set follows it.
# The names: the installed torch's own (the workload probe,
# runner/lib/workload.sh, sets PRIMUS_WL_TORCH_FR=1 when torch reads
# TORCH_FR_BUFFER_SIZE): TORCH_FR_BUFFER_SIZE and TORCH_FR_DUMP_TEMP_FILE,
# else their older names TORCH_NCCL_TRACE_BUFFER_SIZE and
# TORCH_NCCL_DEBUG_INFO_TEMP_FILE, which a newer torch still reads with a
# deprecation warning (torchtitan moved to the new names:
# https://github.com/pytorch/torchtitan/pull/1748). TORCH_NCCL_DUMP_ON_TIMEOUT
# has one name. PyTorch: the dump needs a ring size > 0 with dump on timeout
# (https://docs.pytorch.org/docs/stable/torch_nccl_environment_variables.html);
# 20000 entries is torchtitan's default ring size (comm.trace_buf_size,
# https://github.com/pytorch/torchtitan/pull/103). The dump on demand (a hang
# verdict) is not set here: runner/helpers/run_worker.sh sets each rank's FIFOs
# (TORCH_NCCL_DEBUG_INFO_PIPE_FILE, PRIMUS_FR_TRIGGER), on every host (gloo
# records too), and python/primus_runner/monitor/flightrec.py writes them. The
# Neuron runtime has no flight recorder; see docs/when-a-job-hangs.md "Hangs and stacks"
# (NEURON_RT_INSPECT_ON_FAIL).

PRIMUS_FR_OURS=" "   # the names this file set, space-separated

# __primus_fr_either VAR NAME OLD_NAME: VAR = the one of the two names the
# user set ("" when neither; a name this file set is not the user's).
__primus_fr_either() {
  local -n __primus_fr_found=$1
  local name
  __primus_fr_found=""
  for name in "$2" "$3"; do
    [[ -n ${!name:-} && $PRIMUS_FR_OURS != *" $name "* ]] || continue
    __primus_fr_found=$name
    return 0
  done
}

# __primus_fr_set NAME VALUE: export NAME=VALUE and note it as ours.
__primus_fr_set() {
  printf -v "$1" '%s' "$2"
  export "${1?}"
  [[ $PRIMUS_FR_OURS == *" $1 "* ]] || PRIMUS_FR_OURS+="$1 "
}

primus_flight_recorder_env() {
  local -n __primus_fr_line=$1
  __primus_fr_line=""
  [[ ${PRIMUS_ACCELERATOR:-} == rocm || ${PRIMUS_ACCELERATOR:-} == cuda ]] || return 0
  local prefix=${2%.log}.ranks/flight-recorder-rank- size=TORCH_NCCL_TRACE_BUFFER_SIZE
  local file=TORCH_NCCL_DEBUG_INFO_TEMP_FILE users text=""
  if [[ ${PRIMUS_WL_TORCH_FR:-} == 1 ]]; then
    size=TORCH_FR_BUFFER_SIZE file=TORCH_FR_DUMP_TEMP_FILE
  fi
  local -a shown=()
  __primus_fr_either users TORCH_FR_BUFFER_SIZE TORCH_NCCL_TRACE_BUFFER_SIZE
  if [[ -z $users ]]; then
    __primus_fr_set "$size" 20000
    shown+=("$size=20000 (default)")
  else
    shown+=("$users=${!users} (yours)")
  fi
  __primus_fr_either users TORCH_NCCL_DUMP_ON_TIMEOUT TORCH_NCCL_DUMP_ON_TIMEOUT
  if [[ -z $users ]]; then
    __primus_fr_set TORCH_NCCL_DUMP_ON_TIMEOUT 1
    shown+=("TORCH_NCCL_DUMP_ON_TIMEOUT=1 (default)")
  else
    shown+=("TORCH_NCCL_DUMP_ON_TIMEOUT=$TORCH_NCCL_DUMP_ON_TIMEOUT (yours)")
  fi
  __primus_fr_either users TORCH_FR_DUMP_TEMP_FILE TORCH_NCCL_DEBUG_INFO_TEMP_FILE
  if [[ -z $users ]]; then
    __primus_fr_set "$file" "$prefix"
    shown+=("$file=$prefix (default)")
  else
    shown+=("$users=${!users} (yours)")
  fi
  printf -v text ' %s' "${shown[@]}"
  __primus_fr_line="  flight recorder:$text"
}
