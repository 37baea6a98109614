"""slurm-step: the Slurm step one node's entry runs in, and what the entry does about it.

runner/primus-cli-slurm-entry.sh asks this once, before it starts the mode's
launcher, and applies the records (each field ended by a NUL byte: kind, name, value):

  set NAME VALUE      one of the entry's variables: PRIMUS_STEP_NODES,
                      PRIMUS_STEP_NODELIST, PRIMUS_STEP_NODE_ID, PRIMUS_STEP_TASKS,
                      PRIMUS_ENTRY_MODE
  export NAME VALUE   exported for the launcher (srun-native: RANK, LOCAL_RANK,
                      WORLD_SIZE, LOCAL_WORLD_SIZE, PRIMUS_SRUN_NATIVE)
  single              the mode's options start with --single (srun-native)
  info TEXT           a line for the entry's log
  refuse TEXT         the entry stops here, exit 2 (always the last record)

What it decides, in order: the step's shape (nodes, node list, this node's
index, tasks, this node's tasks: step variables before job variables, so a step
in a larger allocation maps only its own nodes); the mode (the one named, else
config slurm.mode, else container); a multi-node job's batch script running the
entry without srun is refused (only one node would start); several tasks on a
node are refused (several torchruns) unless srun-native is asked for (the
entry's flag, else PRIMUS_SLURM_SRUN_NATIVE, else config slurm.srun_native),
which makes each Slurm task one worker. The configuration is read only when
the mode or srun-native must come from it. :func:`plan` is pure.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping

from primus_runner.errors import UsageError
from primus_runner.facts import NODE_MODES, SRUN_NATIVE_OFF, SRUN_NATIVE_ON
from primus_runner.records import dataclass
from primus_runner.scheduler.variables import first_var, node_of_task, parse_tasks_per_node, tasks_on_node

Record = tuple[str, str, str]
ConfigGet = Callable[[str], str]

_COUNT = re.compile(r"[0-9]{1,9}", re.ASCII)
MODES = NODE_MODES  # the registry's (data/variables.yaml shared_facts node_modes)


class Refused(Exception):
    """The entry stops with this message (exit 2)."""


@dataclass(frozen=True)
class StepShape:
    nodes: int
    nodelist: str
    node_id: int
    tasks: int
    node_tasks: int | None  # this node's task count, None when the variables do not say


def _count(value: str | None) -> int | None:
    """A non-negative decimal integer (leading zeros allowed), else None."""
    if value is None or not _COUNT.fullmatch(value):
        return None
    return int(value, 10)


def _value(env: Mapping[str, str], *names: str) -> str:
    return first_var(env, *names)[0] or ""


def read_shape(env: Mapping[str, str], entry: str) -> StepShape:
    """The step's shape from Slurm's variables; Refused naming the culprit and the fix."""
    if not _value(env, "SLURM_JOB_ID"):
        raise Refused("not inside a Slurm job: SLURM_JOB_ID is unset. Start this script with srun on every "
                      f"node (srun --ntasks-per-node=1 {entry} direct -- ...), or use 'primus-cli slurm "
                      "srun|sbatch ...' which builds that call.")
    nodes_v = _value(env, "SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES")
    nodes = _count(nodes_v)
    if nodes is None or nodes < 1:
        raise Refused(f"the number of nodes of this Slurm step is '{nodes_v}' (from SLURM_STEP_NUM_NODES / "
                      "SLURM_NNODES / SLURM_JOB_NUM_NODES); accepted: an integer >= 1. Start the entry with "
                      "srun inside the allocation.")
    groups = _tasks_groups(env)
    node_id = _node_index(env, groups)
    if node_id is None or node_id >= nodes:
        seen = _value(env, "SLURM_NODEID", "SLURM_PROCID")
        raise Refused(f"this node's index is '{seen if node_id is None else node_id}' (from SLURM_NODEID, "
                      f"else SLURM_PROCID) but the step has {nodes} node(s); accepted: 0..{nodes - 1}. "
                      "Do not export SLURM_* variables by hand; let srun set them.")
    nodelist = _value(env, "SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST")
    if not nodelist:
        raise Refused("the node list of this Slurm step is empty (SLURM_STEP_NODELIST, SLURM_NODELIST and "
                      "SLURM_JOB_NODELIST are unset). Start the entry with srun inside the allocation.")
    tasks_v = _value(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS") or str(nodes)
    tasks = _count(tasks_v)
    if tasks is None or tasks < 1:
        raise Refused(f"the number of tasks of this step is '{tasks_v}' (SLURM_STEP_NUM_TASKS / "
                      "SLURM_NTASKS); accepted: an integer >= 1.")
    node_tasks = tasks_on_node(groups, node_id) if groups is not None else None
    return StepShape(nodes, nodelist, node_id, tasks, node_tasks)


def _tasks_groups(env: Mapping[str, str]) -> list[tuple[int, int]] | None:
    """Slurm's tasks-per-node groups (the rank mapping's parser), None when unset."""
    value, name = first_var(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
    if value is None:
        return None
    try:
        return parse_tasks_per_node(name, value)
    except UsageError as exc:
        raise Refused(f"{exc} Let srun set it.") from None


def _node_index(env: Mapping[str, str], groups: list[tuple[int, int]] | None) -> int | None:
    """SLURM_NODEID, else the node of task SLURM_PROCID (block distribution), else None."""
    node_id = _value(env, "SLURM_NODEID")
    if node_id:
        return _count(node_id)
    task = _count(_value(env, "SLURM_PROCID"))
    if task is None or groups is None:
        return task
    return node_of_task(groups, task)


def config_on(value: str) -> bool:
    """A configuration switch as its records carry it (booleans 1/0; 'true' when written as text)."""
    return value in ("1", "true")


def resolve_mode(mode: str, config: ConfigGet) -> str:
    """The mode named on the command line, else config slurm.mode, else container (the
    entry's rule, which `primus-cli slurm` asks too: launch/slurm_submit.py)."""
    if not mode:
        mode = config("slurm.mode") or "container"
        if mode not in MODES:
            raise Refused(f"config slurm.mode='{mode}' is not a mode; accepted: "
                          f"{', '.join(MODES)}. Fix slurm.mode or name the mode on the command line.")
    return mode


def refuse_batch_step(env: Mapping[str, str], entry: str, mode: str) -> None:
    """The batch script of a multi-node job running the entry itself (no srun) would start one node only."""
    if _value(env, "SLURM_STEP_ID", "SLURM_STEPID"):
        return
    job_nodes = _count(_value(env, "SLURM_JOB_NUM_NODES", "SLURM_NNODES") or "1")
    if job_nodes is None or job_nodes <= 1:
        return
    raise Refused(f"running in the batch script of a {job_nodes}-node job (SLURM_JOB_ID="
                  f"{_value(env, 'SLURM_JOB_ID')}, no SLURM_STEP_ID): only this node would start and the "
                  "others would never join the rendezvous. Start it on every node with: "
                  f"srun --ntasks-per-node=1 {entry} {mode} ...")


def srun_native_wanted(flag: str, env: Mapping[str, str], config: ConfigGet) -> bool:
    """The entry's --srun-native/--no-srun-native ('1'/'0'), else PRIMUS_SLURM_SRUN_NATIVE's
    words (registry shared_facts; env check warns about other values), else slurm.srun_native."""
    if flag in ("0", "1"):
        return flag == "1"
    word = env.get("PRIMUS_SLURM_SRUN_NATIVE", "")
    if word in SRUN_NATIVE_ON:
        return True
    if word in SRUN_NATIVE_OFF:
        return False
    return srun_native_configured(config)


def srun_native_configured(config: ConfigGet) -> bool:
    """config slurm.srun_native (default false)."""
    return config_on(config("slurm.srun_native"))


def _srun_native(env: Mapping[str, str], shape: StepShape, mode: str) -> list[Record]:
    """Each Slurm task one worker: the ids the launcher runs it with (direct --single)."""
    if mode != "direct":
        raise Refused(f"--srun-native runs the workload with 'direct --single'; mode '{mode}' is not "
                      "supported with it. Use mode direct, or one task per node.")
    proc_v = _value(env, "SLURM_PROCID")
    proc = _count(proc_v)
    if proc is None or proc >= shape.tasks:
        raise Refused(f"srun-native needs SLURM_PROCID in 0..{shape.tasks - 1} (seen '{proc_v}'); "
                      "start the entry with srun.")
    local_v = _value(env, "SLURM_LOCALID")
    if _count(local_v) is None:
        raise Refused(f"srun-native needs SLURM_LOCALID (seen '{local_v}'); start the entry with srun.")
    local_size = shape.node_tasks if shape.node_tasks is not None else _count(_value(env, "SLURM_NTASKS_PER_NODE"))
    if local_size is None or local_size < 1:
        raise Refused("srun-native cannot tell how many tasks run on this node (SLURM_STEP_TASKS_PER_NODE="
                      f"'{_value(env, 'SLURM_STEP_TASKS_PER_NODE')}'); give --ntasks-per-node=N.")
    ids = (("RANK", str(proc)), ("LOCAL_RANK", str(int(local_v, 10))), ("WORLD_SIZE", str(shape.tasks)),
           ("LOCAL_WORLD_SIZE", str(local_size)))
    # The launch helper maps LOCAL_RANK into a per-task GPU mask and the cluster
    # check counts workers, not nodes (PRIMUS_SRUN_NATIVE=1).
    out: list[Record] = [("export", name, value) for name, value in ids]
    out += [("export", "PRIMUS_SRUN_NATIVE", "1"), ("single", "", ""),
            ("info", "srun-native: worker " + " ".join(f"{n}={v}" for n, v in ids) + " (no torchrun)", "")]
    return out


def _tasks_per_node(env: Mapping[str, str], shape: StepShape, mode: str, flag: str,
                    config: ConfigGet) -> list[Record]:
    """One torchrun per node; several tasks on a node only as srun-native workers."""
    several = shape.tasks > shape.nodes or (shape.node_tasks is not None and shape.node_tasks > 1)
    if not several:
        return []
    if srun_native_wanted(flag, env, config):
        return _srun_native(env, shape, mode)
    spec = _value(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE") or "?"
    if _value(env, "SLURM_PROCID") in ("", "0"):
        raise Refused(f"this step runs {shape.tasks} tasks on {shape.nodes} node(s) (SLURM_STEP_TASKS_PER_NODE="
                      f"{spec}): every task would start its own torchrun and the job would hang or "
                      "oversubscribe the GPUs. Fix: one task per node, e.g. srun --ntasks-per-node=1 "
                      "(primus-cli slurm adds it unless you give --ntasks-per-node or --ntasks); torchrun "
                      "then starts GPUS_PER_NODE workers per node. Or, to run one worker per Slurm task "
                      "without torchrun, add --srun-native (or slurm.srun_native: true).")
    raise Refused(f"refused: {shape.tasks} tasks on {shape.nodes} node(s); see task 0's message "
                  "(--ntasks-per-node=1, or --srun-native).")


def plan(env: Mapping[str, str], entry: str, mode: str, srun_native: str, config: ConfigGet) -> list[Record]:
    """The records for one node's entry: ENV (its environment), ENTRY (its path, for the
    fixes it names), MODE ('' when not named), SRUN_NATIVE ('1', '0' or '' when not
    given) and CONFIG (dotted key -> value; asked only when needed). A refusal is the
    last record, after what was decided before it."""
    out: list[Record] = []
    try:
        shape = read_shape(env, entry)
        out += [("set", "PRIMUS_STEP_NODES", str(shape.nodes)), ("set", "PRIMUS_STEP_NODELIST", shape.nodelist),
                ("set", "PRIMUS_STEP_NODE_ID", str(shape.node_id)), ("set", "PRIMUS_STEP_TASKS", str(shape.tasks))]
        mode = resolve_mode(mode, config)
        out.append(("set", "PRIMUS_ENTRY_MODE", mode))
        refuse_batch_step(env, entry, mode)
        out += _tasks_per_node(env, shape, mode, srun_native, config)
    except Refused as refused:
        out.append(("refuse", str(refused), ""))
    return out


USAGE = (f"usage: python3 -m primus_runner slurm-step --entry PATH [--mode {'|'.join(MODES)}] "
         "[--srun-native 0|1] [--config FILE]")


def _options(argv: list[str]) -> dict[str, str]:
    """--entry, --mode, --srun-native and --config, each with its value ('' when not given)."""
    options = {"--entry": "", "--mode": "", "--srun-native": "", "--config": ""}
    i = 0
    while i < len(argv):
        if argv[i] not in options or i + 1 >= len(argv):
            raise UsageError(f"unknown or incomplete argument '{argv[i]}'; {USAGE}")
        options[argv[i]] = argv[i + 1]
        i += 2
    if options["--srun-native"] not in ("", "0", "1"):
        raise UsageError(f"--srun-native '{options['--srun-native']}' is not 0 or 1; {USAGE}")
    return options


def main(argv: list[str]) -> int:
    """Print the records for this process's environment (see the module text)."""
    import os

    from primus_runner.shellfmt import nul_records

    if argv[:1] in (["-h"], ["--help"]):
        print((__doc__ or "").strip() + "\n\n" + USAGE)
        return 0
    options = _options(argv)
    loaded: dict[str, str] = {}

    def config(key: str) -> str:
        if not loaded:
            from primus_runner import log
            from primus_runner.config import files as cfgmod

            cfg = cfgmod.load(options["--config"] or None)
            for warning in cfg.warnings:
                log.warn(warning)
            loaded.update((k, v) for kind, k, v in cfgmod.config_records(cfg) if kind == "cfg")
            loaded.setdefault("", "")  # loaded, even when empty
        return loaded.get(key, "")

    records = plan(os.environ, options["--entry"] or "primus-cli-slurm-entry.sh", options["--mode"],
                   options["--srun-native"], config)
    sys.stdout.buffer.write(nul_records(records))
    return 0
