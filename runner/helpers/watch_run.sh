#!/usr/bin/env bash
# runner/helpers/watch_run.sh: stop a run whose launcher died.
#
# Usage (started by runner/lib/supervise.sh, in a session of its own):
#   watch_run.sh RUN_ID LAUNCHER_PID GRACE   (stdin: a pipe only the launcher writes)
#
# The launcher writes "done" before it exits on purpose. End of file without
# it means the launcher was killed (SIGKILL, the OOM killer): its workload got
# SIGTERM from the parent-death signal (python/primus_runner/launch/spawn.py; torchrun
# sends it on to every worker), so this waits GRACE seconds for every process
# of the run (environment PRIMUS_RUN_ID=RUN_ID), sends SIGKILL to the rest and
# prints the closing line. Signals that end a process group are ignored here.
# Meanwhile it wakes once a second and says so when the run monitor
# ($PRIMUS_RC_DIR/monitor.pid) died.
set -uo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
if (($# != 3)) || [[ ! $3 =~ ^[0-9]{1,5}$ ]]; then
  echo "watch_run.sh: usage: watch_run.sh RUN_ID LAUNCHER_PID GRACE_SECONDS" >&2
  exit 2
fi
trap '' TERM INT HUP USR1 USR2 PIPE
run_id=$1 launcher=$2 grace=$((10#$3))

WATCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
monitor=""  # the run monitor's pid, from $PRIMUS_RC_DIR/monitor.pid once it wrote it

# monitor_died: true once when the run monitor (python/primus_runner/monitor/) is gone.
monitor_died() {
  local stat=""
  if [[ -z $monitor ]]; then
    [[ -n ${PRIMUS_RC_DIR:-} && -s $PRIMUS_RC_DIR/monitor.pid ]] || return 1
    read -r monitor <"$PRIMUS_RC_DIR/monitor.pid" || return 1
    [[ $monitor =~ ^[0-9]+$ ]] || { monitor=dead; return 1; }
  fi
  [[ $monitor != dead ]] || return 1
  { read -r stat <"/proc/$monitor/stat"; } 2>/dev/null || stat=""
  stat=${stat##*) }
  [[ -z $stat || $stat == [ZX]* ]] || return 1
  # The launcher closes the monitor's pipe before it writes "done": a monitor
  # that ended then ended on purpose.
  read -r -t 0.2 line && [[ $line == "done" ]] && exit 0
  return 0
}

# Wake once a second: the launcher's "done" or end of file, or the monitor gone.
line=""
while :; do
  status=0
  IFS= read -r -t 1 line || status=$?
  if ((status == 0)); then
    [[ $line == "done" ]] && exit 0
    continue
  fi
  ((status > 128)) || break  # end of file: the launcher is gone
  if monitor_died; then
    if ! declare -F LOG_WARN >/dev/null; then
      # shellcheck source=runner/lib/common.sh
      source "$WATCH_DIR/lib/common.sh"
    fi
    LOG_WARN "run monitor: the run monitor (pid $monitor) died (killed: SIGKILL or the OOM killer): no hang," \
      "stopped-rank, mismatch or straggler verdict for the rest of this run; the run and its output go on" \
      "(primus-cli stacks still reads the ranks on demand)."
    monitor=dead
  fi
done
[[ $line == "done" ]] && exit 0

if ! declare -F LOG_WARN >/dev/null; then
  # shellcheck source=runner/lib/common.sh
  source "$WATCH_DIR/lib/common.sh"
fi
# shellcheck source=runner/lib/processes.sh
source "$WATCH_DIR/lib/processes.sh"

members=()
mapfile -t members < <(primus_run_members "$run_id")
((${#members[@]} > 0)) || exit 0
count=${#members[@]}
LOG_WARN "the launcher (pid $launcher) is gone (killed: SIGKILL or the OOM killer; sender unknown):" \
  "its workload got SIGTERM; SIGKILL after ${grace} s to what is left of ${#members[@]} process(es)."
deadline=$((SECONDS + grace))
left=()
while :; do
  mapfile -t members < <(primus_run_members "$run_id")
  primus_alive_of left "${members[@]}"
  ((${#left[@]} > 0 && SECONDS < deadline)) || break
  sleep 0.1
done
killed=""
if ((${#left[@]} > 0)); then
  primus_describe_pids killed "${left[@]}"
  kill -KILL "${left[@]}" 2>/dev/null
fi
text="stop: launcher pid $launcher died; $count process(es) of the run stopped (SIGTERM from the parent-death signal)"
if [[ -n $killed ]]; then
  text+=", killed after the $grace s grace: $killed"
else
  text+=" and all ended within the $grace s grace"
fi
LOG_WARN "$text."
exit 0
