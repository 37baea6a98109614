# shellcheck shell=bash
# shellcheck disable=SC2034 # PRIMUS_WL_* are this library's results, read by the launcher
# runner/lib/workload.sh: what the direct launcher runs (docs/run-on-one-node.md "Entry points"):
# the workload's own interpreter, its script or module, and the run mode.
# Sourced; defines only primus_* names and never changes shell options.
#
# Two interpreters, never confused: the runner's helpers run with PRIMUS_PYTHON
# (runner/lib/common.sh); the workload runs with, in this order,
#   --python PATH  >  PRIMUS_WORKLOAD_PYTHON  >  config direct.python  >  python3 on PATH
# (PATH at launch time, so an activated venv or conda env wins), and torchrun is
# that interpreter's own (`<python> runner/helpers/torchrun_quiet.py`, which runs
# torch.distributed.run, or PRIMUS_TORCHRUN).
#
#   primus_workload_python_pick CLI_PYTHON    PRIMUS_WL_PYTHON, PRIMUS_WL_PYTHON_ORIGIN
#   primus_workload_probe_start               one `<python> -c` in the background
#                                             (after primus_workload_entry: it checks -m NAME)
#   primus_workload_probe_finish NEED_TORCH   PRIMUS_WL_EXE, PRIMUS_WL_TORCH_VERSION/PATH/FR;
#                                             a --module the interpreter cannot import -> exit 1
#   primus_workload_entry CLI_SCRIPT CLI_MODULE   PRIMUS_WL_ENTRY (script path or -m NAME),
#                                             PRIMUS_WL_ENTRY_ORIGIN (for the summary)
#   primus_workload_run_mode CLI_SINGLE FIRST_WORD   PRIMUS_WL_RUN_MODE, _ORIGIN
#   primus_workload_single_env                RANK/WORLD_SIZE/LOCAL_* (run mode single)
#   primus_workload_jax_coordinator           JAX_COORDINATOR_* as launch/jax_layer.py decides
# Every failure exits (1 missing, 2 invalid) with the culprit, how it was
# chosen and the fix (docs/exit-codes.md "The exit-code table"). What only the node that runs the
# workload can judge (its interpreter, torch, the script or module, the Primus
# checkout) is a note in a dry run instead (__primus_wl_fail): a dry run may
# run on a submit host, and it judges only what the run would judge there.

if [[ -n ${__PRIMUS_WORKLOAD_SH:-} ]]; then
  return 0
fi
__PRIMUS_WORKLOAD_SH=1

# shellcheck source=runner/lib/torchrun_words.sh
source "${BASH_SOURCE[0]%/*}/torchrun_words.sh"

PRIMUS_WL_PYTHON="" PRIMUS_WL_PYTHON_ORIGIN="" PRIMUS_WL_EXE=""
PRIMUS_WL_TORCH_VERSION="" PRIMUS_WL_TORCH_PATH="" PRIMUS_WL_TORCH_FR="" PRIMUS_WL_PROBE_FD=""
PRIMUS_WL_RUN_MODE="" PRIMUS_WL_RUN_MODE_ORIGIN=""
PRIMUS_WL_ENTRY=() PRIMUS_WL_ENTRY_ORIGIN="" PRIMUS_WL_ENTRY_FALLBACK=0 PRIMUS_WL_NO_PYTHON=0

readonly PRIMUS_WL_FIX_PYTHON="activate the environment that holds your training stack (source <venv>/bin/activate, conda activate <env>), or pass --python /path/to/python, or export PRIMUS_WORKLOAD_PYTHON=/path/to/python, or set direct.python in the config"

# __primus_wl_fail CODE MESSAGE: a workload check failed: exit CODE before
# anything starts; in a dry run (PRIMUS_DRY_RUN=1) a WARN note that the node
# checks it when the launch starts, and the dry run goes on (status 1).
__primus_wl_fail() {
  if [[ ${PRIMUS_DRY_RUN:-0} == 1 ]]; then
    LOG_WARN "dry run: checked on the node, not here (a launch there stops with exit $1 unless fixed): ${2/; nothing was started/}"
    return 1
  fi
  primus_die "$1" "$2"
}

