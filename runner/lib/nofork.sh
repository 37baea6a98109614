# shellcheck shell=bash
# runner/lib/nofork.sh: builtin-only stand-ins for the commands the launcher
# would otherwise start (date, mktemp) and for `IFS= read`.
# Why: before it starts any process, bash rebuilds its exported environment
# when an export changed since the last one (and once at its own start),
# de-duplicating the names pairwise: 0.5 s with 10,000 exported variables on
# the 2-core development machine. A variable assigned in
# front of a builtin (`IFS= read`, `TZ=UTC printf`) counts as such a change.
# Sourced by runner/lib/common.sh; defines only primus_* names and never
# changes the caller's shell options.
#
#   primus_read ARGS...            `read -r ARGS...` with IFS empty
#   primus_split VAR SEP TEXT      VAR = the array of TEXT's fields split at SEP
#   primus_utc_now VAR SEP [EPOCH] the UTC time, 2026-12-04T23:12:35Z or 20261204T231235Z
#   primus_temp_file VAR PREFIX    a new empty file, mode 600, under TMPDIR (as mktemp)
#   primus_env_settle              build the exported environment once, here
#
# A child that starts a command is written `(exec CMD) &`: bash's exec in a
# ( ) subshell leaves SHLVL alone, where `CMD &`, `FUNCTION_THAT_EXECS &`, a
# command substitution or a process substitution lowers SHLVL first, and
# with it rebuilds the environment in the child, every time (bash 5.2
# builtins/exec.def and execute_cmd.c, execute_disk_command). A child also
# rebuilds when its parent had a change pending; primus_env_settle before
# starting several children settles it once in the parent.

if [[ -n ${__PRIMUS_NOFORK_SH:-} ]]; then
  return 0
fi
__PRIMUS_NOFORK_SH=1

# primus_read ARGS...: the line or NUL field byte for byte; use it instead of
# `IFS= read -r` (the assignment in front would mark the environment changed).
primus_read() {
  local IFS=
  read -r "$@"
}

# primus_split VAR SEP TEXT: instead of `IFS=SEP read -r -a VAR <<<TEXT`.
primus_split() {
  local IFS=$2
  read -r -a "$1" <<<"$3"
}

# primus_utc_now VAR SEP [EPOCH]: the current UTC time (or EPOCH seconds) in
# VAR, as 2026-12-04T23:12:35Z (SEP=-) or 20261204T231235Z (SEP empty), by
# arithmetic (days to civil date, H. Hinnant's algorithm) instead of
# `TZ=UTC printf '%(...)T'`, whose TZ assignment rebuilds the environment twice.
primus_utc_now() {
  local -i __s=${3:-$EPOCHSECONDS} __z __era __doe __yoe __doy __mp __y __m __d
  local __c=${2:+:}
  __z=$((__s / 86400 + 719468))
  __era=$((__z / 146097))
  __doe=$((__z - __era * 146097))
  __yoe=$(((__doe - __doe / 1460 + __doe / 36524 - __doe / 146096) / 365))
  __doy=$((__doe - (365 * __yoe + __yoe / 4 - __yoe / 100)))
  __mp=$(((5 * __doy + 2) / 153))
  __d=$((__doy - (153 * __mp + 2) / 5 + 1))
  __m=$((__mp < 10 ? __mp + 3 : __mp - 9))
  __y=$((__yoe + __era * 400 + (__m <= 2)))
  printf -v "$1" '%04d%s%02d%s%02dT%02d%s%02d%s%02dZ' "$__y" "$2" "$__m" "$2" "$__d" \
    $((__s % 86400 / 3600)) "$__c" $((__s % 3600 / 60)) "$__c" $((__s % 60))
}

# primus_temp_file VAR PREFIX: create ${TMPDIR:-/tmp}/PREFIX.<pid>.<random>,
# empty, mode 600, never an existing file (noclobber, in a subshell: a fork
# without exec rebuilds nothing); VAR = its path. Status 1 when it cannot.
primus_temp_file() {
  local __dir=${TMPDIR:-/tmp} __try __n
  for ((__n = 0; __n < 50; __n++)); do
    __try=$__dir/$2.$BASHPID.$SRANDOM
    if (umask 077 && set -o noclobber && : >"$__try") 2>/dev/null; then
      printf -v "$1" '%s' "$__try"
      return 0
    fi
    [[ -d $__dir && -w $__dir ]] || return 1
  done
  return 1
}

# primus_env_settle: build the exported environment in this process now (a
# command substitution does so before it forks; the child itself starts
# nothing), so the children started next inherit it.
primus_env_settle() {
  : "$(:)"
}
