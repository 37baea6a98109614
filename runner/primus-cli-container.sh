#!/usr/bin/env bash
# Usage: primus-cli container [options] -- <direct args...>
#
# Run the direct entry inside a docker or podman container:
#   <runtime> run ... IMAGE <repo>/runner/primus-cli direct <direct args...>
# The repository and the working directory are mounted at the same paths, and
# only the allowlisted host variables (config container.options.env, reference
# section 11) that are set on the host are forwarded. TE_* variables are not on
# the list: pass them with --env.
#
# Options (flags beat config container.*):
#   --image IMAGE         container image (config container.image, else $DOCKER_IMAGE)
#   --runtime R           docker|podman (config container.runtime, default docker)
#   --volume SRC:DST[:O]  extra bind mount (repeatable; adds to container.options.volume)
#   --device DEV          extra device (repeatable; adds to container.options.device)
#   --env KEY=VALUE       set in the container (repeatable; the value travels in
#                         the runtime's environment, never on its command line)
#   --name NAME           container name (config container.name)
#   --config FILE         config file; --debug, --dry-run as for direct
#   -h, --help            this help
#
# Everything after `--` goes to `primus-cli direct` inside, unchanged, e.g.
#   primus-cli container --image rocm/primus:v1 -- --numa -- train pretrain --config exp.yaml
# --dry-run prints the full runtime command (secrets masked) and runs nothing.
# Exit codes: 0 ok; 1 runtime not found; 2 bad option or no image; otherwise
# the container's own exit code.
set -euo pipefail

RUNNER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=runner/lib/common.sh
source "$RUNNER_DIR/lib/common.sh"
# shellcheck source=runner/lib/config.sh
source "$RUNNER_DIR/lib/config.sh"

OPT_IMAGE="" OPT_RUNTIME="" OPT_NAME="" OPT_CONFIG="" OPT_DRY_RUN=0 OPT_DEBUG=0
OPT_VOLUMES=() OPT_DEVICES=() OPT_ENV=() INNER=()

usage() {
  primus_usage "${BASH_SOURCE[0]}"
}

bad_usage() {
  primus_bad_usage "primus-cli container" "$1"
}

# need_value OPTION COUNT: OPTION takes a value; COUNT is how many args remain.
need_value() {
  primus_need_value "primus-cli container" "$1" "$2"
}

parse_args() {
  while (($# > 0)); do
    case $1 in
      -h | --help) usage; exit 0 ;;
      --image) need_value "$1" $#; OPT_IMAGE=$2; shift 2 ;;
      --runtime) need_value "$1" $#; OPT_RUNTIME=$2; shift 2 ;;
      --volume | -v) need_value "$1" $#; OPT_VOLUMES+=("$2"); shift 2 ;;
      --device) need_value "$1" $#; OPT_DEVICES+=("$2"); shift 2 ;;
      --env | -e) need_value "$1" $#; add_env "$2"; shift 2 ;;
      --name) need_value "$1" $#; OPT_NAME=$2; shift 2 ;;
      --config) need_value "$1" $#; OPT_CONFIG=$2; shift 2 ;;
      --dry-run) OPT_DRY_RUN=1; shift ;;
      --debug) OPT_DEBUG=1; shift ;;
      --) shift; INNER=("$@"); return ;;
      *) bad_usage "unknown option '$1' for 'primus-cli container'; container options go before '--', direct arguments after it." ;;
    esac
  done
}

