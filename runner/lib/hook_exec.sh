# shellcheck shell=bash
# runner/lib/hook_exec.sh: run one hook in a process group of its own, with a
# time limit (PRIMUS_HOOK_TIMEOUT) and the runner's stop signals (TERM, HUP,
# INT) passed to the hook's whole tree, then SIGKILL after PRIMUS_KILL_GRACE
#. Sourced by runner/helpers/execute_hooks.sh after common.sh; it
# defines only primus_* / __primus_* / PRIMUS_* names, turns job control on only
# for the instant it starts a hook, and neither parses hook output nor chooses
# the runner's exit code.
#
#   primus_hook_limits            PRIMUS_HOOK_TIMEOUT, PRIMUS_KILL_GRACE (the launch helper checked them) -> PRIMUS_HOOK_LIMIT, PRIMUS_HOOK_GRACE
#   primus_hook_traps             TERM/HUP/INT are recorded in PRIMUS_HOOK_STOP
#   primus_hook_exec OUT CMD...   run CMD, stdout to file OUT; PRIMUS_HOOK_ENDED done|timeout|signal
#   primus_hook_mask_start/_stop/_refresh   the runner's stderr through the masking filter
#   primus_hook_report_failure, primus_hook_stopped, primus_hook_elapsed   what the runner says

PRIMUS_HOOK_LIMIT=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_HOOK_TIMEOUT]}
PRIMUS_HOOK_GRACE=${PRIMUS_REGISTRY_DEFAULTS[PRIMUS_KILL_GRACE]}
PRIMUS_HOOK_STOP=""
PRIMUS_HOOK_ENDED=""
PRIMUS_HOOK_ORIG_ERR="" PRIMUS_HOOK_MASK_PID="" PRIMUS_HOOK_MASK_COUNT=0

