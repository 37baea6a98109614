# shellcheck shell=bash
# runner/lib/secrets.sh: secrets never reach an output or an argv (README
# "Security"). Sourced by runner/lib/common.sh (never on its own: the logging
# it serves is there); defines only primus_* / __primus_* / PRIMUS_* names and
# never changes the caller's shell options.
#
#   primus_is_secret_name NAME      the rule (runner/lib/facts.sh, generated from
#                                   the registry, as Python's masking.is_secret)
#   primus_mask_into VAR TEXT       TEXT with every secret value as ****
#   primus_mask_add NAME VALUE      one more value to mask (no variable holds it)
#   primus_secret_note NAME         NAME was assigned from user input (masking cache)
#   primus_mask_value NAME VALUE    VALUE, or **** when NAME is a secret
#   primus_mask_stream              a filter: stdin to stdout, masked
#   primus_debug_trace_begin/_end   PRIMUS_DEBUG=1 xtrace, masked
#   primus_secret_env_args OUT COUNT ARGS...
#                                   --env SECRET=VALUE moved off the argv

if [[ -n ${__PRIMUS_SECRETS_SH:-} ]]; then
  return 0
fi
__PRIMUS_SECRETS_SH=1

# primus_is_secret_name NAME: true when NAME's value must never be printed.
# The rule comes from runner/lib/facts.sh (registry shared_facts), the data
# Python's primus_runner.masking.is_secret reads too; PRIMUS_SECRET_NAMES adds
# the user's names and `*` globs (__primus_secret_user_glob).
primus_is_secret_name() {
  local __u=${1^^}
  __primus_secret_user_glob
  # shellcheck disable=SC2053  # the right sides are the rule's globs, unquoted on purpose
  [[ $__u != $PRIMUS_SECRET_EXEMPT_GLOB ]] &&
    [[ $__u == $PRIMUS_SECRET_GLOB || $__u == $__PRIMUS_USER_SECRET_GLOB ]]
}

