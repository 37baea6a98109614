# shellcheck shell=bash
# runner/lib/processes.sh: the processes of a run, read from /proc without a
# process per pid: parents and names, descendants, the members of a run
# (PRIMUS_RUN_ID in their environment), which are still alive, and how to name
# them in a log line, and a signal number's name. Sourced by runner/lib/supervise.sh,
# runner/helpers/watch_container.sh and runner/helpers/srun_parent.sh; defines
# only primus_* / __PRIMUS_* names and never changes shell options.

if [[ -n ${__PRIMUS_PROCESSES_SH:-} ]]; then
  return 0
fi
__PRIMUS_PROCESSES_SH=1

# primus_parent_table: fill the global __PRIMUS_PPID (pid -> parent pid) and
# __PRIMUS_COMM (pid -> command name) from /proc, without a fork per process.
primus_parent_table() {
  declare -gA __PRIMUS_PPID=() __PRIMUS_COMM=()
  local stat pid rest ppid
  for stat in /proc/[0-9]*/stat; do
    { read -r rest <"$stat"; } 2>/dev/null || continue
    pid=${stat#/proc/}
    pid=${pid%/stat}
    __PRIMUS_COMM[$pid]=${rest#*\(}
    __PRIMUS_COMM[$pid]=${__PRIMUS_COMM[$pid]%)*}
    rest=${rest##*) }
    read -r _ ppid _ <<<"$rest"
    __PRIMUS_PPID[$pid]=$ppid
  done
}

# primus_descendants PID: print PID's descendants (breadth first, from /proc).
primus_descendants() {
  primus_parent_table
  local -A children=()
  local pid
  for pid in "${!__PRIMUS_PPID[@]}"; do
    children[${__PRIMUS_PPID[$pid]}]+="$pid "
  done
  local -a queue=("$1") found=()
  while ((${#queue[@]} > 0)); do
    local current=${queue[0]}
    queue=("${queue[@]:1}")
    for pid in ${children[$current]:-}; do
      found+=("$pid")
      queue+=("$pid")
    done
  done
  ((${#found[@]} == 0)) || printf '%s\n' "${found[@]}"
}

# primus_run_members RUN_ID [ROOT_PID]: every live process of the run: those
# whose environment carries PRIMUS_RUN_ID=RUN_ID (found even after they were
# re-parented), plus ROOT_PID's descendants.
primus_run_members() {
  local id=$1 root=${2:-} file pid
  local -A seen=()
  if [[ -n $root ]]; then
    [[ ! -e /proc/$root ]] || seen[$root]=1
    for pid in $(primus_descendants "$root"); do seen[$pid]=1; done
  fi
  while read -r file; do  # no IFS= in front: runner/lib/nofork.sh
    pid=${file#/proc/}
    pid=${pid%/environ}
    seen[$pid]=1
  done < <(grep -lszxF -- "PRIMUS_RUN_ID=$id" /proc/[0-9]*/environ 2>/dev/null)
  unset "seen[$$]" "seen[$BASHPID]"
  ((${#seen[@]} == 0)) || printf '%s\n' "${!seen[@]}"
}

# primus_any_alive PID...: true while one of the PIDs runs (zombies count as gone).
primus_any_alive() {
  local pid stat
  for pid in "$@"; do
    { read -r stat <"/proc/$pid/stat"; } 2>/dev/null || continue
    [[ ${stat##*) } == Z* ]] || return 0
  done
  return 1
}

# primus_alive_of VAR PID...: VAR = the PIDs still running.
primus_alive_of() {
  local -n __primus_out=$1
  shift
  __primus_out=()
  local pid
  for pid in "$@"; do
    primus_any_alive "$pid" && __primus_out+=("$pid")
  done
  return 0
}

# primus_describe_pids VAR PID...: VAR = "pid(name) ..." for a log line.
primus_describe_pids() {
  local -n __primus_text=$1
  shift
  local pid comm
  __primus_text=""
  for pid in "$@"; do
    # read, not $(<file): bash 5.2 under set -e exits on a failed $(<file)
    # even after || (a rank that just ended has no /proc entry any more).
    { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || comm="?"
    __primus_text+="${__primus_text:+ }$pid($comm)"
  done
}

# primus_child_ended VAR PID: status 1 while this shell's child PID runs; else
# PID is reaped and VAR says how it ended ("killed by SIGKILL: kill -9 or the
# OOM killer; sender unknown", "ended with status N"). No fork: it runs in
# SIGCHLD traps (runner/lib/watchdog.sh, runner/lib/container_watch.sh).
primus_child_ended() {
  local __primus_rc=0 __primus_sig
  ! kill -0 "$2" 2>/dev/null || return 1
  wait "$2" 2>/dev/null || __primus_rc=$?
  if ((__primus_rc > 128)); then
    primus_signal_name __primus_sig $((__primus_rc - 128))
    printf -v "$1" '%s' "killed by SIG$__primus_sig: kill -9 or the OOM killer; sender unknown"
  else
    printf -v "$1" '%s' "ended with status $__primus_rc"
  fi
}

# primus_signal_name VAR NUMBER: VAR = TERM, INT, ... for the closing line. No
# subshell: it runs in SIGCHLD traps, where a command substitution's own child
# makes bash warn "run_pending_traps: bad value in trap_list".
primus_signal_name() {
  local __primus_word
  case $2 in
    1) __primus_word=HUP ;;
    2) __primus_word=INT ;;
    9) __primus_word=KILL ;;
    10) __primus_word=USR1 ;;
    12) __primus_word=USR2 ;;
    15) __primus_word=TERM ;;
    *) __primus_word=$2 ;;
  esac
  printf -v "$1" '%s' "$__primus_word"
}
