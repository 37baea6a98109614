# shellcheck shell=bash
# shellcheck disable=SC2034 # LIVE_RC is read by the suites that load this file
# tests/bats/helpers/live.bash: the live-output meter shared by the direct,
# container and Slurm suites. The workload (tests/fixtures/workloads/
# live_lines.py) stamps each line with the time it printed it;
# tests/fixtures/tools/line_lag.py reads the console and follows the log, and
# records each line's lag (one number a line).
#
#   live_measure LOG CMD...   run CMD (its console piped into the meter) while
#                             LOG is followed; console.lags, log.lags and
#                             console.out in $PWD, LIVE_RC = CMD's status
#   live_assert FILE COUNT    COUNT lags measured and their median under 1 s

LIVE_PY=${LIVE_PY:-$REPO_ROOT/.venv/bin/python}
LIVE_METER=$REPO_ROOT/tests/fixtures/tools/line_lag.py

live_median() {
  sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print v[int((NR + 1) / 2)] }'
}

live_measure() {
  local log=$1 follower
  shift
  rm -f run.done
  "$LIVE_PY" "$LIVE_METER" file "$log" log.lags run.done &
  follower=$!
  "$@" 2>&1 | "$LIVE_PY" "$LIVE_METER" console console.lags >console.out
  LIVE_RC=${PIPESTATUS[0]}
  touch run.done
  wait "$follower"
}

live_assert() {
  local n m
  n=$(wc -l <"$1")
  m=$(live_median "$1") || m=none
  echo "$1: $n lines, median lag $m s (max $(sort -n "$1" | tail -n1) s)"
  if ((n != $2)) || ! awk -v m="$m" 'BEGIN { exit !(m + 0 < 1.0 && m != "none") }'; then
    echo "console output:"
    cat console.out
    return 1
  fi
}
