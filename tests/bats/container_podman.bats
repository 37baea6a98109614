#!/usr/bin/env bats
# shellcheck disable=SC2016,SC2030,SC2031 # bats runs each test in a subshell; single-quoted $() is literal test data
# primus-cli container against a real runtime: podman + runc, a test-local
# podman configuration and a test image (tests/container/podman_env.bash).
# These tests fail, never skip, when podman cannot run a container.

load helpers/podman  # and helpers/launcher; setup_file: podman ready, or a loud failure

setup() {
  podman_suite_setup
}

teardown() {
  # A test that failed half-way leaves no launcher or container running.
  if [[ -n ${LAUNCHER_PID:-} ]] && kill -0 "$LAUNCHER_PID" 2>/dev/null; then
    kill -TERM "$LAUNCHER_PID" 2>/dev/null || true
    wait "$LAUNCHER_PID" 2>/dev/null || true
  fi
  [[ -z ${SIG_NAME:-} ]] || podman ps -a -q --filter "name=^$SIG_NAME-" | xargs -r podman rm -f >/dev/null 2>&1 || true
  launcher_teardown
}

# wait_lines FILE N: until FILE has N lines (120 s at most): readiness, not a
# guessed time (a loaded host starts a container slowly).
wait_lines() {
  local i
  for ((i = 0; i < 1200; i++)); do
    [[ -f $1 && $(wc -l <"$1") -ge $2 ]] && return 0
    sleep 0.1
  done
  echo "$1 never had $2 line(s); launcher output:" >&2
  cat launch.log >&2
  return 1
}

# wait_ready PIDFILE: until the workload wrote its pid (its handlers are set).
wait_ready() {
  local i
  for ((i = 0; i < 1200; i++)); do
    [[ -s $1 ]] && return 0
    sleep 0.1
  done
  echo "the workload never wrote $1; launcher output:" >&2
  cat launch.log >&2
  return 1
}

# ours NAME_PREFIX: containers (any state) whose name starts with the prefix.
ours() {
  podman ps -a --format '{{.Names}}' | grep "^$1" || true
}

@test "the embedded workload trains in a container: 2 processes, loss falls, checkpoint written" {
  # A name of this run only: a second copy of the suite may run at once (tests/stress.sh).
  SIG_NAME=ptrain$$x$RANDOM
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) PRIMUS_TRAIN_STEPS=12 \
    run "$PRIMUS_CLI" container --name "$SIG_NAME" -- --module primus_runner -- train pretrain --config "$REPO_ROOT/examples/cpu_pretrain.yaml"
  assert_success
  assert_output --partial "podman run --rm --name $SIG_NAME-"
  assert_output --partial "--ulimit host"
  assert_output --partial "nproc_per_node 2"
  first=$(grep -m1 -o 'step 1/[0-9]* loss [0-9.]*' <<<"$output" | awk '{print $NF}')
  last=$(grep -o 'step [0-9]*/[0-9]* loss [0-9.]*' <<<"$output" | tail -n1 | awk '{print $NF}')
  [[ -n $first && -n $last ]]
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'
  assert_output --partial "checkpoint saved"
  [[ -z $(ours "$SIG_NAME-") ]]
}

