# shellcheck shell=bash
# runner/lib/torchrun_words.sh: the words torchrun hands each worker arrive byte
# for byte. torchrun's local agent passes every word of the worker's
# command through string.Template(word).safe_substitute(local_rank=N)
# (torch/distributed/elastic/utils/api.py, macros.substitute, called from
# agent/server/local_elastic_agent.py _start_workers; read in torch 2.13.0):
# `$local_rank` and `${local_rank}` become the local rank and `$$` becomes `$`;
# any other `$` is left. Doubling every `$` makes that substitution give the
# word back unchanged. Sourced by runner/lib/workload.sh; defines only
# primus_torchrun_words and never changes the caller's shell options.

# primus_torchrun_words OUT WORDS...: OUT = WORDS with each `$` doubled, for the
# worker command after torchrun's --no-python (never for torchrun's own options).
primus_torchrun_words() {
  local -n __tw_out=$1
  local __tw_word
  shift
  __tw_out=()
  for __tw_word in "$@"; do
    __tw_out+=("${__tw_word//\$/\$\$}")
  done
}