# primus_workload_python_pick CLI_PYTHON: choose the workload interpreter.
primus_workload_python_pick() {
  local cli=$1 cfg=${PRIMUS_CONFIG[direct.python]-}
  if [[ -n $cli ]]; then
    PRIMUS_WL_PYTHON=$cli PRIMUS_WL_PYTHON_ORIGIN="--python"
  elif [[ -n ${PRIMUS_WORKLOAD_PYTHON:-} ]]; then
    PRIMUS_WL_PYTHON=$PRIMUS_WORKLOAD_PYTHON PRIMUS_WL_PYTHON_ORIGIN="PRIMUS_WORKLOAD_PYTHON"
  elif [[ -n $cfg ]]; then
    PRIMUS_WL_PYTHON=$cfg PRIMUS_WL_PYTHON_ORIGIN="config direct.python"
  else
    PRIMUS_WL_PYTHON=python3 PRIMUS_WL_PYTHON_ORIGIN="python3 on PATH"
  fi
  local found=""
  if [[ $PRIMUS_WL_PYTHON == */* ]]; then
    [[ -f $PRIMUS_WL_PYTHON && -x $PRIMUS_WL_PYTHON ]] && found=$PRIMUS_WL_PYTHON
  else
    # The PATH lookup without a subshell: `hash` fills BASH_CMDS (executables only).
    if hash -- "$PRIMUS_WL_PYTHON" 2>/dev/null; then found=${BASH_CMDS[$PRIMUS_WL_PYTHON]-}; fi
  fi
  if [[ -z $found ]]; then
    __primus_wl_fail "$PRIMUS_EXIT_MISSING" "workload interpreter '$PRIMUS_WL_PYTHON' (chosen by $PRIMUS_WL_PYTHON_ORIGIN) not found or not executable; nothing was started. Fix: $PRIMUS_WL_FIX_PYTHON." ||
      PRIMUS_WL_NO_PYTHON=1
    return 0
  fi
  PRIMUS_WL_PYTHON=$found
}

# The --module check, run by the workload interpreter: is NAME importable, as
# `python -m NAME` would find it? Asked of the interpreter's finders
# (sys.meta_path) directly: importlib.util's find_spec costs its imports
# (~8 ms of every launch). The parents are found with their finders (on the
# parent's __path__), not imported: a package's __init__
# may import torch (seconds). A package runs as its __main__ (python -m), so
# a package without one is refused too. A package that builds its __path__ at
# import (pkgutil.extend_path) is asked the ordinary way, importing its parents.
readonly __PRIMUS_WL_MODULE_FINDER='def primus_find_spec(name, path=None):
    import sys
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        spec = find(name, path) if find is not None else None
        if spec is not None:
            return spec
    return None
def primus_find_module(name):
    parts = name.split(".")
    try:
        spec = primus_find_spec(parts[0])
        for i in range(1, len(parts)):
            if spec is None or spec.submodule_search_locations is None:
                break
            spec = primus_find_spec(".".join(parts[:i + 1]), list(spec.submodule_search_locations))
        if spec is None or spec.name != name:
            import importlib.util as u
            spec = u.find_spec(name)
        return spec
    except Exception:
        return None
def primus_module_found(name):
    spec = primus_find_module(name)
    if spec is not None and spec.submodule_search_locations is not None:
        spec = primus_find_module(name + ".__main__")
    return spec is not None'

# The probe: the interpreter's sys.executable, and torch's version and package
# directory, found with the interpreter's finders and torch/version.py; importing torch
# itself would cost about a second of every launch (docs/run-on-one-node.md "Launch overhead"), and the
# file of the installed module primus.cli.main when that interpreter has one
# (found without importing the package: nothing of it runs), and whether that
# torch reads the flight recorder's TORCH_FR_* names (its distributed_c10d.py
# names TORCH_FR_BUFFER_SIZE: runner/lib/flight_recorder.sh picks the names).
readonly __PRIMUS_WL_PROBE=$__PRIMUS_WL_MODULE_FINDER'
import sys
v = p = ""
s = primus_find_spec("torch")
if s is not None and s.submodule_search_locations:
    p = list(s.submodule_search_locations)[0]
    v = "unknown"
    try:
        for line in open(p + "/version.py", encoding="utf-8"):
            if line.startswith("__version__"):
                v = line.split("=", 1)[1].strip().strip("\"'\''")
                break
    except OSError:
        pass
m = ""
s = primus_find_spec("primus")
if s is not None and s.submodule_search_locations:
    import os.path as o
    for d in s.submodule_search_locations:
        if o.isfile(o.join(d, "cli", "main.py")) and o.isfile(o.join(d, "cli", "__init__.py")):
            m = o.join(d, "cli", "main.py")
            break
f = "0"
if p:
    try:
        with open(p + "/distributed/distributed_c10d.py", "rb") as h:
            f = "1" if b"TORCH_FR_BUFFER_SIZE" in h.read() else "0"
    except OSError:
        pass
sys.stdout.write(sys.executable + "\0" + v + "\0" + p + "\0" + m + "\0" + f + "\0")
if len(sys.argv) > 1:
    sys.stdout.write(str(int(primus_module_found(sys.argv[1]))) + "\0")'

# primus_workload_probe_start: run the probe concurrently with the launch steps
# that follow (layers, hooks, env check); its answer is read by _finish.
# With a module entry (PRIMUS_WL_ENTRY=(-m NAME)), the probe also says whether
# NAME is importable.
primus_workload_probe_start() {
  ((PRIMUS_WL_NO_PYTHON == 0)) || return 0
  local -a names=() nice=()
  [[ ${PRIMUS_WL_ENTRY[0]-} != -m ]] || names=("${PRIMUS_WL_ENTRY[1]}")
  # Below the launch's own work (nice 10): its answer is read last, and on a
  # 2-core machine its Python start otherwise takes CPU from the layers and
  # hooks on the launch's path (-8 ms median of a dry run, interleaved A/B).
  ! command -v nice >/dev/null || nice=(nice -n 10)
  exec {PRIMUS_WL_PROBE_FD}< <(exec "${nice[@]}" "$PRIMUS_WL_PYTHON" -c "$__PRIMUS_WL_PROBE" "${names[@]}" 2>/dev/null </dev/null)
}

# primus_workload_probe_finish NEED_TORCH: read the probe; NEED_TORCH=1 (torchrun
# mode) and no torch → exit 1 before anything starts.
primus_workload_probe_finish() {
  local need=$1 exe="" version="" path="" module="" found="" fr=""
  if [[ -n $PRIMUS_WL_PROBE_FD ]]; then
    { primus_read -d '' exe && primus_read -d '' version && primus_read -d '' path &&
      primus_read -d '' module && primus_read -d '' fr && primus_read -d '' found; } <&"$PRIMUS_WL_PROBE_FD" || true
    exec {PRIMUS_WL_PROBE_FD}<&-
    PRIMUS_WL_PROBE_FD=""
  fi
  if [[ -z $exe ]]; then
    PRIMUS_WL_EXE=$PRIMUS_WL_PYTHON
    ((PRIMUS_WL_NO_PYTHON == 1)) ||
      __primus_wl_fail "$PRIMUS_EXIT_MISSING" "workload interpreter '$PRIMUS_WL_PYTHON' (chosen by $PRIMUS_WL_PYTHON_ORIGIN) does not run as Python ('$PRIMUS_WL_PYTHON -c ...' failed); nothing was started. Fix: $PRIMUS_WL_FIX_PYTHON." ||
      PRIMUS_WL_NO_PYTHON=1
    primus_workload_module_fallback_check ""
    return 0
  fi
  PRIMUS_WL_EXE=$exe PRIMUS_WL_TORCH_VERSION=$version PRIMUS_WL_TORCH_PATH=$path PRIMUS_WL_TORCH_FR=$fr
  primus_workload_module_fallback_check "$module"
  if [[ $need == 1 && -z $path ]]; then
    __primus_wl_fail "$PRIMUS_EXIT_MISSING" "workload interpreter $exe (chosen by $PRIMUS_WL_PYTHON_ORIGIN) cannot import torch, and run mode torchrun starts the workers with its torch.distributed.run ('$exe runner/helpers/torchrun_quiet.py'); nothing was started. Fix: pip install torch into that environment, or $PRIMUS_WL_FIX_PYTHON; a workload without torch runs with --single." ||
      true
  fi
  # (the default's fallback to an installed module that is missing was noted above)
  [[ ${PRIMUS_WL_ENTRY[0]-} != -m || $found == 1 || ($PRIMUS_WL_ENTRY_FALLBACK == 1 && -z $module) ]] ||
    __primus_wl_module_recheck
}

# __primus_wl_module_recheck: the probe did not find the module with the
# environment of its start; hooks, patches and --env may have changed
# PYTHONPATH since, so ask once more with the final environment (this costs a
# process only when the module was not found).
__primus_wl_module_recheck() {
  local module=${PRIMUS_WL_ENTRY[1]}
  if "$PRIMUS_WL_EXE" -c "$__PRIMUS_WL_MODULE_FINDER
import sys
sys.exit(0 if primus_module_found(sys.argv[1]) else 1)" "$module" </dev/null >/dev/null 2>&1; then
    return 0
  fi
  __primus_wl_fail "$PRIMUS_EXIT_MISSING" "module '$module' (--module / config direct.module) cannot be imported (or is a package without __main__.py) by the workload interpreter $PRIMUS_WL_EXE (chosen by $PRIMUS_WL_PYTHON_ORIGIN; PYTHONPATH=${PYTHONPATH:-<unset>}, working directory $PWD); nothing was started. Fix: install the package into that environment (pip install -e <your project>), run from the directory that holds it, add its parent to PYTHONPATH, or $PRIMUS_WL_FIX_PYTHON." || true
}

# __primus_wl_find_script PATH: sets __PRIMUS_WL_SCRIPT to PATH when it exists
# (relative: in the working directory, else under PRIMUS_ROOT); false otherwise.
__primus_wl_find_script() {
  __PRIMUS_WL_SCRIPT=""
  if [[ -f $1 ]]; then
    __PRIMUS_WL_SCRIPT=$1
  elif [[ $1 != /* && -f $PRIMUS_ROOT/$1 ]]; then
    __PRIMUS_WL_SCRIPT=$PRIMUS_ROOT/$1
  else
    return 1
  fi
}

# primus_workload_entry CLI_SCRIPT CLI_MODULE: --script > --module > config
# direct.module > config direct.script (default primus/cli/main.py). Nothing
# runs in place of a missing script (docs/run-on-one-node.md "The embedded default workload").
primus_workload_entry() {
  local script=$1 module=$2
  local how_fix="name what to run: --script path/to/train.py, or --module package.module (python -m; the built-in CPU workload is --module primus_runner)"
  if [[ -n $script && -n $module ]]; then
    primus_bad_usage "primus-cli direct" "--script '$script' and --module '$module' both name the workload; give one of them."
  fi
  if [[ -n $script ]]; then
    if [[ -f $script ]]; then
      __primus_wl_script_readable "$script" --script
    else
      __primus_wl_fail "$PRIMUS_EXIT_MISSING" "training script '$script' (--script) not found; nothing was started. Fix: pass an existing file, or $how_fix." || true
    fi
    PRIMUS_WL_ENTRY=("$script") PRIMUS_WL_ENTRY_ORIGIN="--script"
    return 0
  fi
  PRIMUS_WL_ENTRY_ORIGIN="--module"
  [[ -n $module ]] || module=${PRIMUS_CONFIG[direct.module]-} PRIMUS_WL_ENTRY_ORIGIN="config direct.module"
  if [[ -n $module ]]; then
    if [[ ! $module =~ ^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$ ]]; then
      primus_bad_usage "primus-cli direct" "--module / direct.module '$module' is not a Python module name; accepted: dotted identifiers such as mypkg.train."
    fi
    PRIMUS_WL_ENTRY=(-m "$module")
    if [[ $module == primus_runner || $module == primus_runner.* ]]; then
      # The embedded workload ships in the runner's own tree, not in the user's env.
      export PYTHONPATH="$PRIMUS_ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
    fi
    return 0
  fi
  script=${PRIMUS_CONFIG[direct.script]-}
  local origin="config direct.script"
  if [[ -z $script ]]; then
    script=primus/cli/main.py origin="the default"
  elif [[ $script == primus/cli/main.py ]]; then
    origin="the default (direct.script)"
  fi
  if ! __primus_wl_find_script "$script"; then
    # Upstream's fallback (runner/primus-cli-direct.sh:673-682): the default
    # script missing -> the installed module, checked by the probe (_finish).
    if [[ $script == primus/cli/main.py ]]; then
      PRIMUS_WL_ENTRY=(-m primus.cli.main) PRIMUS_WL_ENTRY_FALLBACK=1
      PRIMUS_WL_ENTRY_ORIGIN="installed module: primus/cli/main.py not in $PWD or $PRIMUS_ROOT"
      return 0
    fi
    __primus_wl_fail "$PRIMUS_EXIT_MISSING" "training script '$script' ($origin) not found in $PWD or $PRIMUS_ROOT; nothing was started. Fix: $how_fix." || true
    PRIMUS_WL_ENTRY=("$script") PRIMUS_WL_ENTRY_ORIGIN=$origin
    return 0
  fi
  __primus_wl_script_readable "$__PRIMUS_WL_SCRIPT" "$origin"
  PRIMUS_WL_ENTRY=("$__PRIMUS_WL_SCRIPT") PRIMUS_WL_ENTRY_ORIGIN=$origin
}

# __primus_wl_script_readable PATH ORIGIN: exit 1 before anything starts when
# this user may not read the script (the interpreter would fail on every rank
# with its own exit 2, which reads as the launcher's "bad arguments").
__primus_wl_script_readable() {
  [[ -r $1 ]] && return 0
  primus_die "$PRIMUS_EXIT_MISSING" "training script '$1' ($2) exists but is not readable by this user (uid $EUID); nothing was started. Fix: chmod a+r '$1' (or let the user that launches read it), or run as a user that may read it."
}

# primus_workload_module_fallback_check MODULE_FILE: the fallback to the
# installed primus.cli.main stands only when the workload's interpreter has
# that module (MODULE_FILE from the probe); else exit 1, nothing runs in its
# place (docs/run-on-one-node.md "The embedded default workload").
primus_workload_module_fallback_check() {
  [[ $PRIMUS_WL_ENTRY_FALLBACK == 1 ]] || return 0
  if [[ -z $1 ]]; then
    __primus_wl_fail "$PRIMUS_EXIT_MISSING" "training script 'primus/cli/main.py' (the default) not found in $PWD or $PRIMUS_ROOT, and the workload interpreter $PRIMUS_WL_EXE (chosen by $PRIMUS_WL_PYTHON_ORIGIN) has no installed module primus.cli.main to fall back to (upstream Primus runs 'python -m primus.cli.main' then); nothing was started. Fix: run from your Primus checkout, pip install Primus into that environment, or name what to run: --script path/to/train.py or --module package.module." ||
      PRIMUS_WL_ENTRY_ORIGIN="installed module primus.cli.main (as upstream Primus runs it when primus/cli/main.py is missing; not on this host)"
    return 0
  fi
  PRIMUS_WL_ENTRY_ORIGIN="installed module $1, because primus/cli/main.py is not in $PWD or $PRIMUS_ROOT"
}

# primus_workload_run_mode CLI_SINGLE FIRST_WORD: env RUN_MODE (a hook's
# env.RUN_MODE line, or an export) > --single > config direct.run_mode >
# auto (node_smoke → single, else torchrun); the order of the reference launcher
# (upstream AMD-AGI/Primus@fd1eeabb runner/primus-cli-direct.sh).
primus_workload_run_mode() {
  local cli=$1 first=$2 cfg=${PRIMUS_CONFIG[direct.run_mode]-}
  if [[ -n ${RUN_MODE:-} ]]; then
    PRIMUS_WL_RUN_MODE=$RUN_MODE PRIMUS_WL_RUN_MODE_ORIGIN="RUN_MODE"
  elif [[ $cli == 1 ]]; then
    PRIMUS_WL_RUN_MODE=single PRIMUS_WL_RUN_MODE_ORIGIN="--single"
  elif [[ -n $cfg ]]; then
    PRIMUS_WL_RUN_MODE=$cfg PRIMUS_WL_RUN_MODE_ORIGIN="config direct.run_mode"
  elif [[ $first == node_smoke ]]; then
    PRIMUS_WL_RUN_MODE=single PRIMUS_WL_RUN_MODE_ORIGIN="node_smoke default"
  else
    PRIMUS_WL_RUN_MODE=torchrun PRIMUS_WL_RUN_MODE_ORIGIN="default"
  fi
  if ! primus_is_one_of "$PRIMUS_WL_RUN_MODE" "${PRIMUS_RUN_MODES[@]}"; then
    local accepted
    printf -v accepted '%s, ' "${PRIMUS_RUN_MODES[@]}"
    primus_bad_usage "primus-cli direct" "run mode '$PRIMUS_WL_RUN_MODE' (from $PRIMUS_WL_RUN_MODE_ORIGIN) is not known; accepted: ${accepted%, }. Fix: direct.run_mode: torchrun|single, --single, or a hook line env.RUN_MODE=single."
  fi
  export RUN_MODE=$PRIMUS_WL_RUN_MODE
}

# primus_workload_jax_coordinator: the JAX coordinator for the run mode chosen
# (RUN_MODE, exported by primus_workload_run_mode): python/primus_runner/launch/
# jax_layer.py decides (request `jax-workload`: in torchrun mode the values only
# the JAX layer defaulted are dropped; in single mode with NNODES > 1
# JAX_COORDINATOR_IP/PORT/ADDRESS are filled in), the launch helper answers and
# this applies the records (primus_env_ask, runner/lib/env_origin.sh).
primus_workload_jax_coordinator() {
  primus_env_ask jax-workload launcher ||
    primus_die "$PRIMUS_EXIT_RUNTIME" "the JAX coordinator's decision could not run ($PRIMUS_ENV_ASK_FAILED); nothing was started."
}

# primus_workload_single_env: one process per node: the torchrun variables a
# workload reads, as torchrun would set them for one local process. Under
# srun-native the slurm entry already set them from the Slurm task ids (one
# worker per task, several per node): those stand.
primus_workload_single_env() {
  [[ ${PRIMUS_SRUN_NATIVE:-} == 1 ]] && return 0
  export RANK=$((10#${NODE_RANK:-0})) WORLD_SIZE=$((10#${NNODES:-1})) LOCAL_RANK=0 LOCAL_WORLD_SIZE=1
}

# primus_single_nproc_text VAR: the summary's process count in run mode single:
# 1, and why (the workload itself uses GPUS_PER_NODE's devices, if it wants).
primus_single_nproc_text() {
  local -n __primus_nproc=$1
  if [[ ${PRIMUS_SRUN_NATIVE:-} == 1 ]]; then
    __primus_nproc="1 per Slurm task (run mode single under srun-native, from $PRIMUS_WL_RUN_MODE_ORIGIN)"
  else
    __primus_nproc="1 (run mode single, from $PRIMUS_WL_RUN_MODE_ORIGIN: one process per node; GPUS_PER_NODE=${GPUS_PER_NODE:-?} devices are the workload's to use)"
  fi
}
