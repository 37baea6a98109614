# shellcheck shell=bash
# runner/lib/launch_env.sh: the direct launcher's --env / direct.env items
# (SPEC section 3: they beat every other source of the job's environment).
# Sourced by runner/primus-cli-direct.sh; defines only primus_* / PRIMUS_*
# names and never changes shell options.
#
#   PRIMUS_CLI_ENV                  the KEY=VALUE items, in order
#   primus_cli_env_add ITEM         --env ITEM: KEY=VALUE, a file of KEY=VALUE
#                                   lines, or NAME (the value NAME has now)
#   primus_cli_env_check ITEM WHERE the key must be a variable name (exit 2)
#   primus_cli_env_apply            export every item (values are data)
#   primus_cli_env_note_origins     tell env show they came from the command line

if [[ -n ${__PRIMUS_LAUNCH_ENV_SH:-} ]]; then
  return 0
fi
__PRIMUS_LAUNCH_ENV_SH=1

PRIMUS_CLI_ENV=()

# primus_cli_env_add ITEM: ITEM is KEY=VALUE, or a file of KEY=VALUE lines, or NAME.
primus_cli_env_add() {
  local item=$1
  if [[ $item != *=* ]]; then
    if [[ -f $item ]]; then
      primus_cli_env_read_file "$item"
    elif [[ $item =~ ^[A-Za-z_][A-Za-z0-9_]*$ && -n ${!item+set} ]]; then
      # --env NAME: the value NAME has in the environment (how primus-cli
      # container hands values in without putting them on an argv).
      PRIMUS_CLI_ENV+=("$item=${!item}")
    else
      primus_bad_usage "primus-cli direct" "--env '$item' is neither KEY=VALUE, an existing file, nor a variable set in the environment; write --env KEY=VALUE or --env path/to/file.env."
    fi
    return
  fi
  primus_cli_env_check "$item" "--env"
  PRIMUS_CLI_ENV+=("$item")
}

# primus_cli_env_check KEY=VALUE WHERE: the key must be a valid variable name.
primus_cli_env_check() {
  local key=${1%%=*}
  [[ $key =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] ||
    primus_bad_usage "primus-cli direct" "$2 '$key' is not a valid variable name; accepted: letters, digits and '_', not starting with a digit."
}

# primus_cli_env_read_file FILE: the KEY=VALUE items of an env file, as the one
# parser (python/primus_runner/envfile.py: shell-style assignments, $VAR expanded
# from earlier lines and this environment, quotes stripped, nothing ever run)
# reads them; a bad file is exit 2 naming the line, as every mode.
primus_cli_env_read_file() {
  local item rc=0
  local -a items=()
  primus_pick_python
  mapfile -d '' -t items < <(PYTHONPATH="$PRIMUS_ROOT/python" "$PRIMUS_PYTHON" -m primus_runner.envfile "$1")
  wait "$!" || rc=$?
  if ((rc != 0)); then
    # A parser that did not run must not read as an empty file.
    LOG_ERROR "--env file $1: the parser ($PRIMUS_PYTHON -m primus_runner.envfile) failed with exit $rc; nothing was started."
    exit "$PRIMUS_EXIT_MISSING"
  fi
  if [[ ${items[0]:-} =~ ^!([0-9]+)\ (.*)$ ]]; then
    LOG_ERROR "${BASH_REMATCH[2]}"
    exit "${BASH_REMATCH[1]}"
  fi
  for item in "${items[@]}"; do
    PRIMUS_CLI_ENV+=("$item")
  done
}

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
