# shellcheck shell=bash
# runner/lib/container_watch.sh: the container launcher's helpers, watched
# (sourced by runner/primus-cli-container.sh; needs common.sh, processes.sh
# and PRIMUS_CT_PLAN, PRIMUS_CT_CHILD).
#
# On the host a container launch is the launcher, its container watcher
# (`python -m primus_runner supervise watch-container`,
# python/primus_runner/monitor/container_guard.py) and the runtime client (`podman run`),
# both the launcher's children, plus podman's conmon. A SIGCHLD trap notices a
# child's death at once: a dead watcher is named and restarted
# (primus_ct_watcher_check); a client that died while its container runs is
# named and replaced by a follower of the container's log and `<runtime> wait`
# (primus_ct_client_lost, primus_ct_follow_end); a podman container whose
# conmon died is named, stopped and removed.

PRIMUS_CT_CHILD="" PRIMUS_CT_WATCH_FD=""
# The watcher's pid, its restarts, 1 once we exit; the `<runtime> wait` that
# replaced a dead client and its output file; the launcher's own stderr.
PRIMUS_CT_WATCH_PID="" PRIMUS_CT_RESTARTS=0 PRIMUS_CT_ENDING=0
PRIMUS_CT_WAITER="" PRIMUS_CT_EXIT_FILE="" PRIMUS_CT_ERR_FD=""

# primus_ct_remove GRACE: stop our container (SIGKILL after GRACE s), end the
# client, wait until the container is gone (a removal in progress still lists it).
primus_ct_remove() {
  local __primus_name=${PRIMUS_CT_PLAN[name]} __primus_tries
  if ! "${PRIMUS_CT_PLAN[runtime_path]}" stop -t "$1" "$__primus_name" >/dev/null 2>&1; then
    # Not created yet (or already gone): stop the client itself.
    kill -TERM "$PRIMUS_CT_CHILD" 2>/dev/null || true
  fi
  # The client ends with its container; one that does not (a log follower of
  # a container whose conmon died) is ended after 5 s.
  for ((__primus_tries = 0; __primus_tries < 50; __primus_tries++)); do
    primus_any_alive "$PRIMUS_CT_CHILD" || break
    sleep 0.1
  done
  kill -TERM "$PRIMUS_CT_CHILD" 2>/dev/null || true
  wait "$PRIMUS_CT_CHILD" 2>/dev/null || true
  for ((__primus_tries = 0; __primus_tries < 100; __primus_tries++)); do
    "${PRIMUS_CT_PLAN[runtime_path]}" rm -f "$__primus_name" >/dev/null 2>&1 || true
    "${PRIMUS_CT_PLAN[runtime_path]}" container inspect "$__primus_name" >/dev/null 2>&1 || break
    sleep 0.2
  done
}

# primus_ct_start_watcher: the container watcher reads a pipe only this
# shell writes to; its end without "done" (written on every exit of ours)
# means the launcher was killed: the watcher stops and removes the container.
# The watcher is our child: its death reaches primus_ct_watcher_check at once (SIGCHLD).
primus_ct_start_watcher() {
  primus_pick_python
  exec {PRIMUS_CT_WATCH_FD}> >(PYTHONPATH=$PRIMUS_ROOT/python exec setsid "$PRIMUS_PYTHON" \
    -m primus_runner supervise watch-container \
    "${PRIMUS_CT_PLAN[runtime_path]}" "${PRIMUS_CT_PLAN[name]}" "$$" "${PRIMUS_CT_PLAN[grace]}")
  PRIMUS_CT_WATCH_PID=$!
  trap primus_ct_watcher_done EXIT
  # Set once: the restart runs inside this trap, and bash warns ("bad value in
  # trap_list") when a trap is replaced while it runs. The trap may run inside
  # `wait ... 2>/dev/null` (primus_wait_pid): its words, and a restarted
  # watcher's, go to the launcher's own stderr.
  [[ -z $PRIMUS_CT_ERR_FD ]] || return 0
  exec {PRIMUS_CT_ERR_FD}>&2
  trap 'primus_ct_watcher_check 2>&"$PRIMUS_CT_ERR_FD"' CHLD
}

# primus_ct_tell_watcher LINE: one line to the watcher; a watcher that just died costs
# no SIGPIPE (it would end this launcher with 141).
primus_ct_tell_watcher() {
  trap '' PIPE
  { printf '%s\n' "$1" >&"$PRIMUS_CT_WATCH_FD"; } 2>/dev/null || true
  trap - PIPE
}

