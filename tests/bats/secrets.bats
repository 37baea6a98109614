#!/usr/bin/env bats
# shellcheck disable=SC2030,SC2031,SC2016 # bats runs each test in a subshell; hook bodies are single-quoted
# Secret hygiene end to end: no secret value on any argv the launcher
# creates, in any file it writes, or in what it prints; the job still sees it.
# The live Slurm part (srun, sbatch, scontrol write batch_script) is in
# tests/slurm/slurm_live.bats.
bats_require_minimum_version 1.5.0

load helpers/launcher
load helpers/secrets

setup() {
  launcher_setup
  secrets_init
  export PROBE_DIR=$TEST_DIR/probe
  mkdir -p "$PROBE_DIR" hooks
  # A hook's env. line, a config direct.env item, an export and --env: every way.
  printf 'echo "env.DB_PASSWORD=%s"\n' "$S_HOOK" >hooks/00_secret.sh
  printf 'direct:\n  env: [DATABRICKS_TOKEN=%s]\n' "$S_CONFIG" >cfg.yaml
  export HF_TOKEN=$S_EXPORT PRIMUS_HOOKS_DIR=$PWD/hooks
  secrets_more_init
}

teardown() {
  launcher_teardown
}

# wait_and_scan PID: wait until the probe started, scan every argv, let it finish.
wait_and_scan() {
  local pid=$1
  if ! wait_for "$PROBE_DIR/started-0" 120; then
    touch "$PROBE_DIR/go"
    wait "$pid" || true
    cat "$TEST_DIR/console"
    fail "the probe never started"
  fi
  LEAKS=$(scan_cmdlines)
  touch "$PROBE_DIR/go"
  RC=0
  wait "$pid" || RC=$?
}

# launch_and_scan MODE-OPTION...: start a launch of the probe with the secrets,
# scan every process's argv while it runs, then let it finish.
launch_and_scan() {
  "$PRIMUS_CLI" direct --config cfg.yaml --env "WANDB_API_KEY=$S_CLI" "${NEW_ENV_ARGS[@]}" "$@" \
    --script "$WORKLOADS/secret_probe.py" -- \
    "$(sha HF_TOKEN "$S_EXPORT")" "$(sha WANDB_API_KEY "$S_CLI")" \
    "$(sha DATABRICKS_TOKEN "$S_CONFIG")" "$(sha DB_PASSWORD "$S_HOOK")" "${NEW_PROBE_ARGS[@]}" \
    >"$TEST_DIR/console" 2>&1 &
  local pid=$!
  if ! wait_for "$PROBE_DIR/started-0" 90; then
    touch "$PROBE_DIR/go"
    wait "$pid" || true
    cat "$TEST_DIR/console"
    fail "the probe never started"
  fi
  LEAKS=$(scan_cmdlines)
  touch "$PROBE_DIR/go"
  RC=0
  wait "$pid" || RC=$?
}

assert_clean_run() {
  [[ -z $LEAKS ]] || fail "secret on a command line while the job ran: $LEAKS"
  ((RC == 0)) || { cat "$TEST_DIR/console"; fail "launch exit $RC"; }
  # The job saw every value, byte for byte.
  run cat "$PROBE_DIR/seen-0"
  assert_output "$(printf '%s\n' 'HF_TOKEN ok' 'WANDB_API_KEY ok' 'DATABRICKS_TOKEN ok' 'DB_PASSWORD ok')
$NEW_SEEN"
  # Nothing the launcher printed or wrote holds one: console, workspace, logs.
  local files
  files=$(grep_secrets "$TEST_DIR/console" "$PRIMUS_WORKSPACE" "$PROBE_DIR")
  [[ -z $files ]] || fail "secret value in: $files"
  run grep -c 'WANDB_API_KEY=\*\*\*\*' "$TEST_DIR/console"
  assert_success
  run grep -c 'AWS_SECRET_ACCESS_KEY=\*\*\*\*' "$TEST_DIR/console"
  assert_success
}

@test "direct torchrun: a secret given every way is on no argv, reaches the job, and is in no file" {
  launch_and_scan
  assert_clean_run
  # The rank logs exist and were searched too.
  run find "$PRIMUS_WORKSPACE/logs" -type f
  assert_output --partial ".log"
}

