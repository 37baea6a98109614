# shellcheck shell=bash
# runner/lib/launch_env.sh: the direct launcher's --env / direct.env items
# (SPEC section 3: they beat every other source of the job's environment).
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

if [[ -n ${__PRIMUS_LAUNCH_ENV_SH:-} ]]; then
  return 0
fi
__PRIMUS_LAUNCH_ENV_SH=1

PRIMUS_CLI_ENV=()

# primus_cli_env_apply: export every --env / direct.env item (values are data).
primus_cli_env_apply() {
  local item
  for item in "${PRIMUS_CLI_ENV[@]}"; do
    printf -v "${item%%=*}" '%s' "${item#*=}"
    export "${item%%=*}"
    [[ ${item%%=*} != XLA_FLAGS ]] || export PRIMUS_XLA_FLAGS_OWNED=1
  done
}

# primus_cli_env_note_origins: tell env show where the --env values came from.
primus_cli_env_note_origins() {
  local item
  for item in "${PRIMUS_CLI_ENV[@]}"; do
    primus_env_note_origin "${item%%=*}" cli
  done
}
