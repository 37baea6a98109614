#!/usr/bin/env bats
# Hang diagnosis in container mode: the inner direct launcher's run monitor,
# py-spy from the mounted project .venv, inside a real podman
# container (tests/container/podman_env.bash); PRIMUS_HANG_* reach it through
# the PRIMUS_ prefix the container launcher forwards.

load helpers/podman  # and helpers/launcher; setup_file: podman ready, or a loud failure

setup() {
  podman_suite_setup
  NAME=phang$$x$RANDOM
}

teardown() {
  podman ps -a -q --filter "name=^$NAME-" | xargs -r podman rm -f >/dev/null 2>&1 || true
  launcher_teardown
}

@test "container: rank 1 hangs; the run monitor inside names it with no setting, prints the summary, stops the run with exit 86, no container left" {
  mkdir out
  rc=0
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) PRIMUS_HANG_ACTION=stop PRIMUS_KILL_GRACE=5 \
    timeout 180 "$PRIMUS_CLI" container --name "$NAME" -- --script "$WORKLOADS/hang_rank.py" -- "$PWD/out" hang \
    >launch.log 2>&1 || rc=$?
  cat launch.log
  [[ $rc -eq 86 ]]
  grep -q "SUSPECT rank 1: stuck_here (hang_rank.py:[0-9]*)" launch.log
  grep -q "rank 0: main (hang_rank.py:[0-9]*) <- all_reduce" launch.log
  grep -q "run monitor: hang: rank 1 (pid [0-9]*) in stuck_here (hang_rank.py:[0-9]*)" launch.log
  grep -q "PRIMUS_HANG_ACTION=stop: stopping the run" launch.log
  [[ -z $(podman ps -a --format '{{.Names}}' | grep "^$NAME-" || true) ]]
  run pgrep -f "hang_rank.py $PWD/out"
  [[ $status -ne 0 ]]
}