@test "direct --single: a secret given every way is on no argv, reaches the job, and is in no file" {
  launch_and_scan --single
  assert_clean_run
}

@test "the launcher restarts itself without the value: --env NAME on its own argv" {
  run "$PRIMUS_CLI" direct --dry-run --env "WANDB_API_KEY=$S_CLI" --module primus_runner -- preflight
  assert_success
  refute_output --partial "$S_CLI"
  assert_output --partial "env WANDB_API_KEY=****"
}

@test "a failing hook's stdout and stderr are masked, also its env. lines and an earlier hook's secrets" {
  printf 'echo "token=$HF_TOKEN"; echo "pw=$DB_PASSWORD" >&2; echo "env.X_API_KEY=%s"; exit 4\n' "$S_OUTER" \
    >hooks/01_fail.sh
  run --separate-stderr "$PRIMUS_CLI" direct --module primus_runner -- train pretrain
  assert_failure 3
  local all="$output $stderr"
  [[ $all == *"token=****"* && $all == *"pw=****"* && $all == *"env.X_API_KEY=****"* ]] ||
    fail "not masked: $all"
  [[ $all != *"$S_EXPORT"* && $all != *"$S_HOOK"* && $all != *"$S_OUTER"* ]] || fail "secret shown: $all"
  [[ -z $(grep_secrets "$PRIMUS_WORKSPACE") ]] || fail "secret in the log: $(grep_secrets "$PRIMUS_WORKSPACE")"
}

@test "slurm sbatch: the value goes through sbatch's environment, never into the batch script" {
  run "$REPO_ROOT/runner/primus-cli" slurm --dry-run sbatch -N 2 -- direct --env "WANDB_API_KEY=$S_CLI" \
    --module primus_runner -- preflight
  assert_success
  refute_output --partial "$S_CLI"
  assert_output --partial "direct --env WANDB_API_KEY --module primus_runner -- preflight"
  assert_output --partial "secrets WANDB_API_KEY (given with --env) travel in sbatch's environment (--export)"
  # A --export list gets the name; NONE cannot carry it (exit 2 with the fix).
  run "$REPO_ROOT/runner/primus-cli" slurm --dry-run sbatch -N 2 --export=PATH,HOME -- direct \
    --env "WANDB_API_KEY=$S_CLI" --module primus_runner -- preflight
  assert_success
  assert_output --partial "--export=PATH\\,HOME\\,WANDB_API_KEY"
  run "$REPO_ROOT/runner/primus-cli" slurm --dry-run srun -N 2 --export=NONE -- direct \
    --env "WANDB_API_KEY=$S_CLI" -- preflight
  assert_failure 2
  assert_output --partial "--export=NONE cannot carry WANDB_API_KEY"
  refute_output --partial "$S_CLI"
  # a credential-shaped name and a PRIMUS_SECRET_NAMES name go the same way.
  run "$REPO_ROOT/runner/primus-cli" slurm --dry-run sbatch -N 2 -- direct "${NEW_ENV_ARGS[@]}" \
    --env "CORP_SIGNING_KEY=$S_USER" --module primus_runner -- preflight
  assert_success
  refute_output --partial "$S_AWS"
  refute_output --partial "$S_USER"
  assert_output --partial "direct --env AWS_SECRET_ACCESS_KEY --env CORP_SIGNING_KEY --module"
}

@test "--env NAME takes the exported value; a name that is not set is a clean error" {
  run "$PRIMUS_CLI" direct --dry-run --env HF_TOKEN --module primus_runner -- preflight
  assert_success
  assert_output --partial "env HF_TOKEN=****"
  refute_output --partial "$S_EXPORT"
  run "$PRIMUS_CLI" direct --dry-run --env NOT_SET_ANYWHERE_TOKEN --module primus_runner -- preflight
  assert_failure 2
  assert_output --partial "NOT_SET_ANYWHERE_TOKEN"
}

