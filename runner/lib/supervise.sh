# shellcheck shell=bash
# runner/lib/supervise.sh: start the workload and stop it (signals, grace,
# exit status). Sourced by the launch modes; defines only primus_* names and
# never changes shell options.
#
#   primus_run_workload MODE LOG_FILE CMD...
#       MODE single|torchrun. Runs CMD in a session of its own, waits for it,
#       and exits with the workload's code (torchrun: the failing worker's own
#       code, recorded by run_worker.sh in PRIMUS_RC_DIR). TERM/INT/HUP stop
#       the tree (primus_stop_run) and exit 128+N.
#   PRIMUS_SUPERVISE_CLEANUP
#       name of a function run before every exit (e.g. flush the log tees).

if [[ -n ${__PRIMUS_SUPERVISE_SH:-} ]]; then
  return 0
fi
__PRIMUS_SUPERVISE_SH=1

PRIMUS_RUN_PID=""
PRIMUS_SUPERVISE_CLEANUP=${PRIMUS_SUPERVISE_CLEANUP:-}

# primus_descendants PID: print PID's descendants (breadth first, read from /proc).
# shellcheck disable=SC2329  # used from the signal traps
primus_descendants() {
  local -A parent_of=()
  local stat pid rest ppid
  for stat in /proc/[0-9]*/stat; do
    { read -r rest <"$stat"; } 2>/dev/null || continue
    pid=${stat#/proc/}
    pid=${pid%/stat}
    rest=${rest##*) }
    read -r _ ppid _ <<<"$rest"
    parent_of[$pid]=$ppid
  done
  local -a queue=("$1") found=()
  while ((${#queue[@]} > 0)); do
    local current=${queue[0]}
    queue=("${queue[@]:1}")
    for pid in "${!parent_of[@]}"; do
      if [[ ${parent_of[$pid]} == "$current" ]]; then
        found+=("$pid")
        queue+=("$pid")
      fi
    done
  done
  printf '%s\n' "${found[@]}"
}

# primus_stop_run SIGNAL_NUMBER: stop the whole launched tree (TERM, then KILL
# after PRIMUS_KILL_GRACE seconds), then exit 128+N.
# shellcheck disable=SC2329  # installed as a trap
primus_stop_run() {
  local num=$1
  # The console/log tees may already be gone (scancel signals the whole
  # step): a write must not turn the exit status into 141 (SIGPIPE).
  trap '' TERM INT HUP PIPE
  if [[ -n $PRIMUS_RUN_PID ]]; then
    local -a tree
    mapfile -t tree < <(primus_descendants "$PRIMUS_RUN_PID")
    tree=("$PRIMUS_RUN_PID" "${tree[@]}")
    LOG_WARN "signal $num received: stopping the launched processes (${#tree[@]})."
    kill -TERM -- "-$PRIMUS_RUN_PID" 2>/dev/null || true
    kill -TERM "${tree[@]}" 2>/dev/null || true
    local deadline=$((SECONDS + 10#${PRIMUS_KILL_GRACE:-10}))
    while ((SECONDS < deadline)) && primus_any_alive "${tree[@]}"; do
      sleep 0.1
    done
    kill -KILL "${tree[@]}" 2>/dev/null || true
    wait "$PRIMUS_RUN_PID" 2>/dev/null || true
  fi
  primus_cleanup_run
  exit $((128 + num))
}

# primus_any_alive PID...: true while one of the PIDs runs (zombies count as gone).
# shellcheck disable=SC2329  # used from the signal traps
primus_any_alive() {
  local pid
  for pid in "$@"; do
    kill -0 "$pid" 2>/dev/null && [[ $(<"/proc/$pid/stat") != *") Z "* ]] && return 0
  done
  return 1
}

# primus_cleanup_run: remove the exit-code directory, run PRIMUS_SUPERVISE_CLEANUP.
primus_cleanup_run() {
  [[ -z ${PRIMUS_RC_DIR:-} ]] || rm -rf -- "$PRIMUS_RC_DIR"
  [[ -z $PRIMUS_SUPERVISE_CLEANUP ]] || "$PRIMUS_SUPERVISE_CLEANUP"
}

# primus_worker_exit_code TORCHRUN_RC: the failing worker's own code when one was recorded.
primus_worker_exit_code() {
  local rc=$1 file
  ((rc != 0)) || { echo 0; return; }
  for file in "$PRIMUS_RC_DIR"/rank-*; do
    [[ -f $file ]] || continue
    rc=$(<"$file")
    break
  done
  echo "$rc"
}

# primus_run_workload MODE LOG_FILE CMD...: see the header.
primus_run_workload() {
  local mode=$1 log_file=$2
  shift 2
  PRIMUS_RC_DIR=$(mktemp -d "${TMPDIR:-/tmp}/primus-rc.XXXXXX")
  export PRIMUS_RC_DIR
  trap 'primus_stop_run 15' TERM
  trap 'primus_stop_run 2' INT
  trap 'primus_stop_run 1' HUP
  # A session of its own: the whole tree can be signalled as one group.
  setsid "$@" </dev/null &
  PRIMUS_RUN_PID=$!
  local rc=0
  wait "$PRIMUS_RUN_PID" || rc=$?
  PRIMUS_RUN_PID=""
  trap - TERM INT HUP
  if [[ $mode != single ]]; then
    rc=$(primus_worker_exit_code "$rc")
  fi
  if ((rc == 0)); then
    LOG_INFO "workload finished successfully; log: $log_file"
  else
    LOG_ERROR "workload failed with exit code $rc; log: $log_file"
  fi
  primus_cleanup_run
  exit "$rc"
}