@test "values and secrets reach the job byte for byte, every way; printed lines show ****" {
  mkdir out
  tricky=$'it\'s "quoted" $(touch pwned) `id` ; * \n second line'
  printf '%s\n' "FILE_VAL='from file \$(x)'" 'FILE_TOKEN=file-secret-4' >vals.env
  printf 'INNER_FILE_VAL=inner file\n' >inner.env
  printf 'direct:\n  run_mode: single\n  env: ["CFG_VAL=from config", "CFG_TOKEN=cfg-secret-3"]\n' >cfg.yaml
  HF_TOKEN=hf-secret-0 PRIMUS_TRICKY=$tricky NCCL_DEBUG=WARN \
    run "$PRIMUS_CLI" container --config cfg.yaml --env "CLI_VAL=$tricky" --env CLI_TOKEN=cli-secret-1 \
      --env vals.env -- --env INNER_TOKEN=inner-secret-2 --env "INNER_VAL=$tricky" --env inner.env \
      --script "$WORKLOADS/print_env.py" -- "$PWD/out" HF_TOKEN CLI_TOKEN INNER_TOKEN CFG_TOKEN \
      FILE_TOKEN PRIMUS_TRICKY CLI_VAL INNER_VAL FILE_VAL INNER_FILE_VAL CFG_VAL NCCL_DEBUG PRIMUS_PYTHON
  assert_success
  for n in 0 1 2 3 4; do refute_output --partial "secret-$n"; done
  assert_output --partial "****"
  [[ $(<out/HF_TOKEN.0) == hf-secret-0 ]]
  [[ $(<out/CLI_TOKEN.0) == cli-secret-1 ]]
  [[ $(<out/INNER_TOKEN.0) == inner-secret-2 ]]
  [[ $(<out/CFG_TOKEN.0) == cfg-secret-3 ]]
  [[ $(<out/FILE_TOKEN.0) == file-secret-4 ]]
  [[ $(<out/PRIMUS_TRICKY.0) == "$tricky" ]]
  [[ $(<out/CLI_VAL.0) == "$tricky" ]]
  [[ $(<out/INNER_VAL.0) == "$tricky" ]]
  [[ $(<out/FILE_VAL.0) == 'from file $(x)' ]]
  [[ $(<out/INNER_FILE_VAL.0) == 'inner file' ]]
  # --config settings arrive: direct.run_mode single ran the script without torchrun, direct.env set.
  [[ $(<out/CFG_VAL.0) == 'from config' ]]
  [[ $(<out/NCCL_DEBUG.0) == WARN ]]
  [[ $(<out/PRIMUS_PYTHON.0) == python3 ]]
  [[ ! -e pwned ]]
  # Secrets are never on the runtime's argv: the command names them only.
  grep -q -- '--env CLI_TOKEN --env' <<<"$output"
}

@test "the families the references use reach the job from the host without --env; a name outside them is named, not forwarded" {
  mkdir out
  TORCH_NCCL_SOME_NEW_KNOB='a "b" c' NVTE_SOME_NEW_KNOB=0 HSA_SOME_NEW_KNOB=1 FI_SOME_NEW_KNOB=warn \
    NEURON_RT_SOME_NEW_KNOB=2 TE_SOME_NEW_KNOB=9 \
    run "$PRIMUS_CLI" container -- --single --script "$WORKLOADS/print_env.py" -- "$PWD/out" \
      TORCH_NCCL_SOME_NEW_KNOB NVTE_SOME_NEW_KNOB HSA_SOME_NEW_KNOB FI_SOME_NEW_KNOB NEURON_RT_SOME_NEW_KNOB \
      TE_SOME_NEW_KNOB
  assert_success
  [[ $(<out/TORCH_NCCL_SOME_NEW_KNOB.0) == 'a "b" c' ]]
  [[ $(<out/NVTE_SOME_NEW_KNOB.0) == 0 && $(<out/HSA_SOME_NEW_KNOB.0) == 1 ]]
  [[ $(<out/FI_SOME_NEW_KNOB.0) == warn && $(<out/NEURON_RT_SOME_NEW_KNOB.0) == 2 ]]
  [[ $(<out/TE_SOME_NEW_KNOB.0) == "<unset>" ]]
  assert_output --partial "the registry does not know"
  assert_output --regexp "do not reach the container.*: TE_SOME_NEW_KNOB\. Fix"
}

@test "the user's namespace: every exported name forwarded with --env NAME reaches both ranks byte for byte" {
  load helpers/user_names
  mkdir out
  user_names_list
  user_names_env USER_NAMES_ENV
  local -a forward=() name
  for name in "${USER_NAMES[@]}"; do forward+=(--env "$name"); done
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) run env "${USER_NAMES_ENV[@]}" \
    "$PRIMUS_CLI" container "${forward[@]}" -- --script "$WORKLOADS/print_env.py" -- "$PWD/out" "${USER_NAMES[@]}"
  assert_success
  assert_output --partial "nproc_per_node 2"
  user_names_check out 0 1
}

@test "words after -- and --env values that are not UTF-8 reach the job byte for byte (the runtime's JSON would make them U+FFFD)" {
  mkdir out
  export PRIMUS_T_ARGV_OUT=$PWD/out/argv PRIMUS_T_ARGV_ENV="OUTER_BYTES INNER_BYTES PRIMUS_T_BYTES"
  PRIMUS_T_BYTES=$'host \xff\xfe' run "$PRIMUS_CLI" container --env $'OUTER_BYTES=caf\xe9' --env PRIMUS_T_ARGV_OUT \
    --env PRIMUS_T_ARGV_ENV -- --env $'INNER_BYTES=\xff\xfe\\x41' --single --script "$WORKLOADS/argv.py" \
    -- $'\xff\xfe' $'caf\xe9' 'plain \x41 %b'
  assert_success
  assert_output --partial "5 value(s) that are not UTF-8 travel escaped in PRIMUS_CONTAINER_BYTES"
  cmp out/argv.0 <(printf '\377\376\0caf\351\0plain \\x41 %%b\0')
  cmp out/argv.OUTER_BYTES.0 <(printf 'caf\351')
  cmp out/argv.INNER_BYTES.0 <(printf '\377\376\\x41')
  cmp out/argv.PRIMUS_T_BYTES.0 <(printf 'host \377\376')
}

