# shellcheck shell=bash
# runner/lib/launch_env.sh: the direct launcher's --env / direct.env items
# (docs/configuration.md "Configuration": they beat every other source of the job's environment).
# Sourced by runner/primus-cli-direct.sh; defines only primus_* / PRIMUS_*
# names and never changes shell options.
#
#   PRIMUS_CLI_ENV                  the KEY=VALUE items, in order: config
#                                   direct.env, then --env; the launch helper
#                                   reads them (python/primus_runner/env/
#                                   inputs.py) and hands them back as `cli`
#                                   records before the layers
#   primus_cli_env_apply            export every item again (values are data),
#                                   so they stay above layers and hooks
#   primus_cli_env_note_origins     tell env show they came from the command line
#   primus_container_bytes_restore OUT ARGS...
#                                   inside `primus-cli container`: the words
#                                   and values that are not UTF-8, byte for byte

if [[ -n ${__PRIMUS_LAUNCH_ENV_SH:-} ]]; then
  return 0
fi
__PRIMUS_LAUNCH_ENV_SH=1

PRIMUS_CLI_ENV=()

# primus_cli_env_apply: export every --env / direct.env item (values are data).
primus_cli_env_apply() {
  # A __primus_ local: an item may name any variable (--env item=x sets the global).
  local __primus_item
  for __primus_item in "${PRIMUS_CLI_ENV[@]}"; do
    printf -v "${__primus_item%%=*}" '%s' "${__primus_item#*=}"
    export "${__primus_item%%=*}"
    [[ ${__primus_item%%=*} != XLA_FLAGS ]] || export PRIMUS_XLA_FLAGS_OWNED=1
  done
}

# primus_cli_env_note_origins: tell env show where the --env values came from.
primus_cli_env_note_origins() {
  local item
  for item in "${PRIMUS_CLI_ENV[@]}"; do
    primus_env_note_origin "${item%%=*}" cli
  done
}

# primus_container_bytes_restore OUT ARGS...: OUT = ARGS with the words
# PRIMUS_CONTAINER_BYTES carries put back, and its values exported; then it is
# unset. docker and podman pass argv and environment to the container in JSON,
# which turns bytes that are not UTF-8 into U+FFFD, so the container plan
# (python/primus_runner/launch/container_bytes.py) sent those escaped: triples
# "arg N VALUE" (the N-th word from the end) and "env NAME VALUE", VALUE with
# \xHH escapes (printf %b).
primus_container_bytes_restore() {
  local -n __primus_words=$1
  shift
  __primus_words=("$@")
  local -a __f
  local __i __kind __key __value
  read -r -a __f <<<"${PRIMUS_CONTAINER_BYTES:-}"
  unset PRIMUS_CONTAINER_BYTES
  for ((__i = 0; __i + 2 < ${#__f[@]}; __i += 3)); do
    __kind=${__f[__i]} __key=${__f[__i + 1]}
    printf -v __value '%b' "${__f[__i + 2]}"
    if [[ $__kind == arg && $__key =~ ^[1-9][0-9]{0,6}$ ]] && ((__key <= $#)); then
      __primus_words[$# - __key]=$__value
    elif [[ $__kind == env && $__key =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      printf -v "$__key" '%s' "$__value"
      export "${__key?}"
      primus_secret_note "$__key"
    else
      LOG_WARN "PRIMUS_CONTAINER_BYTES: record '$__kind $__key' ignored (set by primus-cli container, not by hand)."
    fi
  done
}
