# tests/bats/helpers/secrets.bash: secret values and the /proc/*/cmdline scan
# shared by secrets.bats and the live Slurm suite.
# shellcheck disable=SC2034 # variables defined here are used by the suites that load this file

# secrets_init: one fresh value per way a secret can be given (random, so a
# match can only come from this test).
secrets_init() {
  S_EXPORT=hf_export_${RANDOM}${RANDOM}x      # exported by the user (HF_TOKEN)
  S_CLI=wb_cli_${RANDOM}${RANDOM}x            # --env WANDB_API_KEY=... on the command line
  S_CONFIG=db_cfg_${RANDOM}${RANDOM}x         # config direct.env DATABRICKS_TOKEN=...
  S_HOOK=pw_hook_${RANDOM}${RANDOM}x          # a hook's env.DB_PASSWORD=... line
  S_OUTER=gh_outer_${RANDOM}${RANDOM}x        # --env given at the outer level (slurm)
  # credential-shaped names beyond the suffixes, and a user's own name.
  S_AWS=aws_cli_${RANDOM}${RANDOM}x           # --env AWS_SECRET_ACCESS_KEY=...
  S_PAT=gh_pat_${RANDOM}${RANDOM}x            # exported GITHUB_PAT
  S_USER=corp_key_${RANDOM}${RANDOM}x         # exported CORP_SIGNING_KEY, named by PRIMUS_SECRET_NAMES
  SECRET_VALUES=("$S_EXPORT" "$S_CLI" "$S_CONFIG" "$S_HOOK" "$S_OUTER" "$S_AWS" "$S_PAT" "$S_USER")
}

# secrets_more_init: export the issue-27 secrets and set NEW_ENV_ARGS (the
# --env word) and NEW_PROBE_ARGS / NEW_SEEN (the probe's arguments and lines).
secrets_more_init() {
  export GITHUB_PAT=$S_PAT CORP_SIGNING_KEY=$S_USER PRIMUS_SECRET_NAMES="corp_*_key"
  NEW_ENV_ARGS=(--env "AWS_SECRET_ACCESS_KEY=$S_AWS")
  NEW_PROBE_ARGS=("$(sha AWS_SECRET_ACCESS_KEY "$S_AWS")" "$(sha GITHUB_PAT "$S_PAT")"
    "$(sha CORP_SIGNING_KEY "$S_USER")")
  NEW_SEEN=$(printf '%s\n' 'AWS_SECRET_ACCESS_KEY ok' 'GITHUB_PAT ok' 'CORP_SIGNING_KEY ok')
}

# sha NAME VALUE: NAME=sha256(VALUE), the probe's argument.
sha() {
  printf '%s=%s' "$1" "$(printf '%s' "$2" | sha256sum | cut -d' ' -f1)"
}

# scan_cmdlines: print 'PID: cmdline' for every process whose argv holds one
# of SECRET_VALUES (this scanner's own processes excepted). Prints nothing when clean.
scan_cmdlines() {
  local f pid cmd value
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    [[ $pid != "$$" && $pid != "$BASHPID" ]] || continue
    cmd=$(tr '\0' ' ' <"$f" 2>/dev/null) || continue
    for value in "${SECRET_VALUES[@]}"; do
      if [[ $cmd == *"$value"* ]]; then
        echo "$pid: $cmd"
      fi
    done
  done
}

# grep_secrets PATH...: print every file under PATH holding a secret value.
grep_secrets() {
  local value
  for value in "${SECRET_VALUES[@]}"; do
    grep -rlF -- "$value" "$@" 2>/dev/null || true
  done
}

# wait_for FILE [SECONDS]: until FILE exists (default 60 s).
wait_for() {
  local n=0 limit=$((${2:-60} * 10))
  until [[ -e $1 ]]; do
    ((n++ < limit)) || return 1
    sleep 0.1
  done
}
