#!/usr/bin/env bash
# Usage: primus-cli container [options] [runtime options] -- <direct args...>
# Summary: run the direct entry in docker/podman
#
# Run `primus-cli direct` inside a docker or podman container:
#   <runtime> run --rm --name <name>-<job id or time>-<node rank> --label ... \
#     [runtime options] --device ... --volume <repo>:<repo> --workdir $PWD \
#     --env NAME ... IMAGE <repo>/runner/primus-cli direct [--config FILE] <direct args...>
#
# Options (ours; flags beat config container.*):
#   --image IMAGE         image (else $DOCKER_IMAGE, container.image, container.options.image)
#   --runtime R           docker|podman (else container.runtime, else docker when its
#                         engine answers, else podman)
#   --name NAME           container name prefix (container.name; default primus-training)
#   --env KEY=VALUE|FILE|NAME
#                         set in the job (repeatable); the value travels in the
#                         runtime's environment (--env NAME), never on a command line
#   --clean               first remove the containers this launcher left behind
#                         (label io.primus-runner.managed=1 and the same name
#                         prefix); without '--' only that
#   --config FILE         config file; mounted read-only and passed to the inner direct
#                         (the repository, $PWD and an absolute PRIMUS_WORKSPACE are
#                         mounted at the same paths)
#   --debug, --dry-run    as for direct (--dry-run prints the runtime command, runs nothing)
#   -h, --help            this help
# Every other option before `--` is a docker/podman run option and passes
# through: --key=value, --key value (next word not starting with '-'), or a
# bare flag (--privileged). Config container.options.<key> maps to --key value
# (list: repeated; true: bare flag; false or []: removed). Defaults (ROCm):
#   --ipc host --network host --ulimit nofile=1048576:1048576 --ulimit memlock=-1
#   --ulimit stack=67108864 --group-add video --cap-add SYS_PTRACE
#   --security-opt seccomp=unconfined --init (upstream's --privileged and
#   --cap-add CAP_SYS_ADMIN are not given: docs/coming-from-upstream.md)
# (a value given again, by you or the config, is passed once: --cap-add SYS_PTRACE)
# (--shm-size only when --ipc is not host); devices by accelerator: /dev/kfd and
# /dev/dri (ROCm) or /dev/neuron0..N-1 (Neuron), /dev/infiniband when present.
#
# Forwarded from the host by name when set: the container allowlist
# (config container.options.env; `env explain NAME` says whether NAME is on it),
# every PRIMUS_*, NCCL_*, RCCL_*, GLOO_*, IONIC_*, HIPBLASLT_* variable, and the
# families the references use: TORCH_NCCL_*, TORCH_FR_*, TORCH_COMPILE_*, HSA_*,
# HIP_*, ROCBLAS_*, NVTE_*, XLA_*, UCCL_*, MSCCLPP_*, NEURON_*, FI_* (the summary
# names those the registry does not know). Any other registered variable that is
# set gets a warning with the --env that passes it. Under Slurm, OpenMPI or
# PyTorchJob the ranks are mapped here and passed in.
#
# Everything after `--` goes to `primus-cli direct` inside (its --env values are
# moved to the runtime environment too; bytes that are not UTF-8 arrive as they
# are, through PRIMUS_CONTAINER_BYTES), e.g.
#   primus-cli container --image rocm/primus:v1 -- --module primus_runner -- preflight
# SIGTERM/SIGINT/SIGHUP stop the container (within PRIMUS_KILL_GRACE seconds,
# default 10) and remove it; exit 128+N (SIGINT too when the launcher started
# with it ignored, as `cmd &` in a script does). A launcher killed outright
# (SIGKILL, OOM killer) leaves no container: the container watcher (python/primus_runner/monitor/container_guard.py)
# stops it the same way and removes it. SIGUSR1/SIGUSR2 (a preemption notice)
# are sent once to the container (`<runtime> kill --signal`; --init hands them to
# the inner direct, which sends them once to every rank) and the launcher keeps
# waiting. The runtime client runs in a session of its own, so a signal to the
# launcher's process group reaches the container once, through the launcher.
# Its helpers are watched (a SIGCHLD trap, at once): the container watcher
# that died is named and restarted; a runtime client that died while its
# container runs is named and replaced by a follower of the container's log
# (podman's log file, else `<runtime> logs --follow`) from a second before
# (lines of that second may show twice) and `<runtime> wait` for the exit
# code; a podman container whose conmon died is named, stopped and removed
# (podman can deliver neither its output nor its exit code).
# Exit codes: 0 ok; 1 runtime or image missing; 2 bad option, configuration,
# variable or missing device; otherwise the container's own exit code.
set -euo pipefail