@test "SIGTERM stops the container within the grace time: exit 143, no container of ours left" {
  mkdir out
  SIG_NAME=psig$$x$RANDOM
  PRIMUS_KILL_GRACE=5 "$PRIMUS_CLI" container --name "$SIG_NAME" -- --single --script "$WORKLOADS/sleeper.py" \
    -- "$PWD/out" marker >launch.log 2>&1 &
  LAUNCHER_PID=$!
  wait_ready out/pid.0
  [[ -n $(ours "$SIG_NAME-") ]]
  kill -TERM "$LAUNCHER_PID"
  rc=0
  wait "$LAUNCHER_PID" || rc=$?
  cat launch.log
  [[ $rc -eq 143 ]]
  [[ -z $(ours "$SIG_NAME-") ]]
  # Nothing of the workload runs any more (pid.0 is a pid of the container's
  # namespace, so look for the sleeper by its arguments).
  refute pgrep -f "sleeper.py $PWD/out"
}

@test "USR1 and USR2 to the container launcher reach the workload once; it keeps running and exits 0" {
  mkdir out
  SIG_NAME=pusr$$x$RANDOM
  "$PRIMUS_CLI" container --name "$SIG_NAME" -- --single --script "$WORKLOADS/signal_marker.py" \
    -- "$PWD/out" --stop-file "$PWD/out/finish" >launch.log 2>&1 &
  LAUNCHER_PID=$!
  wait_ready out/pid.0
  kill -USR1 "$LAUNCHER_PID"
  wait_lines out/SIGUSR1.0 1
  kill -USR2 "$LAUNCHER_PID"
  wait_lines out/SIGUSR2.0 1
  process_running "$LAUNCHER_PID"
  : >out/finish
  rc=0
  wait "$LAUNCHER_PID" || rc=$?
  cat launch.log
  [[ $rc -eq 0 ]]
  [[ $(wc -l <out/SIGUSR1.0) -eq 1 && $(wc -l <out/SIGUSR2.0) -eq 1 ]]
  [[ ! -e out/SIGTERM.0 ]]
  grep -q "SIGUSR1 (sender: unknown.*): sent once to container $SIG_NAME-" launch.log
  [[ -z $(ours "$SIG_NAME-") ]]
}

@test "kill -TERM -- -PGID of the container launcher: the workload gets SIGTERM once, exit 143, no container left" {
  mkdir out
  SIG_NAME=ppgid$$x$RANDOM
  PRIMUS_KILL_GRACE=5 setsid "$PRIMUS_CLI" container --name "$SIG_NAME" -- --single \
    --script "$WORKLOADS/signal_marker.py" -- "$PWD/out" --term-delay 0.5 >launch.log 2>&1 &
  LAUNCHER_PID=$!
  wait_ready out/pid.0
  kill -TERM -- "-$LAUNCHER_PID"
  rc=0
  wait "$LAUNCHER_PID" || rc=$?
  cat launch.log
  [[ $rc -eq 143 ]]
  [[ $(wc -l <out/SIGTERM.0) -eq 1 ]]
  [[ -z $(ours "$SIG_NAME-") ]]
}

# gone_within SECONDS PREFIX OUT: until no container named PREFIX* is left and
# no rank of OUT (signal_marker.py OUT, seen from the host) runs; false after SECONDS.
gone_within() {
  local deadline=$((SECONDS + $1))
  while ((SECONDS < deadline)); do
    [[ -z $(ours "$2") ]] && ! pgrep -f "signal_marker.py $3" >/dev/null && return 0
    sleep 0.2
  done
  return 1
}