# primus_ct_watcher_done: the EXIT trap; "done" tells the watcher this exit is on purpose.
# shellcheck disable=SC2329  # the EXIT trap
primus_ct_watcher_done() {
  PRIMUS_CT_ENDING=1
  trap - CHLD
  primus_ct_tell_watcher 'done'
}

# primus_ct_watcher_check: the SIGCHLD trap (any child of ours ended). A container
# watcher that died is named and restarted: without one, a kill -9 of this
# launcher would leave the container running.
# shellcheck disable=SC2329  # the CHLD trap
primus_ct_watcher_check() {
  # Tells runner/lib/secrets.sh (__primus_secret_listing) not to fork while
  # this trap runs; a local: seen by what it calls, not inherited by a child.
  # shellcheck disable=SC2034
  local PRIMUS_IN_CHLD_TRAP=1
  local __primus_old=$PRIMUS_CT_WATCH_PID __primus_how __primus_name=${PRIMUS_CT_PLAN[name]}
  [[ $PRIMUS_CT_ENDING == 0 && -n $__primus_old ]] || return 0
  primus_child_ended __primus_how "$__primus_old" || return 0
  exec {PRIMUS_CT_WATCH_FD}>&-
  PRIMUS_CT_WATCH_PID=""
  if ((PRIMUS_CT_RESTARTS >= 3)); then
    LOG_WARN "the container watcher (supervise watch-container, pid $__primus_old) died ($__primus_how), the" \
      "$((PRIMUS_CT_RESTARTS + 1))th time: not restarted again; if this launcher is killed now, container" \
      "$__primus_name keeps running (stop it: ${PRIMUS_CT_PLAN[runtime]} stop $__primus_name)."
    return 0
  fi
  PRIMUS_CT_RESTARTS=$((PRIMUS_CT_RESTARTS + 1))
  primus_ct_start_watcher
  [[ -z $PRIMUS_CT_CHILD ]] || primus_ct_tell_watcher "client $PRIMUS_CT_CHILD"
  LOG_WARN "the container watcher (supervise watch-container, pid $__primus_old) died ($__primus_how):" \
    "while it was gone, a kill -9 of this launcher would have left container $__primus_name running;" \
    "restarted it (pid $PRIMUS_CT_WATCH_PID). The run goes on."
}

# primus_ct_client_lost RC AT: the runtime client ended with RC (at EPOCHREALTIME AT)
# while its container still runs: it was killed, not the container. The
# run goes on through `<runtime> logs --follow` and `<runtime> wait`; a
# podman container whose conmon died too is stopped and removed instead.
primus_ct_client_lost() {
  local __primus_rc=$1 __primus_at=$2 __primus_rt=${PRIMUS_CT_PLAN[runtime_path]} __primus_name=${PRIMUS_CT_PLAN[name]}
  local __primus_state="" __primus_conmon="" __primus_old=$PRIMUS_CT_CHILD __primus_since __primus_how
  # A client that exits 0 ended with its container.
  ((__primus_rc != 0)) && [[ -z $PRIMUS_CT_WAITER ]] || return 1
  __primus_state=$("$__primus_rt" container inspect --format '{{.State.Running}}' "$__primus_name" 2>/dev/null) || return 1
  [[ $__primus_state == true ]] || return 1
  if ((__primus_rc > 128)); then
    primus_signal_name __primus_how $((__primus_rc - 128))
    __primus_how="killed by SIG$__primus_how: kill -9 or the OOM killer; sender unknown"
  else
    __primus_how="status $__primus_rc"
  fi
  if [[ ${PRIMUS_CT_PLAN[runtime]} == podman ]]; then
    __primus_conmon=$("$__primus_rt" container inspect --format '{{.State.ConmonPid}}' "$__primus_name" 2>/dev/null) || __primus_conmon=""
    # (A client outlives its conmon by podman's own timeout, seconds.)
    [[ $__primus_conmon =~ ^[0-9]+$ ]] || __primus_conmon=""
    if [[ -n $__primus_conmon ]] && ! primus_any_alive "$__primus_conmon"; then
      LOG_ERROR "the runtime client (podman run, pid $__primus_old) ended ($__primus_how) because the container's monitor" \
        "(conmon, pid $__primus_conmon) died: podman can deliver neither the container's output nor its exit" \
        "code any more; stopping container $__primus_name (SIGTERM, SIGKILL after ${PRIMUS_CT_PLAN[grace]} s) and" \
        "removing it. The inner launcher's log (log_file= above) holds the output up to here."
      primus_ct_remove "${PRIMUS_CT_PLAN[grace]}"
      PRIMUS_RUN_RC=$__primus_rc
      return 1
    fi
  fi
  # From a second before: a line the dead client had not written yet is
  # shown (once more, maybe), not lost.
  __primus_since=$(date -d "@$((${__primus_at%[.,]*} - 1)).${__primus_at#*[.,]}" +%Y-%m-%dT%H:%M:%S.%N%:z)
  PRIMUS_CT_EXIT_FILE=$(mktemp "${TMPDIR:-/tmp}/primus-ct-exit.XXXXXX")
  "$__primus_rt" wait "$__primus_name" >"$PRIMUS_CT_EXIT_FILE" 2>/dev/null {PRIMUS_CT_WATCH_FD}>&- &
  PRIMUS_CT_WAITER=$!
  local __primus_file="" __primus_how_follow
  [[ ${PRIMUS_CT_PLAN[runtime]} != podman ]] ||
    __primus_file=$("$__primus_rt" container inspect --format '{{.HostConfig.LogConfig.Path}}' "$__primus_name" 2>/dev/null) || __primus_file=""
  if [[ -n $__primus_file && -r $__primus_file ]]; then
    # podman's k8s-file log, read to its end once `podman wait` answered
    # (`podman logs --follow` can end before the last lines).
    primus_ct_follow_log_file "$__primus_file" "$__primus_since" "$PRIMUS_CT_WAITER" {PRIMUS_CT_WATCH_FD}>&- &
    __primus_how_follow="its log file"
  else
    setsid "$__primus_rt" logs --follow --since "${__primus_since/%+00:00/Z}" "$__primus_name" {PRIMUS_CT_WATCH_FD}>&- &
    __primus_how_follow="${PRIMUS_CT_PLAN[runtime]} logs --follow"
  fi
  PRIMUS_CT_CHILD=$!
  primus_ct_tell_watcher "client $PRIMUS_CT_CHILD"
  LOG_WARN "the runtime client (${PRIMUS_CT_PLAN[runtime]} run, pid $__primus_old) died ($__primus_how) while container" \
    "$__primus_name runs: its output no longer reached this console; following it from $__primus_since" \
    "($__primus_how_follow, pid $PRIMUS_CT_CHILD: the lines of that second may show twice) and its exit code" \
    "(${PRIMUS_CT_PLAN[runtime]} wait). The run goes on."
}

