# tests/bats/helpers/user_names.bash: the user's namespace is theirs.
# shellcheck disable=SC2034 # USER_NAMES and USER_NAMES_ENV are read by the suites that load this file
# A user who exports MODE, CONFIG or LOG_FILE (names of no reference) gets
# them on every rank byte for byte: the launcher's own globals are PRIMUS_
# names or __primus_ locals. These helpers build the list of names, the
# `env NAME=VALUE...` words that set each to a hostile value, and compare what
# tests/fixtures/workloads/print_env.py wrote on every rank.
# Needs REPO_ROOT (tests/bats/helpers/launcher.bash or the suite's own).

# The names users export most, whatever the launcher does with them, and the
# launcher's former globals of those names (they leaked into the ranks or
# overwrote the user's value before they were renamed).
USER_NAMES_COMMON=(MODE CONFIG LOG_FILE ACTION TIMEOUT NODES SCRIPT ARGS NAME DEBUG VERBOSE
  DIR FILE ROOT IMAGE OUTPUT WORKDIR CMD PORT BACKEND HOST TARGET WORKSPACE WORKLOAD LAUNCHER
  name dir file args mode
  OPT_CONFIG OPT_DEBUG OPT_DRY_RUN OPT_SINGLE OPT_SCRIPT OPT_LOG_FILE OPT_NUMA OPT_SILENT
  OPT_ACCELERATOR OPT_ALL_RANKS OPT_NEURON_CORES OPT_MODULE OPT_PYTHON OPT_SRUN_NATIVE
  CLI_PATCHES ALL_RANKS CONSOLE_FD LAUNCH_CMD TORCHRUN_CMD RANK_LOG_DIR RUNNER_DIR SELF GLOBAL
  DRY_RUN RUN_CMD FORWARDED ENV_NAMES PLAN CHILD WATCH_FD RANK_OUT WRITER_DONE
  hint value slices cmd worker_err need_torch recorder nproc log_file local_rank word quoted
  NUMA_NODE NUMA_CMD NUMA_RANK NUMA_CPUS NUMA_AFFINITY why answer
  ENTRY_MODE ENTRY_MODE_ARGS ENTRY_DRY_RUN SLURM_FLAGS MODE_ARGS ADDED_FLAGS REQUEUE SIM_NODES
  STEP_NODES STEP_TASKS NODE_TASKS BATCH_SCRIPT rc sig prev item w until handler rec)

# user_names_value NAME: the value NAME gets: quotes, $(), backticks, a glob,
# a backslash, a newline and trailing blanks (pwned: a file no rank may create).
user_names_value() {
  printf '%s' "v_$1 'sq' \"dq\" \$(touch pwned) \`touch pwned\` * ? [ab] \\ back
second line  "
}

# user_names_list: USER_NAMES = the common names, plus every name a launcher
# script under runner/ assigns (a global, a local, a loop or read variable)
# that is not the launcher's own (PRIMUS_/primus_ prefixed), not a variable of
# the registry (the references and the documented launcher names) and not one
# the shell, Python, the loader or a scheduler gives a meaning to.
user_names_list() {
  mapfile -t USER_NAMES < <("$REPO_ROOT/.venv/bin/python" - "$REPO_ROOT" "${USER_NAMES_COMMON[@]}" <<'EOF'
import json, pathlib, re, sys
root = pathlib.Path(sys.argv[1])
data = json.loads((root / "python/primus_runner/data/variables.json").read_text())["data"]
registry = {name for section in data["sections"] for name in section["variables"]}
runner = root / "runner"
files = [runner / "primus-cli", *runner.glob("*.sh"), *runner.glob("lib/*.sh"),
         *runner.glob("helpers/*.sh"), *runner.glob("helpers/envs/*.sh")]
assign = re.compile(
    r"(?:^|[\s;(&|{])(?:local\s+(?:-[a-zA-Z]+\s+)?|declare\s+-[a-zA-Z]+\s+|export\s+|readonly\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^]]*\])?\+?=")
binds = re.compile(r"\b(?:for|read(?:\s+-[a-zA-Z]+)*|mapfile(?:\s+-[a-zA-Z]+)*|printf\s+-v)\s+([A-Za-z_][A-Za-z0-9_]*)")
ignore = re.compile(
    r"(?:PRIMUS_|primus_|_primus|__primus|__PRIMUS|BASH|EPOCH|LC_|LD_|PYTHON|SLURM|OMPI_|PMIX_|PET_)"
    r"|(?:IFS|PATH|HOME|PWD|OLDPWD|SHELL|SHLVL|SHELLOPTS|OPTIND|OPTARG|REPLY|RANDOM|SECONDS|LINENO"
    r"|FUNCNAME|PIPESTATUS|UID|EUID|PPID|GROUPS|HOSTNAME|TERM|USER|LOGNAME|TMPDIR|TZ|LANG|_|JobState"
    r"|Restarts|in|do|then|x)$")
names = set(sys.argv[2:])
for path in files:
    for line in path.read_text(errors="replace").splitlines():
        if line.lstrip().startswith("#"):
            continue
        names.update(assign.findall(line))
        names.update(binds.findall(line))
for name in sorted(names):
    if name not in registry and not ignore.match(name):
        print(name)
EOF
  )
}

# user_names_env VAR: VAR = NAME=VALUE words for `env`, one per USER_NAMES
# (set for the launcher only, never in the test's own shell: bats has globals too).
user_names_env() {
  local -n __un_env=$1
  local name
  __un_env=()
  for name in "${USER_NAMES[@]}"; do
    __un_env+=("$name=$(user_names_value "$name")")
  done
}

# user_names_check DIR SUFFIX...: every name's file DIR/<NAME>.<SUFFIX> holds
# exactly the value exported; prints each difference and fails on any, or
# when a rank wrote nothing, or when something ran a $() or backtick.
user_names_check() {
  local dir=$1 name suffix want got bad=0
  shift
  for suffix in "$@"; do
    for name in "${USER_NAMES[@]}"; do
      if [[ ! -f $dir/$name.$suffix ]]; then
        echo "$name.$suffix: not written" >&2
        bad=1
        continue
      fi
      want=$(user_names_value "$name"; echo x)
      got=$(cat "$dir/$name.$suffix"; echo x)
      if [[ $got != "$want" ]]; then
        echo "$name.$suffix: the rank saw '${got%x}'" >&2
        bad=1
      fi
    done
  done
  if compgen -G "$dir/pwned" >/dev/null || [[ -e pwned ]]; then
    echo "a \$() or backtick of a value was run" >&2
    bad=1
  fi
  return "$bad"
}
