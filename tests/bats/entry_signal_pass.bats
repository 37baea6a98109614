#!/usr/bin/env bats
# The Slurm entry passes a signal on to its launcher (runner/lib/slurm_stop.sh
# primus_entry_pass) through primus_signal_origin (runner/lib/signal_origin.sh),
# which returns the origin and the sender text by nameref. A caller's local of the
# same name as the callee's nameref made bash print "circular name reference" on
# every signal under Slurm; this runs the real pair with the Python answer fixed.

setup() {
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  TEST_DIR=$(mktemp -d)
}

teardown() {
  rm -rf -- "$TEST_DIR"
}

@test "the entry passes a signal on with no bash warning (the sender comes back by nameref)" {
  run bash -c '
    source "$1/runner/lib/signal_origin.sh"
    source "$1/runner/lib/slurm_stop.sh"
    # The decision is Python'"'"'s (monitor/origin.py); here its answer is fixed: sent to this process alone.
    primus_supervise_helper() { printf "direct\tsender: pid 42\n"; }
    declare -A PRIMUS_REGISTRY_DEFAULTS=([PRIMUS_SIGNAL_WINDOW_MS]=500)
    PRIMUS_SIGNAL_DIR=$2
    sleep 30 & PRIMUS_ENTRY_CHILD=$!
    primus_entry_pass TERM "${EPOCHREALTIME//[.,]/}"
    wait "$PRIMUS_ENTRY_CHILD"; echo "child status $?"
    [[ -e $2/forwarded.TERM ]] && echo "forwarded noted"
  ' _ "$ROOT" "$TEST_DIR"
  [[ $status -eq 0 ]]
  [[ $output != *warning* ]] || { echo "$output"; false; }
  [[ $output == *"child status 143"* ]]
  [[ $output == *"forwarded noted"* ]]
}
