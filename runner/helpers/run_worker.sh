#!/usr/bin/env bash
# runner/helpers/run_worker.sh: run one torchrun worker and record its exit status.
#
# Usage (by the direct launcher, as torchrun's --no-python entry):
#   run_worker.sh PROGRAM [ARGS...]
#
# torchrun reports any failed worker as exit 1; the launcher wants the worker's
# own code (exit codes: docs/exit-codes.md "Exit codes") and a report naming the rank that failed first. So
# each worker runs through this wrapper, which on a non-zero status writes
# $PRIMUS_RC_DIR/failed-<RANK>: NUL-terminated fields code, end time (us since
# the epoch), RANK, LOCAL_RANK, the files behind its stdout and stderr (torchrun's
# per-rank logs) and TORCHELASTIC_ERROR_FILE; python/primus_runner/launch/report.py
# reads them.
# Per worker it also applies:
#   PRIMUS_NEURON_CORE_SLICES       one core list per local rank, space separated
#                                   (the Neuron layer's, python/primus_runner/
#                                   launch/neuron_layer.py; no core arithmetic
#                                   here): with PRIMUS_NEURON_CORES_PER_PROC=K > 1
#                                   (SPMD) word LOCAL_RANK becomes this worker's
#                                   NEURON_RT_VISIBLE_CORES; with one core per
#                                   process it is exported as PRIMUS_NEURON_CORE and
#                                   NEURON_RT_VISIBLE_CORES is left to PyTorch/XLA
#                                   (it maps LOCAL_RANK to that same core and
#                                   rejects a single-core list per process)
#   PRIMUS_NUMA_BIND=1              run through numa_bind.sh for this local rank
# It registers its pid as $PRIMUS_RC_DIR/worker.<RANK>: the launcher sends
# SIGUSR1/SIGUSR2 to this wrapper's child (the rank), once. A signal sent to
# this wrapper's process group (torchrun's SIGTERM, Slurm's step-wide signals)
# reaches the rank directly; the wrapper only keeps waiting for it (traps).
# With PRIMUS_RANK_LOG_DIR (the launcher's <log>.ranks, torchrun's --log-dir)
# the worker's stderr joins its stdout (one file, lines in order) and
# PRIMUS_RANK_LOG_DIR/rank-<RANK>.log links to that file of torchrun's
# <run id>/attempt_<N>/<local rank>/ tree (a restart moves the link). The
# node's run monitor writes the worker's output to that file
# (python/primus_runner/monitor/output.py): a full disk never fails the rank;
# the one warning of the launch (PRIMUS_LOG_ONCE) goes to the launcher's stderr,
# and a rank the console shows (PRIMUS_CONSOLE_RANKS: local ranks, comma
# separated, or "all") sends its lines on to the console, prefixed as torchrun
# does ([default<N>]:).
# Deliberately no `set -e`: the program's status is the point.
set -uo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
if [[ $# -eq 0 ]]; then
  echo "run_worker.sh: missing PROGRAM; usage: run_worker.sh PROGRAM [ARGS...]" >&2
  exit 2
fi

# torchrun's line prefix, when torchrun_quiet.py set it (not the user): torchrun's
# business, not the rank's.
if [[ ${PRIMUS_PREFIX_TEMPLATE_OURS:-} == 1 ]]; then
  unset TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE PRIMUS_PREFIX_TEMPLATE_OURS
fi
__primus_local_rank=${LOCAL_RANK:-0}
# Values reach shell arithmetic below: digits only.
for __primus_value in "$__primus_local_rank" "${PRIMUS_NEURON_CORES_PER_PROC:-1}"; do
  if [[ ! $__primus_value =~ ^[0-9]{1,6}$ ]]; then
    echo "run_worker.sh: LOCAL_RANK / PRIMUS_NEURON_CORES_PER_PROC must be whole numbers; got '$__primus_value'" >&2
    exit 2
  fi
done
if [[ -n ${PRIMUS_NEURON_CORE_SLICES:-} ]]; then
  read -r -a __primus_slices <<<"$PRIMUS_NEURON_CORE_SLICES"
  if ((10#$__primus_local_rank >= ${#__primus_slices[@]})); then
    echo "run_worker.sh: LOCAL_RANK=$__primus_local_rank has no Neuron core slice in PRIMUS_NEURON_CORE_SLICES='$PRIMUS_NEURON_CORE_SLICES'" >&2
    exit 2
  fi
  if ((10#${PRIMUS_NEURON_CORES_PER_PROC:-1} > 1)); then
    export NEURON_RT_VISIBLE_CORES=${__primus_slices[10#$__primus_local_rank]}
  else
    export PRIMUS_NEURON_CORE=${__primus_slices[10#$__primus_local_rank]}
  fi
fi

# link_rank_log: PRIMUS_RANK_LOG_DIR/rank-<RANK>.log -> the file torchrun
# redirected this worker's stdout to, when it lies in that directory. Found by
# comparing files (-ef) rather than with readlink, and `ln` runs beside the
# rank instead of before it: every process started here delays the rank's
# start (launch overhead).
link_rank_log() {
  local dir=${PRIMUS_RANK_LOG_DIR%/} file out=""
  __PRIMUS_RANK_OUT=""
  shopt -s globstar nullglob
  for file in "$dir"/*/**/*.log; do
    [[ ! -L $file && /proc/$$/fd/1 -ef $file ]] || continue
    out=$file
    break
  done
  shopt -u globstar nullglob
  [[ -n $out ]] || return 0
  __PRIMUS_RANK_OUT=$out
  exec 2>&1
  (trap "" USR1 USR2; exec ln -sfn -- "${out#"$dir"/}" "$dir/rank-${RANK:-$__primus_local_rank}.log" 2>/dev/null) &
}
__PRIMUS_RANK_OUT=""
[[ -z ${PRIMUS_RANK_LOG_DIR:-} ]] || link_rank_log

# rank_output: the rank's output into a pipe the run monitor copies into
# __PRIMUS_RANK_OUT (python/primus_runner/monitor/output.py, a thread of the
# node's one monitor: no writer process per rank). This wrapper keeps the pipe's
# read end open for the rank's life (the rank never gets it): a monitor killed
# (kill -9, the OOM killer) then leaves the rank's prints waiting in the pipe
# instead of failing with EPIPE, and its successor takes the pipe over from
# $PRIMUS_RC_DIR/writer.<RANK>: WRAPPER_PID READ_FD DONE_FD LOCAL_RANK FILE. The
# monitor writes a line into the DONE pipe once the rank's pipe has ended and
# every line is in the file.
rank_output() {
  local pipe data data_w
  [[ -n $__PRIMUS_RANK_OUT && -n ${PRIMUS_RC_DIR:-} && -d $PRIMUS_RC_DIR ]] || return 0
  exec {pipe}<> <(:)
  # shellcheck disable=SC2094  # one end each of the pipe, on purpose
  exec {__PRIMUS_WRITER_DONE}<"/proc/self/fd/$pipe" {__PRIMUS_DONE_W}>"/proc/self/fd/$pipe" {pipe}>&-
  exec {data}<> <(:)
  # shellcheck disable=SC2094  # one end each of the pipe, on purpose
  exec {__PRIMUS_RANK_PIPE}<"/proc/self/fd/$data" {data_w}>"/proc/self/fd/$data" {data}>&-
  exec 1>&"$data_w" 2>&1 {data_w}>&-
  printf '%s %s %s %s %s\n' "$$" "$__PRIMUS_RANK_PIPE" "$__PRIMUS_DONE_W" "$__primus_local_rank" \
    "$__PRIMUS_RANK_OUT" >"$PRIMUS_RC_DIR/writer.${RANK:-$__primus_local_rank}"
}
__PRIMUS_RANK_PIPE=""
__PRIMUS_WRITER_DONE=""
__PRIMUS_DONE_W=""
rank_output
# The progress watchdog's heartbeat, one file per rank (runner/lib/watchdog.sh).
[[ -z ${PRIMUS_HEARTBEAT_DIR:-} ]] ||
  export PRIMUS_HEARTBEAT_FILE=$PRIMUS_HEARTBEAT_DIR/rank-${RANK:-$__primus_local_rank}.heartbeat
# Stack dumps from inside the rank (runner/helpers/pystartup/sitecustomize.py):
# faulthandler on SIGURG when py-spy cannot attach, the other ranks' stacks
# read when this one raises, and the flight recorder dumped when the run monitor
# writes a byte to a FIFO the rank creates (python/primus_runner/monitor/flightrec.py):
# PRIMUS_FR_TRIGGER, the dump thread's (gloo and any backend without torch's own
# pipe), and TORCH_NCCL_DEBUG_INFO_PIPE_FILE (a user value kept), the stem of
# ProcessGroupNCCL's own: it appends the rank and ".pipe" and creates the FIFO
# itself (struct DumpPipe, torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp), in
# this directory that exists for the rank's whole life.
if [[ -n ${PRIMUS_RC_DIR:-} ]]; then
  export PYTHONPATH=${BASH_SOURCE[0]%/*}/pystartup${PYTHONPATH:+:$PYTHONPATH}
  export PRIMUS_FAULTHANDLER_FILE=$PRIMUS_RC_DIR/faulthandler-${RANK:-$__primus_local_rank}.txt
  export PRIMUS_FAILURE_STACKS=$PRIMUS_RC_DIR
  export PRIMUS_FR_TRIGGER=$PRIMUS_RC_DIR/fr-trigger-${RANK:-$__primus_local_rank}
  [[ -n ${TORCH_NCCL_DEBUG_INFO_PIPE_FILE:-} ]] || export TORCH_NCCL_DEBUG_INFO_PIPE_FILE=$PRIMUS_RC_DIR/nccl-pipe-rank-
fi

# Foreground child: bash runs these (no-op) traps after the child ends, so
# the wrapper outlives the signal and records the child's own status.
trap ':' TERM INT HUP USR1 USR2
if [[ -n ${PRIMUS_RC_DIR:-} && -d $PRIMUS_RC_DIR ]]; then
  printf '%s\n' "$$" >"$PRIMUS_RC_DIR/worker.${RANK:-$__primus_local_rank}"
fi

# Every name this wrapper sets before the rank starts is __primus_ or
# __PRIMUS_: the rank inherits the user's own exported names unchanged.
__primus_cmd=("$@")
if [[ ${PRIMUS_NUMA_BIND:-0} == 1 ]]; then
  __primus_cmd=("$(dirname "${BASH_SOURCE[0]}")/numa_bind.sh" "$__primus_local_rank" -- "$@")
fi

# The program gets this wrapper's stderr; the wrapper's own goes to /dev/null
# from here on, so bash's report of a child stopped by a signal ("Terminated",
# "Killed") never joins the rank's output: the launcher says how the run ended.
exec {__primus_worker_err}>&2 2>/dev/null
if [[ -n $__PRIMUS_RANK_PIPE ]]; then
  "${__primus_cmd[@]}" 2>&"$__primus_worker_err" {__primus_worker_err}>&- {__PRIMUS_RANK_PIPE}<&- \
    {__PRIMUS_WRITER_DONE}<&- {__PRIMUS_DONE_W}>&-
else
  "${__primus_cmd[@]}" 2>&"$__primus_worker_err" {__primus_worker_err}>&-
fi
rc=$?
ended=${EPOCHREALTIME//[.,]/}
# Every line written before the rank is reported gone (torchrun stops echoing it
# then): the run monitor says "t" when it takes the pipe and "d" once the pipe
# has ended and every line is written; it is not waited for beyond 2 s after a
# "t" (a child the rank left behind may still hold the output), nor beyond 30 s
# when no monitor took the pipe (one starting on a loaded host).
if [[ -n $__PRIMUS_WRITER_DONE ]]; then
  exec >/dev/null {__primus_worker_err}>&-
  __primus_wait=30
  while read -r -t "$__primus_wait" -u "$__PRIMUS_WRITER_DONE" __primus_said && [[ $__primus_said != d ]]; do
    __primus_wait=2
  done
  exec {__PRIMUS_WRITER_DONE}<&- {__PRIMUS_DONE_W}>&-
fi
if ((rc != 0)) && [[ -n ${PRIMUS_RC_DIR:-} && -d $PRIMUS_RC_DIR ]]; then
  if [[ -n $__PRIMUS_RANK_OUT ]]; then
    out=$__PRIMUS_RANK_OUT err=$__PRIMUS_RANK_OUT
  else
    out=$(readlink "/proc/$$/fd/1") || out=""
    err=$(readlink "/proc/$$/fd/$__primus_worker_err") || err=""
  fi
  printf '%s\0' "$rc" "$ended" "${RANK:-$__primus_local_rank}" "$__primus_local_rank" "$out" "$err" \
    "${TORCHELASTIC_ERROR_FILE:-}" >"$PRIMUS_RC_DIR/failed-${RANK:-$__primus_local_rank}"
  # The first rank to fail has the stacks of the others read before torchrun
  # stops them (python/primus_runner/diagnose, into the failure report); not
  # when the rank was stopped by SIGHUP/SIGINT/SIGKILL/SIGTERM (a stop, not a failure).
  case $rc in
    129 | 130 | 137 | 143) ;;
    *)
      if [[ -n ${PRIMUS_RUN_ID:-} && ! -e $PRIMUS_RC_DIR/hang-stop ]] &&
        mkdir -- "$PRIMUS_RC_DIR/failure-stacks.lock" 2>/dev/null; then
        PYTHONPATH=${BASH_SOURCE[0]%/*}/../../python \
          "${PRIMUS_PYTHON:-python3}" -m primus_runner.diagnose dump --run-id "$PRIMUS_RUN_ID" \
          --kind failure --no-native --skip-rank "${RANK:-$__primus_local_rank}" --report-file "$PRIMUS_RC_DIR/failure-stacks" \
          --heading "  stacks of this node's ranks still running when rank ${RANK:-$__primus_local_rank} failed" \
          >/dev/null 2>&1 || true
      fi
      ;;
  esac
fi
exit "$rc"
