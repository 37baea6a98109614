#!/usr/bin/env bash
# runner/helpers/watch_container.sh: stop the container whose launcher died.
#
# Usage (started by runner/primus-cli-container.sh, in a session of its own):
#   watch_container.sh RUNTIME NAME LAUNCHER_PID GRACE   (stdin: a pipe only the launcher writes)
#
# The launcher writes "client PID" once it started the runtime client, and
# "done" before it exits on purpose (its own stop has removed the container).
# End of file without "done" means the launcher was killed (SIGKILL, the OOM
# killer). The container does not run as the launcher's child (the runtime
# does), so it would run on to the end: this stops it as a SIGTERM to the
# launcher would, `RUNTIME stop -t GRACE NAME` (SIGTERM to the container's
# init, which hands it to the inner direct; that stops the ranks; SIGKILL
# after GRACE seconds), ends the runtime client, removes the container and
# prints the closing line. Signals that end a process group are ignored here.
# The launcher watches this process in turn (runner/lib/container_watch.sh):
# one that dies (kill -9) is named at once and a new one started on a new
# pipe, which gets the "client PID" line again.
set -uo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
if (($# != 4)) || [[ ! $4 =~ ^[0-9]{1,5}$ ]]; then
  echo "watch_container.sh: usage: watch_container.sh RUNTIME NAME LAUNCHER_PID GRACE_SECONDS" >&2
  exit 2
fi
trap '' TERM INT HUP USR1 USR2 PIPE
runtime=$1 name=$2 launcher=$3 grace=$((10#$4))

client="" line=""
while IFS= read -r line; do
  case $line in
    done) exit 0 ;;
    "client "*) client=${line#client } ;;
  esac
done
[[ $line == "done" ]] && exit 0
[[ $client =~ ^[0-9]+$ ]] || client=""

WATCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=runner/lib/common.sh
source "$WATCH_DIR/lib/common.sh"
# shellcheck source=runner/lib/processes.sh
source "$WATCH_DIR/lib/processes.sh"

LOG_WARN "the container launcher (pid $launcher) is gone (killed: SIGKILL or the OOM killer; sender unknown):" \
  "stopping container $name (SIGTERM, SIGKILL after ${grace} s) and removing it."
how="stopped within the $grace s grace"
if ! "$runtime" stop -t "$grace" "$name" >/dev/null 2>&1; then
  how="not running (not created yet, or already ended)"
fi
# The client ends with its container; one that is still starting it is stopped.
if [[ -n $client ]] && primus_any_alive "$client"; then
  deadline=$((SECONDS + 5))
  while primus_any_alive "$client" && ((SECONDS < deadline)); do sleep 0.1; done
  kill -TERM "$client" 2>/dev/null || true
fi
# --rm removes it as the client ends; make sure, and wait until it is gone (a
# removal in progress still lists it).
for ((tries = 0; tries < 100; tries++)); do
  "$runtime" rm -f "$name" >/dev/null 2>&1 || true
  "$runtime" container inspect "$name" >/dev/null 2>&1 || break
  sleep 0.2
done
end="and removed"
if "$runtime" container inspect "$name" >/dev/null 2>&1; then
  end="; it could not be removed: ${runtime##*/} rm -f $name"
fi
LOG_WARN "stop: container launcher pid $launcher died; container $name $how $end."
exit 0