add_env() {
  local key=${1%%=*}
  [[ $1 == *=* ]] || bad_usage "--env '$1' has no '='; write --env KEY=VALUE."
  [[ $key =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] ||
    bad_usage "--env '$key' is not a valid variable name; accepted: letters, digits and '_', not starting with a digit."
  OPT_ENV+=("$1")
}

# settings: flags > config > defaults.
resolve_settings() {
  IMAGE=$OPT_IMAGE
  [[ -n $IMAGE ]] || primus_config_get_into IMAGE container.image "${DOCKER_IMAGE:-}"
  [[ -n $IMAGE ]] || bad_usage "no container image: pass --image IMAGE, set container.image in the config, or export DOCKER_IMAGE."
  RUNTIME=$OPT_RUNTIME
  [[ -n $RUNTIME ]] || primus_config_get_into RUNTIME container.runtime docker
  [[ $RUNTIME == docker || $RUNTIME == podman ]] ||
    bad_usage "container runtime '$RUNTIME' is not supported; accepted: docker, podman (--runtime or container.runtime)."
  NAME=$OPT_NAME
  [[ -n $NAME ]] || primus_config_get_into NAME container.name ""
  local dry
  primus_config_get_into dry main.dry_run 0
  [[ $dry != 1 ]] || OPT_DRY_RUN=1
}

# add_list_option FLAG KEY: one FLAG VALUE pair per item of config list KEY.
add_list_option() {
  local -a items
  primus_config_get_list "$2" items
  local item
  for item in "${items[@]}"; do
    RUN_CMD+=("$1" "$item")
  done
}

# add_scalar_option FLAG KEY: FLAG VALUE when config KEY is set.
add_scalar_option() {
  local value
  primus_config_get_into value "$2" ""
  [[ -z $value ]] || RUN_CMD+=("$1" "$value")
}

# forwarded_names: allowlisted variables set on the host.
forwarded_names() {
  local -a allow
  primus_config_get_list container.options.env allow
  FORWARDED=()
  local name
  for name in "${allow[@]}"; do
    if [[ -n ${!name+set} ]]; then FORWARDED+=("$name"); fi
  done
}

build_command() {
  RUN_CMD=("$RUNTIME" run --rm)
  [[ -z $NAME ]] || RUN_CMD+=(--name "$NAME")
  add_scalar_option --ipc container.options.ipc
  add_scalar_option --network container.options.network
  add_scalar_option --shm-size container.options.shm_size
  add_list_option --device container.options.device
  add_list_option --cap-add container.options.cap_add
  add_list_option --security-opt container.options.security_opt
  add_list_option --group-add container.options.group_add
  add_list_option --volume container.options.volume
  local item
  for item in "${OPT_DEVICES[@]}"; do RUN_CMD+=(--device "$item"); done
  for item in "${OPT_VOLUMES[@]}"; do RUN_CMD+=(--volume "$item"); done
  RUN_CMD+=(--volume "$PRIMUS_ROOT:$PRIMUS_ROOT")
  [[ $PWD == "$PRIMUS_ROOT" ]] || RUN_CMD+=(--volume "$PWD:$PWD")
  RUN_CMD+=(--workdir "$PWD")
  forwarded_names
  # Values travel in the runtime client's environment: --env NAME, never NAME=VALUE.
  for item in "${FORWARDED[@]}"; do RUN_CMD+=(--env "$item"); done
  for item in "${OPT_ENV[@]}"; do
    printf -v "${item%%=*}" '%s' "${item#*=}"
    export "${item%%=*}"
    RUN_CMD+=(--env "${item%%=*}")
  done
  RUN_CMD+=(--env PRIMUS_PYTHON=python3 "$IMAGE" "$PRIMUS_ROOT/runner/primus-cli")
  ((OPT_DEBUG == 0)) || RUN_CMD+=(--debug)
  RUN_CMD+=(direct "${INNER[@]}")
}

# check_host_env: the registry's checks, in container context (TE_* variables
# set on the host are not forwarded: the check says how to pass them).
check_host_env() {
  if [[ ${PRIMUS_SKIP_VALIDATION:-0} == 1 ]]; then
    LOG_WARN "PRIMUS_SKIP_VALIDATION=1: environment checks skipped."
    return 0
  fi
  local rc=0
  primus_python env check --container --format text || rc=$?
  ((rc == 0)) || die "$rc" "environment check failed (exit $rc): no container was started. Fix the variables named above, or set PRIMUS_SKIP_VALIDATION=1."
}

# map_scheduler_ranks: under Slurm, OpenMPI/PMIx or Kubernetes the scheduler's
# variables are not on the allowlist, so the ranks are mapped here on the host
# and handed in as MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK, GPUS_PER_NODE
# (which are). Config direct.* values are the defaults, as for direct.
map_scheduler_ranks() {
  [[ -n ${SLURM_JOB_ID:-}${OMPI_COMM_WORLD_SIZE:-}${PMIX_RANK:-}${PET_NNODES:-}${JOB_COMPLETION_INDEX:-} ]] ||
    return 0
  local -a args=(ranks --format nul)
  local name key value
  for name in MASTER_ADDR MASTER_PORT NNODES NODE_RANK GPUS_PER_NODE; do
    key=direct.${name,,}
    primus_config_get_into value "$key" ""
    [[ -z $value ]] || args+=(--default "$name=$value")
  done
  primus_read_nul_exports < <(primus_python "${args[@]}")
  local rc=0
  wait "$!" || rc=$?
  ((rc == 0)) || exit "$rc"
  LOG_INFO "scheduler ranks mapped on the host: NNODES=$NNODES NODE_RANK=$NODE_RANK MASTER_ADDR=$MASTER_ADDR"
}

main() {
  parse_args "$@"
  ((OPT_DEBUG == 0)) || export PRIMUS_LOG_LEVEL=DEBUG
  primus_config_load "$OPT_CONFIG" || exit
  resolve_settings
  map_scheduler_ranks
  check_host_env
  build_command
  local quoted
  printf -v quoted '%q ' "${RUN_CMD[@]}"
  LOG_INFO "forwarding ${#FORWARDED[@]} host variable(s): ${FORWARDED[*]:-none}"
  LOG_INFO "command: ${quoted% }"
  if ((OPT_DRY_RUN == 1)); then
    LOG_INFO "dry run: nothing was started."
    exit 0
  fi
  command -v "$RUNTIME" >/dev/null 2>&1 ||
    die "$PRIMUS_EXIT_MISSING" "container runtime '$RUNTIME' not found on PATH; install it or pass --runtime podman|docker."
  exec "${RUN_CMD[@]}"
}

main "$@"
