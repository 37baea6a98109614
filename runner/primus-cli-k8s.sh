#!/usr/bin/env bash
# Usage: primus-cli k8s --image IMAGE --nodes N --preset NAME --name NAME
#                       [--as jobset|trainjob|pytorchjob] [--namespace NS] [--restarts N]
#                       [--env K=V|FILE|NAME]... [OPTIONS] [--dry-run]
#                       -- [direct] [LAUNCH ARGS] [-- WORKLOAD ARGS]
#        primus-cli k8s logs|stacks|stop NAME [--namespace NS] [--as KIND]
#        primus-cli k8s check FILE
# Summary: render the launch as a Kubernetes JobSet (or TrainJob, PyTorchJob) and apply it
#
# Renders one manifest whose pods run `primus-cli direct [LAUNCH ARGS] [-- WORKLOAD ARGS]`
# (docs/run-on-kubernetes.md):
#   jobset (default)  JobSet jobset.x-k8s.io/v1alpha2: a headless service, one Job of
#                     N indexed pods, restartPolicy Never, backoffLimit 0,
#                     failurePolicy.maxRestarts = --restarts
#   trainjob          Kubeflow Trainer v2.2+ TrainJob + the ClusterTrainingRuntime it uses
#   pytorchjob        Kubeflow PyTorchJob kubeflow.org/v1 (Master + Worker)
# The preset gives the devices, the process count, tolerations, /dev/shm, EFA,
# hugepages and capabilities of one platform. Presets:
#   (listed below from python/primus_runner/data/k8s_presets.yaml)
#
# Options (before the first `--`):
#   --image IMAGE         the container image (it must hold primus-cli on PATH, or --entry)
#   --nodes N             pods, one per node
#   --preset NAME         the platform (above)
#   --name NAME           the job's name: an RFC 1035 label; pod hostnames
#                         <NAME>-node-0-<i> must fit in 63 characters
#   --as KIND             jobset (default), trainjob or pytorchjob
#   --namespace NS        metadata.namespace (default: kubectl's)
#   --restarts N          the restart budget: JobSet failurePolicy.maxRestarts,
#                         PyTorchJob runPolicy.backoffLimit (default 0)
#   --env K=V|FILE|NAME   a variable for the pods (repeatable; also direct's --env
#                         after `--` and config direct.env); a secret's value never
#                         enters the manifest: it becomes a secretKeyRef to
#                         --secret-name (default NAME-secrets), key = the variable name
#   --secret-name NAME    the Secret holding the secrets given with --env
#   --network MODE        host (hostNetwork, dnsPolicy ClusterFirstWithHostNet) or
#                         multus for AMD presets; pod for Trainium (eth0 + EFA)
#   --multus NAME[,NAME]  the Multus networks of --network multus, by name
#   --nic-resource R=N    a NIC resource to request (e.g. amd.com/nic=8, rdma/hca=1)
#   --efa N | --devices N | --nproc N   override the preset's EFA, device, process counts
#   --shm-size SIZE       the /dev/shm memory emptyDir's sizeLimit (preset: 64Gi)
#   --port PORT           MASTER_PORT of a JobSet (default 29500)
#   --entry CMD           the command the pods run instead of primus-cli
#   --privileged          a privileged container (never unless given)
#   --config FILE         configuration file whose direct.env goes into the pods
#   --dry-run             print the manifest; apply nothing (also `primus-cli --dry-run k8s`)
#   --debug               debug logging
#   -h, --help            this text
# Without --dry-run the manifest goes to `kubectl apply --server-side -f -` (stdin).
# Before that the user's variables get env check's verdict (a refused variable
# names its rule, exit 2) and the manifest the strict CRD and core schemas and the
# renderer's checks (exit 2 with the reason).
#
# Subcommands act on every object labelled primus-runner/name=NAME:
#   logs NAME [ARGS]  kubectl logs -l primus-runner/name=NAME --prefix (ARGS, e.g. -f, passed on)
#   stacks NAME       `primus-cli stacks --json` in every pod (kubectl exec), one summary
#   stop NAME         kubectl delete jobset (--as trainjob: trainjob,clustertrainingruntime;
#                     --as pytorchjob: pytorchjob) -l primus-runner/name=NAME
#   check FILE        the schema and rule checks on a manifest file
# Examples:
#   primus-cli k8s --image registry/primus:1 --nodes 4 --preset mi300x --name llama \
#       --env NCCL_DEBUG=INFO --dry-run -- direct -- train pretrain --config exp.yaml
#   primus-cli k8s --image registry/primus:1 --nodes 16 --preset trn1 --name llama \
#       --as trainjob --env HF_TOKEN -- -- train pretrain --config exp.yaml
#
# Exit codes: 0 ok; 1 kubectl or a file missing; 2 invalid arguments, a refused
# variable or manifest; else kubectl's own status.
set -euo pipefail

