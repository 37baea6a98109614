# shellcheck shell=bash disable=SC2034 # PRIMUS_RUN_ORPHANS is read by runner/lib/supervise.sh
# runner/lib/stop_orphans.sh: after the run's own process ended (torchrun in
# spawn.py, or the single workload), stop whatever of the run it left
# running, so that nothing of a run outlives its launch; and the grace wait
# that every stop shares (primus_kill_after_grace). Sourced by
# runner/lib/supervise.sh after runner/lib/processes.sh; defines only primus_*
# names and never changes shell options.

if [[ -n ${__PRIMUS_STOP_ORPHANS_SH:-} ]]; then
  return 0
fi
__PRIMUS_STOP_ORPHANS_SH=1

PRIMUS_RUN_ORPHANS=0     # processes of the run left when torchrun ended (primus_stop_orphans)

# primus_kill_after_grace VAR GRACE [ROOT_PID]: wait up to GRACE seconds for
# every process of the run (PRIMUS_RUN_ID, ROOT_PID's descendants) to end,
# SIGKILL what is left; VAR = "pid(name) ..." of those killed, or empty.
primus_kill_after_grace() {
  local -n __primus_killed=$1
  local deadline=$((SECONDS + $2)) root=${3:-}
  local -a members=() left=()
  __primus_killed=""
  while :; do
    mapfile -t members < <(primus_run_members "$PRIMUS_RUN_ID" "$root")
    primus_alive_of left "${members[@]}"
    ((${#left[@]} > 0 && SECONDS < deadline)) || break
    sleep 0.1
  done
  ((${#left[@]} > 0)) || return 0
  primus_describe_pids __primus_killed "${left[@]}"
  kill -KILL "${left[@]}" 2>/dev/null
  return 0
}

# primus_stop_orphans RC: the run's own process (torchrun in spawn.py; in run
# mode single the workload) ended with RC while processes of the run still ran:
# torchrun was killed (SIGKILL, the OOM killer) before it could end its
# workers, or a single workload left children. Nothing of the run may outlive
# the launch: SIGTERM them once, SIGKILL after the grace, and say so. Only after
# a failed run (a clean torchrun has ended its workers), so a clean run pays no
# /proc scan. PRIMUS_RUN_ORPHANS = how many were left in torchrun mode (the
# ranks did not fail first: the failure report must not blame one).
primus_stop_orphans() {
  local rc=$1 grace killed text
  local -a members=() left=()
  mapfile -t members < <(primus_run_members "$PRIMUS_RUN_ID")
  primus_alive_of left "${members[@]}"
  ((${#left[@]} > 0)) || return 0
  [[ $PRIMUS_RUN_MODE == single ]] || PRIMUS_RUN_ORPHANS=${#left[@]}
  primus_kill_grace grace
  primus_describe_pids text "${left[@]}"
  local how="" sig
  if ((rc > 128)); then
    primus_signal_name sig $((rc - 128))
    how=" (killed by SIG$sig)"
  fi
  LOG_ERROR "$(primus_run_process_text) ended with exit code $rc$how" \
    "while ${#left[@]} process(es) of the run still ran: $text; stopping them" \
    "(SIGTERM, SIGKILL after ${grace} s) so that nothing of the run outlives the launch."
  kill -TERM "${left[@]}" 2>/dev/null
  primus_kill_after_grace killed "$grace"
  [[ -z $killed ]] || LOG_ERROR "killed after the ${grace} s grace: $killed"
  return 0
}

# primus_run_process_text: "torchrun (pid N, in spawn.py)" / "the workload (pid N)".
primus_run_process_text() {
  if [[ $PRIMUS_RUN_MODE == single ]]; then
    echo "the workload (pid $PRIMUS_RUN_PID)"
  else
    echo "torchrun (pid $PRIMUS_RUN_PID, in spawn.py)"
  fi
}