# primus_hook_limits: the time limit per hook in seconds (0: none) and the
# grace. The launch helper refused a bad value before any hook (rule `type`,
# python/primus_runner/env/refusals.py); this only reads the value, and keeps the
# default when it is no number (a hook runner started by hand).
primus_hook_limits() {
  [[ ! ${PRIMUS_HOOK_TIMEOUT:-} =~ ^[0-9]{1,9}$ ]] || PRIMUS_HOOK_LIMIT=$((10#$PRIMUS_HOOK_TIMEOUT))
  [[ ! ${PRIMUS_KILL_GRACE:-} =~ ^[0-9]{1,5}$ ]] || PRIMUS_HOOK_GRACE=$((10#$PRIMUS_KILL_GRACE))
}

# primus_hook_traps: a stop signal is recorded; the wait in primus_hook_exec
# returns at once and stops the hook's tree.
primus_hook_traps() {
  trap 'PRIMUS_HOOK_STOP=TERM' TERM
  trap 'PRIMUS_HOOK_STOP=HUP' HUP
  trap 'PRIMUS_HOOK_STOP=INT' INT
}

# primus_hook_exec OUT CMD...: run CMD (stdin /dev/null, stdout to the file OUT)
# as the leader of a process group of its own and wait for it, at most
# PRIMUS_HOOK_LIMIT seconds. Over the limit, or on a recorded stop signal, the
# group gets TERM (the signal received) and, after PRIMUS_HOOK_GRACE seconds,
# KILL. Status: the hook's own; PRIMUS_HOOK_ENDED says how it ended.
# The wait wakes at least once a second (a tick process): `wait -n` waits only
# for a job bash has not reported yet, and a hook that ends before the wait
# begins may already have been reported; a launch on a loaded machine once
# waited out the whole limit that way. Each wake-up looks at /proc. The tick
# outlives a hook that ends early and serves the next ones (one process per
# second of hooks, not one per hook: ~2 ms a hook); primus_hook_tick_stop ends it.
PRIMUS_HOOK_TICK=""
primus_hook_exec() {
  local out=$1 pid rc=0 who="" now deadline=""
  local -n tick=PRIMUS_HOOK_TICK
  shift
  PRIMUS_HOOK_ENDED="done"
  set -m
  # In ( ): CMD's exec keeps the environment bash built (runner/lib/nofork.sh).
  ("$@") </dev/null >"$out" &
  pid=$!
  set +m
  __primus_hook_now now
  ((PRIMUS_HOOK_LIMIT == 0)) || deadline=$((now + PRIMUS_HOOK_LIMIT * 1000000))
  while [[ -z $PRIMUS_HOOK_STOP ]]; do
    if ! __primus_hook_is_child "$pid"; then
      # Ended and reaped already: `wait PID` still knows its status.
      rc=0
      wait "$pid" 2>/dev/null || rc=$?
      return "$rc"
    fi
    __primus_hook_now now
    if [[ -n $deadline ]] && ((now >= deadline)); then
      __primus_hook_end_timer "$tick"
      tick=""
      PRIMUS_HOOK_ENDED=timeout
      __primus_hook_stop_group "$pid" TERM
      return 124
    fi
    [[ -n $tick ]] || __primus_hook_tick tick "$now" "$deadline"
    rc=0 who=""
    wait -n -p who "$pid" "$tick" || rc=$?
    who=${who-}
    [[ $who != "$pid" ]] || return "$rc"
    [[ $who != "$tick" ]] || tick=""
  done
  PRIMUS_HOOK_ENDED=signal
  __primus_hook_end_timer "$tick"
  tick=""
  __primus_hook_stop_group "$pid" "$PRIMUS_HOOK_STOP"
  return 0
}

# __primus_hook_now VAR: the time in microseconds (EPOCHREALTIME, either decimal mark).
__primus_hook_now() {
  printf -v "$1" '%s' "${EPOCHREALTIME/[.,]/}"
}

# __primus_hook_is_child PID: PID is a process whose parent is this runner
# (running, or ended and not yet reaped); not a later process with that pid.
__primus_hook_is_child() {
  local stat rest
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  rest=${stat##*) }
  rest=${rest#* }
  [[ ${rest%% *} == "$BASHPID" ]]
}

# __primus_hook_tick VAR NOW_US DEADLINE_US: VAR = the pid of a timer of 1 s,
# or of what is left until DEADLINE_US when that is less.
__primus_hook_tick() {
  local left=1000000 frac
  if [[ -n $3 ]] && (($3 - $2 < left)); then left=$(($3 - $2)); fi
  ((left > 0)) || left=1
  printf -v frac '%06d' $((left % 1000000))
  # No stream of this runner: a tick that outlives a hook must not hold the
  # records pipe or the masking process's input open.
  (exec sleep "$((left / 1000000)).$frac") </dev/null >/dev/null 2>&1 &
  printf -v "$1" '%s' "$!"
}

# primus_hook_tick_stop: end the tick (when the runner is done with its hooks).
primus_hook_tick_stop() {
  __primus_hook_end_timer "$PRIMUS_HOOK_TICK"
  PRIMUS_HOOK_TICK=""
}

# __primus_hook_end_timer PID: stop a timer this runner started. SIGKILL: a
# TERM can reach the forked child before it has reset this runner's TERM trap
# (it then sleeps on, and the wait below would last the whole limit).
__primus_hook_end_timer() {
  [[ -n $1 ]] || return 0
  kill -s KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# __primus_hook_stop_group PID SIGNAL: SIGNAL to the group, then KILL to what
# is left of it after the grace (the leader may end before its children).
__primus_hook_stop_group() {
  local pid=$1 grace who="" leader=1
  kill -s "$2" -- "-$pid" 2>/dev/null || true
  (exec sleep "$PRIMUS_HOOK_GRACE") &
  grace=$!
  # Until the grace ends: the leader's end (a signal may interrupt the wait).
  while kill -0 "$grace" 2>/dev/null; do
    who=""
    wait -n -p who "$pid" "$grace" 2>/dev/null || true
    who=${who-}
    if [[ $who == "$pid" ]]; then leader=0; break; fi
    [[ $who != "$grace" ]] || break
  done
  # The leader is gone: its children may still be ending.
  while ((leader == 0)) && kill -0 -- "-$pid" 2>/dev/null && kill -0 "$grace" 2>/dev/null; do
    sleep 0.05
  done
  kill -s KILL -- "-$pid" 2>/dev/null || true
  ((leader == 0)) || wait "$pid" 2>/dev/null || true
  __primus_hook_end_timer "$grace"
}

# primus_hook_mask_start: this script's stderr through primus_mask_stream (the
# secret values known now, PRIMUS_MASK_VALUES included) to the original stderr.
primus_hook_mask_start() {
  [[ -n $PRIMUS_HOOK_ORIG_ERR ]] || exec {PRIMUS_HOOK_ORIG_ERR}>&2
  exec 2> >(primus_mask_stream >&"$PRIMUS_HOOK_ORIG_ERR" {PRIMUS_HOOK_ORIG_ERR}>&-)
  PRIMUS_HOOK_MASK_PID=$!
  PRIMUS_HOOK_MASK_COUNT=${#PRIMUS_MASK_VALUES[@]}
}

# primus_hook_mask_stop: back to the original stderr once the masking process has
# written everything (so no line comes after this script's exit).
primus_hook_mask_stop() {
  [[ -n $PRIMUS_HOOK_MASK_PID ]] || return 0
  exec 2>&"$PRIMUS_HOOK_ORIG_ERR"
  wait "$PRIMUS_HOOK_MASK_PID" 2>/dev/null || true
  PRIMUS_HOOK_MASK_PID=""
}

# primus_hook_mask_refresh: a new masking process when a hook added secret values.
primus_hook_mask_refresh() {
  ((${#PRIMUS_MASK_VALUES[@]} == PRIMUS_HOOK_MASK_COUNT)) && return 0
  primus_hook_mask_stop
  primus_hook_mask_start
}

# primus_hook_report_failure LABEL SCRIPT RC OUT: show the hook's stdout on stderr (its stderr
# was shown as it ran); the masking stream masks it as on success (its
# env.SECRET=... lines too).
primus_hook_report_failure() {
  local label=$1 script=$2 rc=$3 out=$4
  if [[ $PRIMUS_HOOK_ENDED == timeout ]]; then
    LOG_ERROR "$label '$script' ran longer than PRIMUS_HOOK_TIMEOUT=$PRIMUS_HOOK_LIMIT s and was stopped (SIGTERM to its process group, SIGKILL after PRIMUS_KILL_GRACE=$PRIMUS_HOOK_GRACE s); its stderr is above, its stdout follows. Fix: find why it hangs, or raise PRIMUS_HOOK_TIMEOUT (0: no limit)." >&2
  elif [[ -z $out ]]; then
    # Nothing on stdout: no empty box between the cause (its stderr) and this line.
    LOG_ERROR "$label '$script' failed with exit code $rc; the cause is its stderr above (no stdout)." >&2
    return 0
  else
    LOG_ERROR "$label '$script' failed with exit code $rc; its stderr is above, its stdout follows." >&2
  fi
  {
    printf -- '----- %s %s: stdout -----\n' "$label" "${script##*/}"
    [[ -z $out ]] || printf '%s\n' "$out"
    printf -- '----- end of %s %s (exit code %s) -----\n' "$label" "${script##*/}" "$rc"
  } >&2
}

# primus_hook_stopped LABEL SCRIPT: after a stop signal (TERM/HUP/INT) the hook's tree
# is gone; this runner ends with 128+N.
primus_hook_stopped() {
  [[ -n $PRIMUS_HOOK_STOP ]] || return 0
  LOG_WARN "$1 '$2' stopped: the hook runner received SIG$PRIMUS_HOOK_STOP; the hook and its children got it too (SIGKILL after PRIMUS_KILL_GRACE=$PRIMUS_HOOK_GRACE s)." >&2
  local -A num=([HUP]=1 [INT]=2 [TERM]=15)
  exit $((128 + ${num[$PRIMUS_HOOK_STOP]}))
}

# primus_hook_elapsed VAR START: store in VAR the seconds since the EPOCHREALTIME
# stamp START, 3 decimals.
primus_hook_elapsed() {
  local s=${2/./} e=${EPOCHREALTIME/./}
  local us=$((10#$e - 10#$s))
  printf -v "$1" '%d.%03d' $((us / 1000000)) $(((us % 1000000) / 1000))
}
