# shellcheck shell=bash
# runner/lib/mode_words.sh: how the words after `primus-cli slurm ... --` and
# after the slurm entry's own options name the mode.
#
# Owns one rule, shared by runner/primus-cli-slurm.sh and
# runner/primus-cli-slurm-entry.sh, written as the upstream Primus runner reads
# them (AMD-AGI/Primus fd1eeabb, runner/primus-cli-slurm-entry.sh:224-236, the
# call form of runner/primus-cli-slurm.sh:328):
#   [--] direct|container [MODE ARGS]   the mode named (one leading `--` dropped)
#   [--] -OPTION ...                    no mode: these are the mode's options
#   [--] WORD ...                       no mode: WORD... is the workload, given to
#                                       the mode after a `--` of its own
# With no mode named the caller takes slurm.mode (default container, as
# upstream). It must not load the configuration, start a process or exit: it
# only splits words.

# primus_mode_words_split ARGS...: PRIMUS_MODE_WORD = direct|container, or ""
# when none is named; PRIMUS_MODE_ARGS = the words for that mode's launcher.
# shellcheck disable=SC2034 # PRIMUS_MODE_WORD and PRIMUS_MODE_ARGS are read by the callers
primus_mode_words_split() {
  PRIMUS_MODE_WORD=""
  PRIMUS_MODE_ARGS=()
  [[ ${1-} != -- ]] || shift
  if [[ -n ${1-} ]] && primus_is_one_of "$1" "${PRIMUS_NODE_MODES[@]}"; then
    PRIMUS_MODE_WORD=$1
    shift
    PRIMUS_MODE_ARGS=("$@")
    return 0
  fi
  case ${1-} in
    "" | -*) PRIMUS_MODE_ARGS=("$@") ;;
    *) PRIMUS_MODE_ARGS=(-- "$@") ;;
  esac
}