@test "kill -9 of the container launcher: within the grace no container of ours and no rank is left" {
  mkdir out
  SIG_NAME=pkill$$x$RANDOM
  PRIMUS_KILL_GRACE=8 GPUS_PER_NODE=2 MASTER_PORT=$(free_port) "$PRIMUS_CLI" container --name "$SIG_NAME" -- \
    --script "$WORKLOADS/signal_marker.py" -- "$PWD/out" >launch.log 2>&1 &
  LAUNCHER_PID=$!
  for _ in $(seq 1 300); do [[ -s out/pid.0 && -s out/pid.1 ]] && break; sleep 0.2; done
  [[ -s out/pid.0 && -s out/pid.1 ]] || { cat launch.log; false; }
  [[ -n $(ours "$SIG_NAME-") ]]
  pgrep -f "signal_marker.py $PWD/out" >/dev/null
  kill -KILL "$LAUNCHER_PID"
  wait "$LAUNCHER_PID" || true
  gone_within 8 "$SIG_NAME-" "$PWD/out" || { cat launch.log; podman ps -a; pgrep -af signal_marker; false; }
  # The ranks were stopped through the inner direct (SIGTERM each, once), not cut.
  [[ $(wc -l <out/SIGTERM.0) -eq 1 && $(wc -l <out/SIGTERM.1) -eq 1 ]]
  for _ in $(seq 1 50); do grep -q "stop: container launcher pid $LAUNCHER_PID died" launch.log && break; sleep 0.1; done
  cat launch.log
  grep -q "stop: container launcher pid $LAUNCHER_PID died; container $SIG_NAME-[^ ]* stopped within the 8 s grace and removed" launch.log
}

