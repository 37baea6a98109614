#!/usr/bin/env bash
# bench/70_watchdog.sh: CPU of the progress watchdog (runner/helpers/hang_watch.sh,
# issue 25; SPEC section 10 budget: not measurable, < 0.5 % of a core) while a run
# makes progress: a rank log touched every 0.5 s, PRIMUS_HANG_TIMEOUT=2 (a wake
# every ~2 s; the default 1800 wakes ~900 times less often). The figure is the
# watchdog's own CPU time plus that of the processes it started and waited for
# (/proc/PID/stat utime+stime+cutime+cstime), over BENCH_WATCH_SECONDS (default 20).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds=${BENCH_WATCH_SECONDS:-20}
work=$(mktemp -d "${TMPDIR:-/tmp}/primus-bench-watch.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/run.ranks/attempt_0/0" "$work/rc"
: >"$work/run.log"
echo $$ >"$work/rc/worker.0"
rank_log=$work/run.ranks/attempt_0/0/stdout.log

exec {watch_fd}> >(PRIMUS_RC_DIR=$work/rc exec "$PRIMUS_ROOT/runner/helpers/hang_watch.sh" \
  "$work/run.log" bench-run 2 report $$ torchrun 2>"$work/watch.err")
watch_pid=$!
start=$EPOCHREALTIME
end=$((SECONDS + seconds))
while ((SECONDS < end)); do
  printf 'step\n' >>"$rank_log"
  read -r -t 0.5 <> <(:) || true  # a 0.5 s pause without a sleep process
done
elapsed=$(bench_elapsed "$start" "$EPOCHREALTIME")
read -r -a stat <"/proc/$watch_pid/stat"
ticks=$((stat[13] + stat[14] + stat[15] + stat[16]))
exec {watch_fd}>&-
hz=$(getconf CLK_TCK)
alarms=$(grep -c "hang watchdog" "$work/watch.err" 2>/dev/null || true)
awk -v t="$ticks" -v hz="$hz" -v s="$elapsed" -v a="${alarms:-0}" 'BEGIN {
  printf "%-58s %.3f %% of a core  (%d ticks of 1/%d s in %.1f s; %d false alarms)\n",
    "progress watchdog, CPU per node (budget < 0.5 %)", 100 * t / hz / s, t, hz, s, a }'
