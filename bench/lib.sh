# shellcheck shell=bash
# bench/lib.sh: helpers shared by the bench/*.sh scripts (sourced, not executed).
# Timings use EPOCHREALTIME, so measuring adds no process start of its own.
# Also sets, unless bench/run.sh already did: BENCH_DIR, PRIMUS_ROOT, BENCH_RUNS,
# so every bench/NN_*.sh also runs on its own.

BENCH_DIR=${BENCH_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}

# --help of every bench script (this file sees the script's arguments): its header.
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$BENCH_DIR/../runner/lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
PRIMUS_ROOT=${PRIMUS_ROOT:-$(dirname "$BENCH_DIR")}
BENCH_RUNS=${BENCH_RUNS:-15}

# bench_median LABEL RUNS CMD...: run CMD RUNS times (output discarded) and print
# "LABEL  median X.XXX s  (min A, max B, N runs)".
bench_median() {
  local label=$1 runs=$2
  shift 2
  local -a times=()
  local i start end rc failed=0 last=0
  for ((i = 0; i < runs; i++)); do
    start=$EPOCHREALTIME
    rc=0
    "$@" >/dev/null 2>&1 || rc=$?
    end=$EPOCHREALTIME
    times+=("$(bench_elapsed "$start" "$end")")
    if ((rc != 0)); then failed=$((failed + 1)) last=$rc; fi
  done
  bench_report "$label" "${times[@]}"
  # A figure for a command that failed measures the failure, not the path.
  ((failed == 0)) || printf '%-58s %d of %d runs FAILED (last exit %d): the figure above is not the path\n' "" "$failed" "$runs" "$last"
}

# bench_elapsed START END: seconds between two EPOCHREALTIME stamps, 6 decimals.
bench_elapsed() {
  local s=${1/./} e=${2/./}
  local us=$((10#$e - 10#$s))
  printf '%d.%06d' $((us / 1000000)) $((us % 1000000))
}

# bench_median_of T1 T2 ...: the median of the given seconds (the upper one
# of an even count).
bench_median_of() {
  local -a sorted
  mapfile -t sorted < <(printf '%s\n' "$@" | sort -g)
  echo "${sorted[${#sorted[@]} / 2]}"
}

# bench_report LABEL T1 T2 ...: print median, min and max of the given seconds.
bench_report() {
  local label=$1
  shift
  local -a sorted
  mapfile -t sorted < <(printf '%s\n' "$@" | sort -g)
  local n=${#sorted[@]}
  printf '%-58s median %.3f s  (min %.3f, max %.3f, %d runs)\n' \
    "$label" "$(bench_median_of "$@")" "${sorted[0]}" "${sorted[n - 1]}" "$n"
}

# bench_empty_host: a scratch directory $work (removed on exit) holding an
# empty sysfs and /dev (no GPU, NIC or Neuron device) and the workspace; no
# colours in the launcher's output.
bench_empty_host() {
  work=$(mktemp -d)
  # shellcheck disable=SC2064  # the path is fixed now, on purpose
  trap "rm -rf '$work'" EXIT
  export PRIMUS_WORKSPACE=$work/ws PRIMUS_SYSFS_ROOT=$work/sys PRIMUS_DEV_ROOT=$work/dev
  export PRIMUS_LOG_COLOR=0
  mkdir -p "$PRIMUS_SYSFS_ROOT" "$PRIMUS_DEV_ROOT"
}

# bench_counting_python: $work/python, the project's .venv interpreter behind a
# wrapper that appends a line to $work/starts at each start (bench_empty_host first).
bench_counting_python() {
  local real_python
  real_python=$(readlink -f "$PRIMUS_ROOT/.venv/bin/python")
  cat >"$work/python" <<WRAP
#!/usr/bin/env bash
echo start >>"$work/starts"
exec "$real_python" "\$@"
WRAP
  chmod +x "$work/python"
}

# bench_python_starts: how many starts $work/python counted (0 when none).
bench_python_starts() {
  wc -l <"$work/starts" 2>/dev/null || echo 0
}

# bench_monitor_cpu LAUNCHER_PID WORKSPACE: while the launch LAUNCHER_PID runs, sample
# the CPU ticks of its run monitor (the process started on WORKSPACE's log) twice a
# second; sets BENCH_TICKS (user+system, children included), BENCH_FIRST and
# BENCH_LAST (EPOCHREALTIME of the first and last sample; empty: never found).
# shellcheck disable=SC2034  # BENCH_TICKS, BENCH_FIRST, BENCH_LAST: read by the bench scripts
bench_monitor_cpu() {
  local monitor="" stat
  BENCH_TICKS=0 BENCH_FIRST="" BENCH_LAST=""
  while kill -0 "$1" 2>/dev/null; do
    [[ -n $monitor ]] || monitor=$(pgrep -f -- "primus_runner.monitor $2/" | head -n1 || true)
    if [[ -n $monitor ]] && read -r -a stat 2>/dev/null <"/proc/$monitor/stat"; then
      [[ -n $BENCH_FIRST ]] || BENCH_FIRST=$EPOCHREALTIME
      BENCH_TICKS=$((stat[13] + stat[14] + stat[15] + stat[16]))
      BENCH_LAST=$EPOCHREALTIME
    fi
    read -r -t 0.5 <> <(:) || true  # a 0.5 s pause without a sleep process
  done
}