@test "SIGINT to a container launcher a script started in the background (SIGINT ignored on entry): exit 130, nothing left" {
  mkdir out
  SIG_NAME=pint$$x$RANDOM
  # The premise: a non-interactive shell starts `cmd &` with SIGINT ignored (SigIgn bit 2).
  mask=$(bash -c 'grep "^SigIgn:" /proc/self/status & wait' | awk '{print $2}')
  ((16#${mask: -1} & 2))
  PRIMUS_KILL_GRACE=8 JOB_PID_FILE=$PWD/job.pid bash -c '"$@" & echo "$!" >"$JOB_PID_FILE"; wait "$!"' _ \
    "$PRIMUS_CLI" container --name "$SIG_NAME" -- --single --script "$WORKLOADS/signal_marker.py" \
    -- "$PWD/out" --duration 120 >launch.log 2>&1 &
  job=$!
  for _ in $(seq 1 300); do [[ -s out/pid.0 ]] && break; sleep 0.2; done
  [[ -s out/pid.0 ]] || { cat launch.log; false; }
  LAUNCHER_PID=$(<job.pid)
  kill -INT "$LAUNCHER_PID"
  rc=0
  wait "$job" || rc=$?
  cat launch.log
  [[ $rc -eq 130 ]]
  grep -q "received SIGINT: stopping container $SIG_NAME-" launch.log
  [[ $(wc -l <out/SIGTERM.0) -eq 1 ]]
  [[ -z $(ours "$SIG_NAME-") ]]
  refute pgrep -f "signal_marker.py $PWD/out"
}

@test "--clean removes only the containers this launcher created, never a foreign one" {
  podman create --name "foreign-$BATS_TEST_NUMBER-$$" "$PODMAN_TEST_IMAGE" true >/dev/null
  # A name of this run only: a second copy of the suite may run at once (tests/stress.sh).
  local name=pclean$$x$RANDOM
  podman create --name "$name-stale" --label io.primus-runner.managed=1 \
    --label io.primus-runner.name="$name" "$PODMAN_TEST_IMAGE" true >/dev/null
  run "$PRIMUS_CLI" container --name "$name" --clean
  status_clean=$status
  remaining=$(podman ps -a --format '{{.Names}}')
  podman rm -f "foreign-$BATS_TEST_NUMBER-$$" >/dev/null
  [[ $status_clean -eq 0 ]]
  assert_output --partial "removing 1 container(s) of ours"
  grep -qx "foreign-$BATS_TEST_NUMBER-$$" <<<"$remaining"
  refute grep -q "$name-stale" <<<"$remaining"
}

@test "an image that is not local and cannot be pulled is one clear error (exit 1)" {
  run "$PRIMUS_CLI" container --image localhost/primus-no-such-image:0 -- -- preflight
  assert_failure 1
  assert_output --partial "container image 'localhost/primus-no-such-image:0' is not on this host and could not be pulled"
}

@test "the host user's ~/.primus.yaml reaches the inner direct (mounted read-only)" {
  mkdir out
  printf 'direct:\n  run_mode: single\n  env: ["USER_CFG_VAL=from ~/.primus.yaml"]\n' >>"$HOME/.primus.yaml"
  run "$PRIMUS_CLI" container -- --script "$WORKLOADS/print_env.py" -- "$PWD/out" USER_CFG_VAL
  assert_success
  assert_output --partial "user config $HOME/.primus.yaml mounted read-only"
  [[ $(<out/USER_CFG_VAL.0) == 'from ~/.primus.yaml' ]]
}

@test "the container's exit code is the launcher's" {
  run "$PRIMUS_CLI" container -- --single --script "$WORKLOADS/exit_with.py" -- 7
  assert_failure 7
  # The workspace (outside the working directory) is mounted: the log is on the host.
  assert_output --partial "--volume $PRIMUS_WORKSPACE:$PRIMUS_WORKSPACE"
  compgen -G "$PRIMUS_WORKSPACE/logs/primus-*.log" >/dev/null
}

@test "live output through the container: 2 ranks, console piped, each line within 1 s (median) on the console and in the log" {
  load helpers/live
  unset PYTHONUNBUFFERED
  SIG_NAME=plive$$x$RANDOM
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) live_measure "$PWD/live.log" \
    "$PRIMUS_CLI" container --name "$SIG_NAME" -- --log_file "$PWD/live.log" --script "$WORKLOADS/live_lines.py"
  [[ $LIVE_RC == 0 ]]
  live_assert console.lags 60
  live_assert log.lags 60
}

# A plain image as a user brings one: its Python has only the standard library
# and the user's own venv with torch and numpy (tests/container/podman_env.bash,
# podman_bare_image): no psutil, no PyYAML. The inner launch reads the user's
# ~/.primus.yaml without PyYAML, the run monitor runs on that Python and names a
# rank that a kill -STOP (inside the container) stopped, SIGTERM to the launcher
# stops the run cleanly, and no bash warning nor Python traceback reaches the console.
@test "bare image (standard library + the user's torch venv, no psutil, no PyYAML): monitored, a stopped rank named, stopped cleanly, no warning" {
  podman_bare_image "$REPO_ROOT"
  cp "$PODMAN_BARE_CONFIG" "$HOME/.primus.yaml"
  printf 'direct:\n  env: ["BARE_CFG=read without PyYAML"]\n' >>"$HOME/.primus.yaml"
  mkdir out
  SIG_NAME=pbare$$x$RANDOM
  GPUS_PER_NODE=2 MASTER_PORT=$(free_port) STEP_S=0.5 PRIMUS_KILL_GRACE=5 \
    "$PRIMUS_CLI" container --name "$SIG_NAME" -- --script "$WORKLOADS/monitor_cases.py" -- "$PWD/out" stoppable 600 \
    >launch.log 2>&1 &
  LAUNCHER_PID=$!
  wait_ready out/ready.1
  # The container's Python really lacks both (the image's PATH: the user's venv first).
  name=$(ours "$SIG_NAME-")
  run podman exec "$name" python3 -c 'import importlib.util as u, torch, numpy; print(u.find_spec("psutil"), u.find_spec("yaml"))'
  assert_success
  assert_output "None None"
  # The user's config, read inside without PyYAML, reached the rank.
  run podman exec "$name" sh -c 'tr "\0" "\n" </proc/"$1"/environ' _ "$(<out/ready.1)"
  assert_output --partial "BARE_CFG=read without PyYAML"
  # ready.1 holds the rank's pid in the container's namespace: stop it there.
  podman exec "$name" kill -STOP "$(<out/ready.1)"
  poll_until 60 grep -q "run monitor: stopped: rank 1 (pid $(<out/ready.1)) stopped" launch.log ||
    { cat launch.log; false; }
  podman exec "$name" kill -CONT "$(<out/ready.1)"
  kill -TERM "$LAUNCHER_PID"
  rc=0
  wait "$LAUNCHER_PID" || rc=$?
  cat launch.log
  [[ $rc -eq 143 ]]
  grep -q "run monitor: stopped: rank 1" launch.log
  grep -q "stop: SIGTERM, .* stopped within the 5 s grace, none killed; exit status 143" launch.log
  run grep -nE "warning:|Traceback|ModuleNotFoundError|run monitor: the run monitor \(pid" launch.log
  assert_failure
  [[ -z $(ours "$SIG_NAME-") ]]
}
