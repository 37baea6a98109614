#!/usr/bin/env bash
# examples/demo.sh: `make demo`. Trains the built-in CPU workload, asked for by
# name (`--module primus_runner`), with two local processes (runner/primus-cli
# direct -> torchrun -> DDP on gloo), then checks what a user would: the loss
# fell and a checkpoint was written.
#   GPUS_PER_NODE (default 2) processes; PRIMUS_WORKSPACE (default ./output);
#   PRIMUS_WORKLOAD_PYTHON (default: the project's .venv, which `make setup`
#   fills with torch; your own stack would be your activated env's python3);
#   MASTER_PORT (default auto: a port free on this host, so another job on
#   the default port 1234 does not stop the demo).
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  # shellcheck source=runner/lib/usage.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../runner/lib/usage.sh"
  primus_usage "$0"
  exit 0
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export GPUS_PER_NODE=${GPUS_PER_NODE:-2}
export MASTER_PORT=${MASTER_PORT:-auto}
export PRIMUS_WORKLOAD_PYTHON=${PRIMUS_WORKLOAD_PYTHON:-$PWD/.venv/bin/python}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# GPUS_PER_NODE is set on purpose: a host without accelerators defaults to 1
# process, and the demo shows DDP across 2.
echo "demo [1/2] training the embedded CPU workload on $GPUS_PER_NODE processes (GPUS_PER_NODE=$GPUS_PER_NODE)"
status=0
runner/primus-cli direct --module primus_runner -- train pretrain --config examples/cpu_pretrain.yaml 2>&1 | tee "$out" || status=$?
if ((status != 0)); then
  echo "demo: the launch failed with exit code $status" >&2
  exit "$status"
fi

echo "demo [2/2] checking what a user would: the loss fell and a checkpoint was written"
losses=()
while read -r loss; do losses+=("$loss"); done < <(sed -n 's/.*\[train\] step [0-9]*\/[0-9]* loss \([0-9.]*\).*/\1/p' "$out")
checkpoint=$(sed -n 's/.*\[train\] checkpoint saved: \(.*\)$/\1/p' "$out" | tail -n 1)

if ((${#losses[@]} < 2)); then
  echo "demo: expected a loss line per step, found ${#losses[@]}" >&2
  exit 1
fi
first=${losses[0]} last=${losses[-1]}
if ! awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'; then
  echo "demo: loss did not fall (first $first, last $last)" >&2
  exit 1
fi
if [[ -z $checkpoint || ! -s $checkpoint ]]; then
  echo "demo: checkpoint missing ('$checkpoint')" >&2
  exit 1
fi
echo "demo OK: ${#losses[@]} steps on $GPUS_PER_NODE processes, loss $first -> $last, checkpoint $checkpoint"