@test "container (real podman): a secret given every way is on no argv on the host or in the container, reaches the job, in no file" {
  # shellcheck source=tests/container/podman_env.bash
  source "$REPO_ROOT/tests/container/podman_env.bash"
  podman_test_env "$REPO_ROOT"
  podman_test_image "$REPO_ROOT"
  podman_test_check
  cp "$PODMAN_TEST_CONFIG" "$HOME/.primus.yaml"
  export PRIMUS_ACCELERATOR=cpu
  # The container sees the working directory (mounted): the probe directory lives there.
  export PROBE_DIR=$PWD/probe
  mkdir -p "$PROBE_DIR"
  "$PRIMUS_CLI" container --config cfg.yaml --env "WANDB_API_KEY=$S_CLI" --env "PROBE_DIR=$PROBE_DIR" \
    --env "PRIMUS_HOOKS_DIR=$PRIMUS_HOOKS_DIR" "${NEW_ENV_ARGS[@]}" --env GITHUB_PAT --env CORP_SIGNING_KEY \
    -- --env "INNER_TOKEN=$S_OUTER" --single \
    --script "$WORKLOADS/secret_probe.py" -- \
    "$(sha HF_TOKEN "$S_EXPORT")" "$(sha WANDB_API_KEY "$S_CLI")" \
    "$(sha DATABRICKS_TOKEN "$S_CONFIG")" "$(sha DB_PASSWORD "$S_HOOK")" "$(sha INNER_TOKEN "$S_OUTER")" \
    "${NEW_PROBE_ARGS[@]}" \
    >"$TEST_DIR/console" 2>&1 &
  wait_and_scan $!
  [[ -z $LEAKS ]] || fail "secret on a command line while the container ran: $LEAKS"
  ((RC == 0)) || { cat "$TEST_DIR/console"; fail "launch exit $RC"; }
  run cat "$PROBE_DIR/seen-0"
  assert_output "$(printf '%s\n' 'HF_TOKEN ok' 'WANDB_API_KEY ok' 'DATABRICKS_TOKEN ok' 'DB_PASSWORD ok' 'INNER_TOKEN ok')
$NEW_SEEN"
  local files
  files=$(grep_secrets "$TEST_DIR/console" "$PRIMUS_WORKSPACE" "$PROBE_DIR")
  [[ -z $files ]] || fail "secret value in: $files"
}

# masked_dry_run [OPTION...]: a dry run whose workload words are the secret
# values of every channel (and $EXTRA_VALUE when set); the printed command
# must show each one masked.
masked_dry_run() {
  printf 'echo env.SITE_KEYRING=ring-8832\n' >hooks/01_custom.sh
  export INHERITED_PASSWORD=inh-pw-4410
  local -a values=("$S_CONFIG" "$S_HOOK" "$S_EXPORT" inh-pw-4410 cli-pw-7713 ring-8832 ${EXTRA_VALUE:+"$EXTRA_VALUE"})
  run "$PRIMUS_CLI" direct --dry-run --single --config cfg.yaml --env "OTHER_PASSWORD=cli-pw-7713" "$@" \
    --script "$WORKLOADS/argv.py" -- "${values[@]}" plain-word
  assert_success
  local value masked
  for value in "${values[@]}"; do
    [[ $output != *"$value"* ]] || fail "'$value' printed in clear: $output"
    masked+="**** "
  done
  assert_output --partial "argv.py ${masked}plain-word"
}

@test "dry run: the launcher's secret names are the helper's list of the inherited ones plus the noted ones: every channel masked" {
  # No VENV_ACTIVATE: no listing of the launcher's variables at all. Inherited
  # (HF_TOKEN, INHERITED_PASSWORD), --env (moved to the environment), config
  # direct.env and a hook's env. line (noted), PRIMUS_SECRET_NAMES (inherited).
  PRIMUS_SECRET_NAMES='*_KEYRING' masked_dry_run
}

@test "dry run: PRIMUS_SECRET_NAMES given by --env (not the helper's value): the launcher lists its variables again" {
  # LOCAL_KEYRING is inherited and secret only by the --env value.
  export LOCAL_KEYRING=loc-ring-3301
  EXTRA_VALUE=loc-ring-3301 masked_dry_run --env 'PRIMUS_SECRET_NAMES=*_KEYRING'
}

@test "dry run: after VENV_ACTIVATE, the launcher lists its variables once: the script's secrets and every later value masked" {
  printf 'export VENV_ACCESS_TOKEN=venv-tok-5521\n' >"$TEST_DIR/activate"
  EXTRA_VALUE=venv-tok-5521 VENV_ACTIVATE=$TEST_DIR/activate PRIMUS_SECRET_NAMES='*_KEYRING' masked_dry_run
}
