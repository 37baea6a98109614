#!/usr/bin/env bash
# bench/60_hooks_dataprep.sh: the hook runner (every gate off, the cost each
# launch pays), a hook printing 10,000 lines, and data preparation (fresh,
# reused, and a waiting rank finding complete data). Figures only.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PRIMUS_LOG_COLOR=0
hooks=$PRIMUS_ROOT/runner/helpers/execute_hooks.sh
python=$PRIMUS_ROOT/.venv/bin/python
[[ -x $python ]] || python=python3
export PYTHONPATH=$PRIMUS_ROOT/python

bench_median "execute_hooks.sh train pretrain (all gates off, 6 hooks)" "$BENCH_RUNS" \
  "$hooks" train pretrain --config "$PRIMUS_ROOT/examples/cpu_pretrain.yaml"
bench_median "execute_hooks.sh --dry-run train pretrain" "$BENCH_RUNS" \
  "$hooks" --dry-run train pretrain
mkdir -p "$work/big"
# shellcheck disable=SC2016 # the hook body is written literally
printf 'for ((i = 0; i < 10000; i++)); do echo "line $i"; done\n' >"$work/big/00_big.sh"
bench_median "one hook printing 10,000 lines" 5 "$hooks" --hooks-dir "$work/big" train pretrain

prepare() { rm -rf "$work/ws"; "$python" -m primus_runner data prepare --workspace "$work/ws"; }
bench_median "data prepare, bundled corpus, fresh (incl. python start)" 5 prepare
"$python" -m primus_runner data prepare --workspace "$work/ws" >/dev/null
bench_median "data prepare, complete data reused" 5 "$python" -m primus_runner data prepare --workspace "$work/ws"
bench_median "data wait, complete data present" 5 "$python" -m primus_runner data wait --workspace "$work/ws"
