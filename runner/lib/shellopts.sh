# shellcheck shell=bash
# runner/lib/shellopts.sh: shell-option protection for the files a user sources
# into an interactive shell or their own script (base_env.sh, primus-env.sh).
# A library: it only defines functions, so sourcing it changes nothing.
#
#   primus_opts_save      remember errexit/nounset/xtrace (outermost call only),
#                         then switch errexit, nounset and xtrace off (a caller's
#                         `set -x` neither traces the layers nor shows a secret);
#                         PRIMUS_DEBUG=1 traces them through secrets.sh's masking
#                         filter (primus_debug_trace_begin)
#   primus_opts_restore   put back what the outermost primus_opts_save found
#
# Calls nest: only the outermost pair saves and restores.

# primus_opts_save: remember errexit/nounset/xtrace (outermost call only) and
# switch errexit and nounset off, so nothing in the layers can end the caller.
primus_opts_save() {
  __PRIMUS_OPTS_DEPTH=$((${__PRIMUS_OPTS_DEPTH:-0} + 1))
  ((__PRIMUS_OPTS_DEPTH == 1)) || return 0
  __PRIMUS_OPTS_SAVED=$-
  set +e +u +x
  if declare -F primus_debug_trace_begin >/dev/null; then primus_debug_trace_begin; fi
  return 0
}

# primus_opts_restore: put back what primus_opts_save found.
primus_opts_restore() {
  __PRIMUS_OPTS_DEPTH=$((${__PRIMUS_OPTS_DEPTH:-1} - 1))
  ((__PRIMUS_OPTS_DEPTH <= 0)) || return 0
  __PRIMUS_OPTS_DEPTH=0
  if declare -F primus_debug_trace_end >/dev/null; then primus_debug_trace_end; fi
  case $__PRIMUS_OPTS_SAVED in *x*) set -x ;; *) set +x ;; esac
  case $__PRIMUS_OPTS_SAVED in *u*) set -u ;; esac
  case $__PRIMUS_OPTS_SAVED in *e*) set -e ;; esac
  return 0
}
