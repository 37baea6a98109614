# shellcheck shell=bash
# runner/lib/config.sh: configuration values for the bash side.
#
# YAML is parsed by Python (python3 -m primus_runner config dump), never by bash.
# The records arrive NUL-delimited and are stored, never evaluated:
#   PRIMUS_CONFIG[direct.nnodes]=1            scalars (booleans as 1/0)
#   PRIMUS_CONFIG_LIST[direct.patch]=N        list length, items in
#   PRIMUS_CONFIG[direct.patch#0..N-1]
# Precedence (docs/configuration.md "Configuration"): CLI flags > --config FILE > ~/.primus.yaml >
# runner/.primus.yaml; the flags are applied by the caller.
#
# Functions:
#   primus_config_load [FILE]          run the Python dump once and store it
#   primus_config_read_records         store kind\0key\0value\0 records from stdin
#   primus_config_get_into VAR KEY [DEFAULT]
#   primus_config_get_list KEY ARRAY   fill ARRAY with the list's items

declare -gA PRIMUS_CONFIG=()
declare -gA PRIMUS_CONFIG_LIST=()

# primus_config_store KIND KEY VALUE: store one record (see header).
primus_config_store() {
  case $1 in
    cfg) PRIMUS_CONFIG[$2]=$3 ;;
    list)
      PRIMUS_CONFIG_LIST[$2]=$3
      PRIMUS_CONFIG[$2]=""
      ;;
    item)
      local n=${__PRIMUS_CONFIG_FILL[$2]:-0}
      PRIMUS_CONFIG[$2#$n]=$3
      __PRIMUS_CONFIG_FILL[$2]=$((n + 1))
      ;;
    *) return 1 ;;
  esac
}

# primus_config_read_records: read kind\0key\0value\0 records on stdin; 'cfg',
# 'list' and 'item' records are stored, other kinds are handed to the function
# named by $1 (if given) as: HANDLER KIND KEY VALUE.
primus_config_read_records() {
  local handler=${1:-} i
  local -a fields
  declare -gA __PRIMUS_CONFIG_FILL=()
  # One mapfile instead of three `read`s per record: read(1) on a pipe costs a
  # system call per byte.
  mapfile -d '' -t fields
  for ((i = 0; i + 2 < ${#fields[@]}; i += 3)); do
    if ! primus_config_store "${fields[i]}" "${fields[i + 1]}" "${fields[i + 2]}"; then
      if [[ -n $handler ]]; then
        "$handler" "${fields[i]}" "${fields[i + 1]}" "${fields[i + 2]}" || return
      fi
    fi
  done
}

# primus_config_load [FILE]: load runner/.primus.yaml, ~/.primus.yaml and FILE.
# Returns the Python exit code (1 missing file, 2 malformed YAML).
primus_config_load() {
  local -a args=(config dump --format nul)
  [[ -n ${1:-} ]] && args+=(--config "$1")
  primus_config_read_records < <(primus_python "${args[@]}")
  # bash >= 5.1: $! is the process substitution; wait returns its status.
  wait "$!"
}

# primus_config_get_into VAR KEY [DEFAULT]: VAR=value of KEY, or DEFAULT when
# KEY is missing or empty.
primus_config_get_into() {
  local __cfg_value=${PRIMUS_CONFIG[$2]-}
  [[ -n $__cfg_value ]] || __cfg_value=${3-}
  printf -v "$1" '%s' "$__cfg_value"
}

# primus_config_get_list KEY ARRAY: ARRAY=( items of list KEY ).
primus_config_get_list() {
  local -n __out=$2
  __out=()
  local n=${PRIMUS_CONFIG_LIST[$1]:-0} i
  for ((i = 0; i < n; i++)); do
    __out+=("${PRIMUS_CONFIG[$1#$i]}")
  done
}