# primus_ct_follow_log_file FILE SINCE PID: the lines of a k8s-file container log
# ("<time> stdout|stderr F|P <text>", P: a line's part) stamped SINCE or
# later, each to its stream, until PID (`<runtime> wait`) ended and the file
# is read to its end. SINCE has the file's time format (local time, %:z).
primus_ct_follow_log_file() {
  tail -c +1 -s 0.2 -f --pid="$3" -- "$1" | LC_ALL=C awk -v __primus_since="$2" '
    $1 >= since && ($2 == "stdout" || $2 == "stderr") {
      text = substr($0, length($1) + length($2) + length($3) + 4)
      end = ($3 == "P") ? "" : "\n"
      if ($2 == "stderr") { printf "%s%s", text, end > "/dev/stderr"; fflush("/dev/stderr") }
      else { printf "%s%s", text, end; fflush() }
    }'
}

# primus_ct_follow_end: the follower ended; PRIMUS_RUN_RC = the container's exit code
# from `<runtime> wait`, and a closing line on how the console saw the run.
primus_ct_follow_end() {
  local __primus_follow_rc=$PRIMUS_RUN_RC __primus_code="" __primus_name=${PRIMUS_CT_PLAN[name]} __primus_rt=${PRIMUS_CT_PLAN[runtime]}
  wait "$PRIMUS_CT_WAITER" 2>/dev/null || true
  { read -r __primus_code <"$PRIMUS_CT_EXIT_FILE"; } 2>/dev/null || __primus_code=""
  rm -f "$PRIMUS_CT_EXIT_FILE"
  if [[ $__primus_code =~ ^[0-9]+$ ]]; then
    PRIMUS_RUN_RC=$((__primus_code > 255 ? 255 : __primus_code))
  else
    PRIMUS_RUN_RC=137
    LOG_ERROR "container $__primus_name ended but its exit code is unknown ($__primus_rt wait answered '${__primus_code:-nothing}'): exit 137."
  fi
  if ((__primus_follow_rc != 0)); then
    LOG_ERROR "container $__primus_name exited with code $PRIMUS_RUN_RC, but following its output failed" \
      "(status $__primus_follow_rc): this console lacks its output from when its runtime client died;" \
      "the inner launcher's log (log_file= above) holds all of it."
  else
    LOG_WARN "container $__primus_name exited with code $PRIMUS_RUN_RC ($__primus_rt wait); its output after its runtime" \
      "client died reached this console from the container's log (the inner launcher's log," \
      "log_file= above, holds every line once)."
  fi
}
