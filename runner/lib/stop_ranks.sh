# shellcheck shell=bash
# runner/lib/stop_ranks.sh: which global ranks of this node were still running
# when a stop began, for the closing line of the stop (every stop's
# last line names the ranks still running and the log). Reads what the run
# already leaves: run_worker.sh's $PRIMUS_RC_DIR/worker.<RANK> (its pid) and
# failed-<RANK> (it ended) in torchrun mode, the workload's pid in single mode.
# Sourced by runner/lib/supervise.sh; defines only primus_* names, never
# changes shell options, and signals nothing.

if [[ -n ${__PRIMUS_STOP_RANKS_SH:-} ]]; then
  return 0
fi
__PRIMUS_STOP_RANKS_SH=1

# primus_running_ranks VAR MODE RUN_PID: VAR = the global ranks still running,
# in numerical order (single mode: RANK, as primus_workload_single_env set it).
primus_running_ranks() {
  local -n __primus_running=$1
  local mode=$2 run_pid=$3 file rank wrapper
  __primus_running=()
  if [[ $mode == single ]]; then
    primus_any_alive "$run_pid" && __primus_running=("${RANK:-0}")
    return 0
  fi
  local -a found=()
  for file in "${PRIMUS_RC_DIR:-/nonexistent}"/worker.*; do
    [[ -f $file ]] || continue
    rank=${file##*/worker.}
    [[ $rank =~ ^[0-9]+$ && ! -e ${file%/*}/failed-$rank ]] || continue
    { read -r wrapper <"$file"; } 2>/dev/null || continue
    [[ $wrapper =~ ^[0-9]+$ ]] && primus_any_alive "$wrapper" && found+=("$rank")
  done
  ((${#found[@]} == 0)) || mapfile -t __primus_running < <(printf '%s\n' "${found[@]}" | sort -n)
  return 0
}

# primus_running_ranks_text RANK...: "ranks 0, 1 still running" ("rank 0 ...",
# "no rank ...").
primus_running_ranks_text() {
  if (($# == 0)); then
    echo "no rank still running"
  elif (($# == 1)); then
    echo "rank $1 still running"
  else
    local list
    printf -v list '%s, ' "$@"
    echo "ranks ${list%, } still running"
  fi
}