# __primus_secret_user_glob: PRIMUS_SECRET_NAMES (names or `*` globs, comma or
# space separated, any case; a word with another character is ignored, as in
# masking.user_patterns) as an extended glob in __PRIMUS_USER_SECRET_GLOB and
# an ERE group in __PRIMUS_USER_SECRET_RE; both match nothing when it is unset.
# Recomputed only when the value changes.
__PRIMUS_USER_SECRET_FOR=$'\x01'
__primus_secret_user_glob() {
  local __v=${PRIMUS_SECRET_NAMES-} __w __g="" __r=""
  [[ $__v != "$__PRIMUS_USER_SECRET_FOR" ]] || return 0
  __PRIMUS_USER_SECRET_FOR=$__v
  for __w in ${__v//,/ }; do
    [[ $__w =~ ^[A-Za-z0-9_*]+$ ]] || continue
    __g+="${__g:+|}${__w^^}"
    __r+="${__r:+|}${__w//\*/[A-Za-z0-9_]*}"
  done
  # A name never holds a newline: the empty case matches nothing.
  __PRIMUS_USER_SECRET_GLOB="@(${__g:-$'\n'})"
  __PRIMUS_USER_SECRET_RE=${__r:+|$__r}
}

# __primus_secret_listing VAR: the names of this shell's variables that the
# rule calls secret (PRIMUS_SECRET_NAMES included; the exempt names too: the
# caller drops them), newline separated, in VAR. One fork: `compgen -v` lists
# every variable and its -X filter keeps the rule's names, both in C (3-4 ms
# with the launcher's ~400 variables, where listing the names and matching them
# one by one in bash cost 8-14 ms; measured on the 2-core development machine).
# Status 1 without programmable completion (no compgen) or when the fork
# fails: the caller then lists the names without a process (a secret must be
# masked even when the machine is out of processes).
__PRIMUS_COMPGEN=""
if compgen -W x x >/dev/null 2>&1; then __PRIMUS_COMPGEN=1; fi
__primus_secret_listing() {
  local -n __psl_out=$1
  [[ -n ${__PRIMUS_COMPGEN:-} ]] || return 1
  # In a SIGCHLD trap (runner/lib/watchdog.sh, runner/lib/container_watch.sh:
  # PRIMUS_IN_CHLD_TRAP=1) no fork: the child's own end would make bash warn
  # "run_pending_traps: bad value in trap_list" on the console.
  [[ -z ${PRIMUS_IN_CHLD_TRAP:-} ]] || return 1
  local __filter="!@($PRIMUS_SECRET_GLOB|$__PRIMUS_USER_SECRET_GLOB)"
  # In the subshell only: -X takes extended globs with extglob on, and
  # nocasematch compares the names as the rule does (upper-cased). The final
  # '.' tells an empty listing from a fork that failed.
  __psl_out=$(shopt -s extglob nocasematch; compgen -v -X "$__filter" 2>/dev/null; printf .) || return 1
  [[ $__psl_out == *. ]] || return 1
  __psl_out=${__psl_out%.}
}

# __primus_all_var_names: every shell variable name, in __PRIMUS_NAMES, without
# a process: a `${!X@}` expansion per first character (3-6 ms with ~200
# variables); the fallback of __primus_secret_listing.
__primus_all_var_names() {
  __PRIMUS_NAMES=("${!A@}" "${!B@}" "${!C@}" "${!D@}" "${!E@}" "${!F@}" "${!G@}"
    "${!H@}" "${!I@}" "${!J@}" "${!K@}" "${!L@}" "${!M@}" "${!N@}" "${!O@}" "${!P@}"
    "${!Q@}" "${!R@}" "${!S@}" "${!T@}" "${!U@}" "${!V@}" "${!W@}" "${!X@}" "${!Y@}"
    "${!Z@}" "${!a@}" "${!b@}" "${!c@}" "${!d@}" "${!e@}" "${!f@}" "${!g@}" "${!h@}"
    "${!i@}" "${!j@}" "${!k@}" "${!l@}" "${!m@}" "${!n@}" "${!o@}" "${!p@}" "${!q@}"
    "${!r@}" "${!s@}" "${!t@}" "${!u@}" "${!v@}" "${!w@}" "${!x@}" "${!y@}" "${!z@}" "${!_@}")
}

# __primus_env_var_names: the names in this process's environment as the kernel
# holds it (/proc/self/environ: what it inherited, read without a process), in
# __PRIMUS_NAMES; status 1 when unreadable or at most PRIMUS_SECRET_RESCAN_MAX.
__primus_env_var_names() {
  local -a __env=()
  { mapfile -d '' __env </proc/self/environ; } 2>/dev/null || return 1
  ((${#__env[@]} > PRIMUS_SECRET_RESCAN_MAX)) || return 1
  __PRIMUS_NAMES=("${__env[@]%%=*}")
}

# __primus_secret_keep NAME...: add to __PRIMUS_SECRET_VARS each NAME the rule
# calls secret, once (the rule's globs inline: a function call per name would
# cost milliseconds over thousands of names).
__primus_secret_keep() {
  local __name __u
  local -A __seen=()
  for __name in "${__PRIMUS_SECRET_VARS[@]}"; do __seen[$__name]=1; done
  for __name in "$@"; do
    [[ -n $__name && -z ${__seen[$__name]-} ]] || continue
    __seen[$__name]=1
    __u=${__name^^}
    # shellcheck disable=SC2053
    [[ $__u != $PRIMUS_SECRET_EXEMPT_GLOB ]] &&
      [[ $__u == $PRIMUS_SECRET_GLOB || $__u == $__PRIMUS_USER_SECRET_GLOB ]] &&
      [[ $__name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && __PRIMUS_SECRET_VARS+=("$__name")
  done
  return 0
}

# __primus_secret_var_names: the names of this shell's secret variables, in
# __PRIMUS_SECRET_VARS, for the maskers. A shell of at most
# PRIMUS_SECRET_RESCAN_MAX inherited variables is listed at every call
# (__primus_secret_listing: one fork), unless frozen (primus_secret_scan_freeze:
# listed once). Listing every variable costs O(n^2) in bash (its variable lists
# are de-duplicated pairwise: 0.5 s per listing with 10,000 exported
# variables), so a shell whose environment holds more takes the names from its
# inherited environment instead (24 ms for 10,000), once (again when
# PRIMUS_SECRET_NAMES changes). Both keep the list current with
# primus_secret_note, which every place that assigns a variable from user input
# calls (the names noted are kept, for a later PRIMUS_SECRET_NAMES).
PRIMUS_SECRET_RESCAN_MAX=1000
__PRIMUS_SECRET_SCANNED=0
__PRIMUS_SECRET_SCAN_FOR=""
__PRIMUS_SECRET_FROZEN=0  # 1: freeze at the next scan; 2: frozen (primus_secret_scan_freeze)
declare -ga __PRIMUS_SECRET_VARS 2>/dev/null || true
declare -gA __PRIMUS_NOTED_NAMES=() 2>/dev/null || true
__primus_secret_var_names() {
  local __listing
  __primus_secret_user_glob
  if ((__PRIMUS_SECRET_SCANNED > PRIMUS_SECRET_RESCAN_MAX || __PRIMUS_SECRET_FROZEN == 2)) &&
    [[ $__PRIMUS_SECRET_SCAN_FOR == "$__PRIMUS_USER_SECRET_FOR" ]]; then
    return 0
  fi
  ((__PRIMUS_SECRET_FROZEN == 0)) || __PRIMUS_SECRET_FROZEN=2
  __PRIMUS_SECRET_SCAN_FOR=$__PRIMUS_USER_SECRET_FOR
  __PRIMUS_SECRET_VARS=()
  if __primus_env_var_names; then
    __PRIMUS_SECRET_SCANNED=${#__PRIMUS_NAMES[@]}
    __primus_secret_keep "${__PRIMUS_NAMES[@]}" "${!__PRIMUS_NOTED_NAMES[@]}"
  elif __primus_secret_listing __listing; then
    __PRIMUS_SECRET_SCANNED=0
    local IFS=$'\n'
    # shellcheck disable=SC2086  # names are identifiers: split on newlines, no glob matches
    __primus_secret_keep $__listing
  else
    __primus_all_var_names
    __PRIMUS_SECRET_SCANNED=${#__PRIMUS_NAMES[@]}
    __primus_secret_keep "${__PRIMUS_NAMES[@]}"
  fi
  return 0
}

# primus_secret_scan_freeze: for a process whose variables can no longer take
# a new secret (the hook runner, once it has started: what hooks emit is masked
# through PRIMUS_MASK_VALUES): the next scan is the last one, as for a large
# shell; PRIMUS_SECRET_NAMES changing still rescans. Saves a fork per log line.
primus_secret_scan_freeze() {
  # Already frozen (a subshell of a frozen shell): that list is current.
  ((__PRIMUS_SECRET_FROZEN == 2)) || __PRIMUS_SECRET_FROZEN=1
}

# primus_secret_known NAMES USER: the launch helper's list of the secret names
# in this process's inherited environment (NAMES, space separated), decided by
# the same rule with PRIMUS_SECRET_NAMES=USER (python/primus_runner/launch/
# helper.py, secret_names_record).
__PRIMUS_SECRET_KNOWN_FOR=$'\x01'
primus_secret_known() {
  local __name
  local -a __names=()
  primus_split __names ' ' "$1"
  for __name in "${__names[@]}"; do
    [[ -z $__name || " ${__PRIMUS_SECRET_VARS[*]} " == *" $__name "* ]] || __PRIMUS_SECRET_VARS+=("$__name")
  done
  __PRIMUS_SECRET_KNOWN_FOR=$2
}

# primus_secret_scan_freeze_known: for a shell whose variables are its
# inherited environment, the helper's records (noted) and its own (nothing
# sourced from elsewhere: the caller knows): freeze on the helper's list, with
# no listing at all, when PRIMUS_SECRET_NAMES is still the value the helper
# decided with; else as primus_secret_scan_freeze.
primus_secret_scan_freeze_known() {
  if [[ $__PRIMUS_SECRET_KNOWN_FOR != $'\x01' && ${PRIMUS_SECRET_NAMES-} == "$__PRIMUS_SECRET_KNOWN_FOR" ]]; then
    __primus_secret_user_glob
    __PRIMUS_SECRET_SCAN_FOR=$__PRIMUS_USER_SECRET_FOR
    __PRIMUS_SECRET_FROZEN=2
    return 0
  fi
  primus_secret_scan_freeze
}

# primus_secret_note NAME: NAME was just assigned from user input; a secret
# name joins the maskers' list (see __primus_secret_var_names).
primus_secret_note() {
  [[ -z $1 ]] || __PRIMUS_NOTED_NAMES[$1]=1
  primus_is_secret_name "$1" || return 0
  [[ " ${__PRIMUS_SECRET_VARS[*]} " == *" $1 "* ]] || __PRIMUS_SECRET_VARS+=("$1")
}

# Tracing (set -x) never shows a secret: every function here that handles a
# secret value starts with `{ local __xt=$-; set +x; } 2>/dev/null` and ends by
# restoring the caller's xtrace, so a caller's `set -x` traces their call but
# not the values inside; PRIMUS_DEBUG=1 traces through primus_mask_stream
# (primus_debug_trace_begin).

# primus_mask_into VAR TEXT: store in VAR the TEXT with the value of every
# secret variable (see primus_is_secret_name) replaced by ****. The one masking
# function every shell printer uses.
primus_mask_into() {
  { local __xt=$-; set +x; } 2>/dev/null
  local __out=$1 __text=$2 __name __value
  __primus_secret_var_names
  for __name in "${__PRIMUS_SECRET_VARS[@]}"; do
    __value=${!__name-}
    [[ ${#__value} -ge 3 ]] || continue
    __text=${__text//"$__value"/****}
  done
  for __value in "${PRIMUS_MASK_VALUES[@]}"; do
    [[ ${#__value} -ge 3 ]] || continue
    __text=${__text//"$__value"/****}
  done
  printf -v "$__out" '%s' "$__text"
  [[ $__xt != *x* ]] || set -x
}

# PRIMUS_MASK_VALUES: more values to mask that no variable of this shell holds
# (e.g. a secret an earlier hook emitted as env.NAME=VALUE). primus_mask_add
# NAME VALUE adds VALUE when NAME is a secret.
declare -ga PRIMUS_MASK_VALUES 2>/dev/null || true
primus_mask_add() {
  { local __xt=$-; set +x; } 2>/dev/null
  if primus_is_secret_name "$1" && ((${#2} >= 3)); then
    PRIMUS_MASK_VALUES+=("$2")
  fi
  [[ $__xt != *x* ]] || set -x
}


# primus_mask_value NAME VALUE: VALUE, or **** when NAME is a secret.
primus_mask_value() {
  { local __xt=$-; set +x; } 2>/dev/null
  local __shown
  primus_mask_value_into __shown "$1" "$2"
  printf '%s' "$__shown"
  [[ $__xt != *x* ]] || set -x
}

# primus_mask_value_into VAR NAME VALUE: primus_mask_value into VAR (no subshell).
primus_mask_value_into() {
  { local __xt=$-; set +x; } 2>/dev/null
  if primus_is_secret_name "$2" && [[ -n $3 ]]; then
    printf -v "$1" '%s' '****'
  else
    printf -v "$1" '%s' "$3"
  fi
  [[ $__xt != *x* ]] || set -x
}

# primus_mask_stream: copy stdin to stdout line by line, masked: the values of
# the secret variables this shell holds when it starts (and PRIMUS_MASK_VALUES),
# and the value of any NAME=VALUE / env.NAME=VALUE word whose NAME is a secret
# (a secret assigned after the stream started). For hook output and traces;
# Runs in a subshell of its own (its shell options stay there).
primus_mask_stream() (
  set +x
  local -a __values=()
  local __name __value __line __re __n
  __primus_secret_var_names
  for __name in "${__PRIMUS_SECRET_VARS[@]}"; do
    [[ $__name == __* ]] && continue
    __value=${!__name-}
    ((${#__value} >= 3)) && __values+=("$__value")
  done
  for __value in "${PRIMUS_MASK_VALUES[@]}"; do
    ((${#__value} >= 3)) && __values+=("$__value")
  done
  # NAME=VALUE or `-v NAME %s VALUE` (printf -v in a trace) with a secret NAME.
  __re='(^|[^A-Za-z0-9_])(('"$PRIMUS_SECRET_NAME_RE$__PRIMUS_USER_SECRET_RE"')(=|[[:space:]]+%s[[:space:]]+))('"'[^']*'|[^*'\"[:space:]][^'\"[:space:]]*)"
  shopt -s nocasematch
  while primus_read __line || [[ -n $__line ]]; do
    for __value in "${__values[@]}"; do
      __line=${__line//"$__value"/****}
    done
    __n=0
    while ((__n++ < 20)) && [[ $__line =~ $__re ]]; do
      # [2]: NAME= (or -v NAME %s ); the value is the last group.
      __line=${__line/"${BASH_REMATCH[2]}${BASH_REMATCH[-1]}"/"${BASH_REMATCH[2]}****"}
    done
    printf '%s\n' "$__line"
  done
)

# primus_debug_trace_begin: with PRIMUS_DEBUG=1, turn on xtrace with the trace
# sent through primus_mask_stream to stderr (BASH_XTRACEFD), so a traced
# assignment or call shows **** instead of a secret. Idempotent.
primus_debug_trace_begin() {
  [[ ${PRIMUS_DEBUG:-0} == 1 && -z ${__PRIMUS_TRACE_FD:-} ]] || return 0
  exec {__PRIMUS_TRACE_FD}> >(primus_mask_stream >&2)
  BASH_XTRACEFD=$__PRIMUS_TRACE_FD
  set -x
}

# primus_debug_trace_end: stop what primus_debug_trace_begin started.
primus_debug_trace_end() {
  { [[ -n ${__PRIMUS_TRACE_FD:-} ]] || return 0; } 2>/dev/null
  set +x
  # Unsetting BASH_XTRACEFD closes the filter's descriptor (bash(1)).
  unset BASH_XTRACEFD
  __PRIMUS_TRACE_FD=""
}

# primus_secret_env_args OUT COUNT ARGS...: OUT = ARGS, except that every
# `--env NAME=VALUE` among the first COUNT words whose NAME is a secret becomes
# `--env NAME` (by name) and NAME=VALUE is exported instead: a value on an argv
# is readable by every user of the node (/proc/PID/cmdline) for the whole job.
# The names moved are in PRIMUS_SECRET_MOVED. Status 0 when one moved, else 1.
primus_secret_env_args() {
  { local __xt=$-; set +x; } 2>/dev/null
  local -n __sea_out=$1
  local __count=$2 __i __next __name __rc=1
  shift 2
  local -a __words=("$@")
  __sea_out=()
  PRIMUS_SECRET_MOVED=()
  for ((__i = 0; __i < ${#__words[@]}; __i++)); do
    __next=${__words[__i + 1]-}
    __name=${__next%%=*}
    if ((__i + 1 < __count)) && [[ ${__words[__i]} == --env && $__next == *=* &&
      $__name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && primus_is_secret_name "$__name"; then
      printf -v "$__name" '%s' "${__next#*=}"
      export "${__name?}"
      primus_secret_note "$__name"
      __sea_out+=(--env "$__name")
      PRIMUS_SECRET_MOVED+=("$__name")
      __i=$((__i + 1))
      __rc=0
      continue
    fi
    __sea_out+=("${__words[__i]}")
  done
  [[ $__xt != *x* ]] || set -x
  return "$__rc"
}