PRIMUS_CLI_DIR=${BASH_SOURCE[0]%/*}
[[ $PRIMUS_CLI_DIR != "${BASH_SOURCE[0]}" ]] || PRIMUS_CLI_DIR=.
# shellcheck source=runner/lib/common.sh
source "$PRIMUS_CLI_DIR/lib/common.sh"
primus_abs_path PRIMUS_CLI_DIR "$PRIMUS_CLI_DIR"
# shellcheck source=runner/lib/supervise.sh
source "$PRIMUS_CLI_DIR/lib/supervise.sh"
# shellcheck source=runner/lib/container_watch.sh
source "$PRIMUS_CLI_DIR/lib/container_watch.sh"
# Started with SIGINT ignored (`cmd &` in a script): again, with it at its default.
primus_default_sigint "${BASH_SOURCE[0]}" "$@"

PRIMUS_CT_RUN_CMD=() PRIMUS_CT_FORWARDED=() PRIMUS_CT_ENV_NAMES=()
declare -A PRIMUS_CT_PLAN=()
PRIMUS_CT_VERDICT=()

usage() {
  primus_usage "${BASH_SOURCE[0]}"
}

# on_record KIND KEY VALUE: one record of the Python plan (values are data).
on_record() {
  case $1 in
    log)
      case $2 in
        DEBUG) LOG_DEBUG "$3" ;;
        WARN) LOG_WARN "$3" ;;
        ERROR) LOG_ERROR "$3" ;;
        *) LOG_INFO "$3" ;;
      esac
      ;;
    set) PRIMUS_CT_PLAN[$2]=$3 ;;
    fwd) PRIMUS_CT_FORWARDED+=("$3") ;;
    arg) PRIMUS_CT_RUN_CMD+=("$3") ;;
    env)
      [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || primus_die "$PRIMUS_EXIT_INVALID" "refusing variable name '$2'"
      printf -v "$2" '%s' "$3"
      export "${2?}"
      primus_secret_note "$2"
      PRIMUS_CT_ENV_NAMES+=("$2")
      ;;
  esac
}

# read_plan ARGS...: run the Python plan once; its findings go to the console.
read_plan() {
  # __primus_ locals: an env record may name any variable (--env i, --env rc).
  local -a __primus_fields
  local __primus_i __primus_rc=0
  exec 3>&1
  mapfile -d '' -t __primus_fields < <(primus_python container plan --console-fd 3 "${PRIMUS_CT_VERDICT[@]}" "$@")
  wait "$!" || __primus_rc=$?
  exec 3>&-
  # Values first, so the log lines carry the mapped NODE_RANK in their prefix.
  for ((__primus_i = 0; __primus_i + 2 < ${#__primus_fields[@]}; __primus_i += 3)); do
    [[ ${__primus_fields[__primus_i]} == log ]] ||
      on_record "${__primus_fields[__primus_i]}" "${__primus_fields[__primus_i + 1]}" "${__primus_fields[__primus_i + 2]}"
  done
  for ((__primus_i = 0; __primus_i + 2 < ${#__primus_fields[@]}; __primus_i += 3)); do
    [[ ${__primus_fields[__primus_i]} != log ]] ||
      on_record "${__primus_fields[__primus_i]}" "${__primus_fields[__primus_i + 1]}" "${__primus_fields[__primus_i + 2]}"
  done
  ((__primus_rc == 0)) || exit "$__primus_rc"
}

# clean_ours: remove the containers earlier launches of this name left behind
# (both labels must match: a container without them is never touched).
clean_ours() {
  local -a ids
  mapfile -t ids < <("${PRIMUS_CT_PLAN[runtime_path]}" ps -a -q --filter "label=${PRIMUS_CT_PLAN[label]}" \
    --filter "label=${PRIMUS_CT_PLAN[label_name]}")
  if ((${#ids[@]} == 0)); then
    LOG_INFO "--clean: no container of ours (${PRIMUS_CT_PLAN[label_name]}) to remove"
    return 0
  fi
  LOG_INFO "--clean: removing ${#ids[@]} container(s) of ours: ${ids[*]}"
  "${PRIMUS_CT_PLAN[runtime_path]}" rm -f "${ids[@]}" >/dev/null
}

# ensure_image: the image is local, or pulled; else one clear error.
ensure_image() {
  local image=${PRIMUS_CT_PLAN[image]} out
  "${PRIMUS_CT_PLAN[runtime_path]}" image inspect "$image" >/dev/null 2>&1 && return 0
  LOG_INFO "image $image is not on this host; pulling it with ${PRIMUS_CT_PLAN[runtime]}"
  if ! out=$("${PRIMUS_CT_PLAN[runtime_path]}" pull "$image" 2>&1 >/dev/null); then
    out=${out##*$'\n'}
    primus_die "$PRIMUS_EXIT_MISSING" "container image '$image' is not on this host and could not be pulled (${PRIMUS_CT_PLAN[runtime]}: ${out:-no message}). Fix: check the image name, log in to / reach its registry, or load the image (${PRIMUS_CT_PLAN[runtime]} load -i FILE)."
  fi
}

# hide_secret_args ARGS...: this process runs as long as the container, so a
# secret given as --env NAME=VALUE (the container's options or the inner
# direct's, before the workload's `--`) must leave its argv: restart with
# --env NAME and the value in the environment (common.sh).
hide_secret_args() {
  local -a words=("$@") clean
  local i limit=$# seen=0
  for ((i = 0; i < ${#words[@]}; i++)); do
    [[ ${words[i]} == -- ]] || continue
    seen=$((seen + 1))
    if ((seen == 2)); then
      limit=$i
      break
    fi
  done
  if primus_secret_env_args clean "$limit" "$@"; then
    exec "$BASH" "${BASH_SOURCE[0]}" "${clean[@]}"
  fi
}

# stop_container SIGNAL NUMBER: stop and remove our container, exit 128+NUMBER.
# shellcheck disable=SC2329  # called by the signal traps
stop_container() {
  trap '' TERM INT HUP
  local grace=${PRIMUS_CT_PLAN[grace]}
  LOG_WARN "received SIG$1: stopping container ${PRIMUS_CT_PLAN[name]} (up to ${grace}s before it is killed)"
  primus_ct_remove "$grace"
  exit $((128 + $2))
}

# notify_container SIGNAL: the USR1/USR2 trap. Under slurm-entry a step-wide
# delivery (the entry saw it too, supervise.sh) already reached the runtime
# client, which passes it on (its signal proxy): not sent again.
# shellcheck disable=SC2329  # called by the signal traps
notify_container() {
  PRIMUS_TRAPPED=1  # primus_wait_pid keeps waiting
  local sig=$1 at origin sender
  at=$(primus_signal_note launcher "$sig")
  if [[ -z $PRIMUS_CT_CHILD ]]; then
    LOG_WARN "SIG$sig received before the container started: noted, nothing to forward."
    return 0
  fi
  primus_signal_origin origin sender launcher "$sig" "$at"
  if [[ $origin == step ]]; then
    LOG_INFO "SIG$sig: $sender; the runtime client passes it to the container, not sent again."
  elif "${PRIMUS_CT_PLAN[runtime_path]}" kill --signal "$sig" "${PRIMUS_CT_PLAN[name]}" >/dev/null 2>&1; then
    LOG_INFO "SIG$sig ($sender): sent once to container ${PRIMUS_CT_PLAN[name]}; the launcher keeps waiting."
  else
    LOG_WARN "SIG$sig: container ${PRIMUS_CT_PLAN[name]} is not running (not created yet, or ending): nothing sent."
  fi
}

main() {
  local __primus_word
  for __primus_word in "$@"; do
    [[ $__primus_word != -- ]] || break
    if [[ $__primus_word == -h || $__primus_word == --help ]]; then usage; exit 0; fi
  done
  hide_secret_args "$@"
  # --verdict WORDS (first, from runner/primus-cli-env-check.sh): env check
  # --container, the plan and its check alone; nothing is started.
  if [[ ${1-} == --verdict && $# -ge 2 ]]; then
    PRIMUS_CT_VERDICT=(--verdict "$2")
    shift 2
  fi
  read_plan "$@"
  ((${#PRIMUS_CT_VERDICT[@]} == 0)) || exit 0
  local __primus_quoted
  printf -v __primus_quoted '%q ' "${PRIMUS_CT_RUN_CMD[@]}"
  LOG_INFO "forwarding ${#PRIMUS_CT_FORWARDED[@]} host variable(s): ${PRIMUS_CT_FORWARDED[*]:-none}; by --env: ${PRIMUS_CT_ENV_NAMES[*]:-none}"
  LOG_INFO "command: ${__primus_quoted% }"
  if [[ ${PRIMUS_CT_PLAN[dry_run]} == 1 ]]; then
    LOG_INFO "dry run: nothing was started or removed."
    exit 0
  fi
  [[ ${PRIMUS_CT_PLAN[clean]} != 1 ]] || clean_ours
  [[ ${PRIMUS_CT_PLAN[run]} == 1 ]] || exit 0
  trap 'notify_container USR1' USR1
  trap 'notify_container USR2' USR2
  ensure_image
  trap 'stop_container TERM 15' TERM
  trap 'stop_container INT 2' INT
  trap 'stop_container HUP 1' HUP
  primus_ct_start_watcher
  # A session of its own: a signal to our process group (timeout, Ctrl-C,
  # kill -- -PGID) is not also proxied by the client; we deliver it once.
  # The watcher's pipe stays ours alone (the client must not hold it open).
  setsid "${PRIMUS_CT_RUN_CMD[@]}" {PRIMUS_CT_WATCH_FD}>&- &
  PRIMUS_CT_CHILD=$!
  primus_ct_tell_watcher "client $PRIMUS_CT_CHILD"
  local __primus_at
  while :; do
    primus_wait_pid "$PRIMUS_CT_CHILD"
    __primus_at=$EPOCHREALTIME
    primus_ct_client_lost "$PRIMUS_RUN_RC" "$__primus_at" || break
  done
  [[ -z $PRIMUS_CT_WAITER ]] || primus_ct_follow_end
  exit "$PRIMUS_RUN_RC"
}

main "$@"
