#!/usr/bin/env bash
# runner/helpers/hang_watch.sh: the progress watchdog of one launch on this node.
#
# Usage (started by runner/lib/watchdog.sh, in a session of its own):
#   hang_watch.sh LOG_FILE RUN_ID TIMEOUT ACTION LAUNCHER_PID RUN_MODE
#   (stdin: a pipe only the launcher writes; end of file = the launch ended)
#
# Progress is a newer modification time of any file of the run's rank log tree
# (<log without .log>.ranks/, torchrun's per-rank output and the rank-<R>.heartbeat
# files that PRIMUS_HEARTBEAT_FILE names), and in run mode single of the log file
# itself. One sleeping process: it wakes when TIMEOUT seconds could have passed
# since the newest progress (a `read -t` on its pipe, no timer process), looks at
# the file times with one `stat`, and goes back to sleep; the cost per wake is one
# process, once per TIMEOUT at most while the run makes progress.
# With no progress for TIMEOUT seconds it runs the diagnosis (python -m
# primus_runner.diagnose dump: every local rank's stacks into <log>.hang-<n>/,
# one grouped summary on stderr, which is the launcher's console and log); on
# node 0 of several (NNODES, NODE_RANK) it then waits up to 30 s for the other
# nodes' bundles beside its log (a shared filesystem) and prints one summary
# across nodes, or where each node's bundle is (diagnose gather). Then:
#   ACTION=report  keep watching; report again after new progress and another
#                  TIMEOUT, or after another full TIMEOUT without any
#   ACTION=stop    leave $PRIMUS_RC_DIR/hang-stop and send SIGTERM to the launcher,
#                  which stops the run with its usual grace and exits with 86
#                  (runner/lib/watchdog.sh, primus_watchdog_exit_code).
# It owns the decision "no progress"; it reads no stacks itself and stops nothing
# but by asking the launcher.
set -uo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
if (($# != 6)) || [[ ! $3 =~ ^[0-9]{1,7}$ || ! $5 =~ ^[0-9]+$ ]]; then
  echo "hang_watch.sh: usage: hang_watch.sh LOG_FILE RUN_ID TIMEOUT ACTION LAUNCHER_PID RUN_MODE" >&2
  exit 2
fi
trap '' INT TERM HUP USR1 USR2 PIPE
log_file=$1 run_id=$2 timeout=$((10#$3)) action=$4 launcher=$5 mode=$6
ranks_dir=${log_file%.log}.ranks
here=${BASH_SOURCE[0]%/*}
shopt -s globstar nullglob

# newest_progress: the newest modification time (epoch seconds) of the run's
# progress files, 0 when there is none yet.
newest_progress() {
  local -a files=("$ranks_dir"/**/*.log "$ranks_dir"/*.heartbeat) workers=()
  [[ -z ${PRIMUS_RC_DIR:-} ]] || workers=("$PRIMUS_RC_DIR"/worker.*)
  if [[ $mode == single ]]; then
    files+=("$log_file")
  elif ((${#workers[@]} == 0)); then
    echo "$EPOCHSECONDS"  # torchrun has not started a rank yet (its rendezvous has its own timeout)
    return
  fi
  files+=("${workers[@]}")  # a rank starting is progress
  ((${#files[@]} > 0)) || { echo 0; return; }
  local newest=0 t
  while read -r t; do
    ((t > newest)) && newest=$t
  done < <(stat -L -c %Y -- "${files[@]}" 2>/dev/null)
  echo "$newest"
}

# say TEXT: a warning in the launcher's format (common.sh, sourced at the first use).
say() {
  if ! declare -F LOG_WARN >/dev/null; then
    # shellcheck source=runner/lib/common.sh
    source "$here/../lib/common.sh"
  fi
  LOG_WARN "$1"
}

# diagnose IDLE: dump and summarise every local rank (hang bundle N of this watch).
diagnose() {
  local heading="hang watchdog: no output and no heartbeat from any local rank for $1 s"
  heading+=" (PRIMUS_HANG_TIMEOUT=$timeout, PRIMUS_HANG_ACTION=$action)"
  PYTHONPATH=$here/../../python${PYTHONPATH:+:$PYTHONPATH} "${PRIMUS_PYTHON:-python3}" \
    -m primus_runner.diagnose dump --run-id "$run_id" --heading "$heading" --kind hang ||
    say "hang watchdog: the diagnosis failed (see above); $heading"
}

baseline=$EPOCHSECONDS
while :; do
  newest=$(newest_progress)
  ((newest > baseline)) && baseline=$newest
  idle=$((EPOCHSECONDS - baseline))
  if ((idle >= timeout)); then
    started=$EPOCHSECONDS
    diagnose "$idle"
    # Node 0 of a multi-node launch: one summary across the nodes' bundles.
    if [[ ${NNODES:-1} =~ ^[0-9]+$ && ${NNODES:-1} -gt 1 && ${NODE_RANK:-0} == 0 ]]; then
      PYTHONPATH=$here/../../python${PYTHONPATH:+:$PYTHONPATH} "${PRIMUS_PYTHON:-python3}" \
        -m primus_runner.diagnose gather --log "$log_file" --nodes "$NNODES" --since "$((started - timeout))" ||
        say "hang watchdog: the summary across nodes failed (see above)"
    fi
    baseline=$EPOCHSECONDS
    if [[ $action == stop ]]; then
      [[ -z ${PRIMUS_RC_DIR:-} || ! -d $PRIMUS_RC_DIR ]] || : >"$PRIMUS_RC_DIR/hang-stop"
      say "hang watchdog: PRIMUS_HANG_ACTION=stop: stopping the run (SIGTERM to the launcher, pid $launcher); exit code 86."
      kill -TERM "$launcher" 2>/dev/null || true
      cat >/dev/null  # until the launcher closes the pipe
      exit 0
    fi
    continue
  fi
  line=""
  # Plain read (the line is not kept): `IFS= read` would make every later
  # fork rebuild the environment (runner/lib/common.sh, primus_read).
  read -r -t "$((timeout - idle + 1))" line
  rc=$?
  ((rc > 128)) || exit 0  # a line ("done") or end of file: the launch ended
done