PRIMUS_K8S_RUNNER_DIR=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
# shellcheck source=runner/lib/common.sh
source "$PRIMUS_K8S_RUNNER_DIR/lib/common.sh"

PRIMUS_K8S_DRY_RUN=0
PRIMUS_K8S_ARGS=()   # everything for the renderer, unchanged

usage() {
  local line
  while IFS= read -r line; do
    if [[ $line == *'(listed below from '* ]]; then
      primus_python k8s presets
    else
      printf '%s\n' "$line"
    fi
  done < <(primus_usage "${BASH_SOURCE[0]}")
}

# kubectl_words VAR ARGS...: VAR = the kubectl argv Python chose for `k8s ARGS`.
kubectl_words() {
  local -n __primus_words=$1
  shift
  local rc=0
  mapfile -d '' -t __primus_words < <(primus_python k8s kubectl "$@")
  wait "$!" || rc=$? # bash >= 5.1: $! is the process substitution
  ((rc == 0)) || exit "$rc"
}

require_kubectl() {
  primus_require_command kubectl "Install kubectl (https://kubernetes.io/docs/tasks/tools/) and point it at the cluster, or use --dry-run to print the manifest."
}

run_subcommand() {
  local action=$1
  shift
  local -a words
  case $action in
    check)
      primus_python k8s check "$@"
      exit $? ;;
    logs | stop)
      [[ $# -ge 1 ]] || primus_bad_usage "primus-cli k8s" "missing NAME: primus-cli k8s $action NAME."
      kubectl_words words "$action" "$@"
      require_kubectl
      exec kubectl "${words[@]}" ;;
    stacks)
      stacks "$@"
      exit 0 ;;
  esac
}

# stacks NAME [--namespace NS]: the stacks of every pod of the job, merged.
stacks() {
  [[ $# -ge 1 ]] || primus_bad_usage "primus-cli k8s" "missing NAME: primus-cli k8s stacks NAME."
  local -a words namespace=()
  kubectl_words words pods "$@"
  require_kubectl
  local i
  for ((i = 0; i < ${#words[@]}; i++)); do
    [[ ${words[i]} != --namespace ]] || namespace=(--namespace "${words[i + 1]}")
  done
  local -a pods
  mapfile -t pods < <(kubectl "${words[@]}")
  ((${#pods[@]})) || primus_die "$PRIMUS_EXIT_MISSING" "no pod is labelled primus-runner/name=$1 (kubectl ${words[*]})."
  LOG_INFO "reading the stacks in ${#pods[@]} pod(s) of $1 (kubectl exec ... primus-cli stacks --json)."
  local pod out=""
  for pod in "${pods[@]}"; do
    out+=$(kubectl exec "${namespace[@]}" "${pod#pod/}" -- primus-cli stacks --json 2>/dev/null || true)$'\n'
  done
  primus_require_python
  printf '%s' "$out" |
    PYTHONPATH=$PRIMUS_ROOT/python "$PRIMUS_PYTHON" -m primus_runner.diagnose merge --stdin \
      --heading "stacks of $1 across ${#pods[@]} pod(s)"
}

main() {
  # `primus-cli --dry-run|--debug k8s ...` puts the global options first.
  while [[ ${1:-} == --dry-run || ${1:-} == --debug ]]; do
    [[ $1 == --debug ]] && export PRIMUS_LOG_LEVEL=DEBUG
    [[ $1 == --dry-run ]] && PRIMUS_K8S_DRY_RUN=1
    shift
  done
  case ${1:-} in
    logs | stacks | stop | check) run_subcommand "$@" ;;
  esac
  while (($#)); do
    case $1 in
      -h | --help) usage; exit 0 ;;
      --dry-run) PRIMUS_K8S_DRY_RUN=1 ;;
      --debug) export PRIMUS_LOG_LEVEL=DEBUG ;;
      --) PRIMUS_K8S_ARGS+=("$@"); break ;;
      *) PRIMUS_K8S_ARGS+=("$1") ;;
    esac
    shift
  done
  [[ ${PRIMUS_DRY_RUN:-0} != 1 ]] || PRIMUS_K8S_DRY_RUN=1
  if ((PRIMUS_K8S_DRY_RUN)); then
    primus_python k8s render "${PRIMUS_K8S_ARGS[@]}"
    exit $?
  fi
  require_kubectl
  local manifest rc=0
  manifest=$(primus_python k8s render "${PRIMUS_K8S_ARGS[@]}") || rc=$?
  ((rc == 0)) || exit "$rc"
  LOG_INFO "applying the manifest: kubectl apply --server-side -f -"
  exec kubectl apply --server-side -f - <<<"$manifest"
}

main "$@"
