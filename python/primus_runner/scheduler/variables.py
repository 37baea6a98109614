"""What each scheduler's variables say (docs/configuration.md "Detection and rank mapping"): Slurm, OpenMPI/PMIx and
Kubernetes PyTorchJob values with the variable each came from, which scheduler
a job runs under, Slurm's tasks-per-node format and its job-derived rendezvous
port; and the Resolver that weighs them against exported values, config and
the reference defaults. primus_runner.cluster.ranks.resolve puts them together.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from primus_runner.errors import RuleRefusal, UsageError
from primus_runner.facts import DISTRIBUTED_DEFAULTS
from primus_runner.grammar import is_ip_literal

# Reference section 1's fallbacks: registry shared_facts distributed_defaults.
BUILTIN_DEFAULTS = dict(DISTRIBUTED_DEFAULTS)

DECIMAL = re.compile(r"^[0-9]+$")
_TASKS_ITEM = re.compile(r"^([0-9]+)(?:\(x([0-9]+)\))?$")


def get_var(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def first_var(env: Mapping[str, str], *names: str) -> tuple[str | None, str]:
    """(value, name) of the first set variable among ``names``; (None, "") when none is."""
    for name in names:
        value = get_var(env, name)
        if value is not None:
            return value, name
    return None, ""


def where_text(origin: str) -> str:
    return " (exported)" if origin == "exported" else f" (from {origin})"


def parse_int(name: str, value: str, low: int, high: int | None = None, origin: str = "") -> int:
    """A decimal integer (leading zeros allowed: ``08`` is 8) within [low, high]."""
    where = where_text(origin) if origin and origin != name else ""
    accepted = f"{low}..{high}" if high is not None else f"an integer >= {low}"
    if not DECIMAL.match(value):
        raise UsageError(f"{name}='{value}'{where} is not a decimal integer; accepted: "
                         f"{accepted}. Fix: export {name}=<{accepted}> or unset it.")
    number = int(value, 10)
    if number < low or (high is not None and number > high):
        raise UsageError(f"{name}={value}{where} is out of range; accepted: {accepted}. "
                         f"Fix: export {name} with a value in that range.")
    return number


def contradiction(name: str, user: str, origin: str, value: str) -> RuleRefusal:
    """Rule scheduler_contradiction: an exported value the scheduler's variables contradict."""
    fix = f"unset {name} to use the scheduler's value, or change the job so that both agree"
    return RuleRefusal("scheduler_contradiction",
                       (name, user, f"contradicts the scheduler: {origin}={value}", fix),
                       text=f"{name}={user} (exported) contradicts the scheduler: {origin}={value}. Fix: {fix}.")


def _environment(name: str, value: str, message: str, fix: str) -> RuleRefusal:
    """Rule scheduler_environment: the scheduler's own variables disagree or say too little."""
    return RuleRefusal("scheduler_environment", (name, value, message, fix),
                       text=f"{name}={value} {message}. Fix: {fix}.")


def short_name(host: str) -> str:
    """The part before the first dot, lower-cased (``n001.cluster`` -> ``n001``)."""
    if is_ip_literal(host):
        return host
    return host.split(".", 1)[0].lower()


def parse_tasks_per_node(name: str, value: str) -> list[tuple[int, int]]:
    """Slurm's ``2(x3),1`` -> [(2, 3), (1, 1)] (tasks, repeat)."""
    out: list[tuple[int, int]] = []
    for item in value.split(","):
        match = _TASKS_ITEM.match(item.strip())
        if not match or int(match.group(1)) < 1 or (match.group(2) and int(match.group(2)) < 1):
            raise UsageError(f"{name}='{value}' is malformed at '{item}'; accepted: Slurm's "
                             "format like '8', '2(x4)' or '2(x3),1'.")
        out.append((int(match.group(1)), int(match.group(2) or 1)))
    return out


def tasks_on_node(groups: list[tuple[int, int]], node: int) -> int | None:
    seen = 0
    for tasks, repeat in groups:
        if node < seen + repeat:
            return tasks
        seen += repeat
    return None


def node_of_task(groups: list[tuple[int, int]], task: int) -> int | None:
    """Node index of global task ``task`` with Slurm's block distribution."""
    node = 0
    first_task = 0
    for tasks, repeat in groups:
        block = tasks * repeat
        if task < first_task + block:
            return node + (task - first_task) // tasks
        first_task += block
        node += repeat
    return None


class Resolver:
    """Collects each value with where it came from, then validates."""

    def __init__(self, env: Mapping[str, str], defaults: Mapping[str, str] | None) -> None:
        self.env = env
        self.defaults = {k: str(v) for k, v in (defaults or {}).items() if v is not None and str(v) != ""}
        self.values: dict[str, str] = {}
        self.origins: dict[str, str] = {}
        self.notes: list[str] = []

    # -- sources -----------------------------------------------------------
    def user(self, name: str) -> str | None:
        return get_var(self.env, name)

    def take(self, name: str, sched_value: str | None, sched_origin: str | None,
             compare: Callable[[str, str], bool] | None = None) -> None:
        """Set ``name`` from the user, else the scheduler, else config, else built-in."""
        user = self.user(name)
        if user is not None:
            if sched_value is not None:
                same = compare(user, sched_value) if compare else user == sched_value
                if not same:
                    raise contradiction(name, user, sched_origin or "scheduler", sched_value)
            self.values[name], self.origins[name] = user, "exported"
        elif sched_value is not None:
            self.values[name], self.origins[name] = sched_value, sched_origin or "scheduler"
        elif name in self.defaults:
            self.values[name], self.origins[name] = self.defaults[name], "config"
        else:
            self.values[name], self.origins[name] = BUILTIN_DEFAULTS[name], "default"

    def number(self, name: str, low: int, high: int | None = None) -> int:
        return parse_int(name, self.values[name], low, high, self.origins[name])


def same_number(a: str, b: str) -> bool:
    if DECIMAL.match(a) and DECIMAL.match(b):
        return int(a, 10) == int(b, 10)
    return a == b


def same_host(user: str, first: str) -> bool:
    return user == first or short_name(user) == short_name(first) or is_ip_literal(user)


def slurm_values(r: Resolver) -> tuple[dict[str, tuple[str, str]], int, str | None]:
    """Scheduler values (value, origin) from Slurm; also tasks on this node and the node list."""
    env = r.env
    values: dict[str, tuple[str, str]] = {}
    nnodes_v, nnodes_n = first_var(env, "SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES")
    list_v, list_n = first_var(env, "SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST")
    from primus_runner.scheduler import hostlist

    try:
        listed = hostlist.count(list_v) if list_v else None
    except hostlist.HostlistError as exc:
        # Name the variable the list came from (the user cannot see which one).
        raise hostlist.HostlistError(f"{list_n}: {exc}") from None
    if nnodes_v is not None:
        nnodes = parse_int(nnodes_n, nnodes_v, 1)
        step_level = (nnodes_n == "SLURM_STEP_NUM_NODES") == (list_n == "SLURM_STEP_NODELIST")
        if listed is not None and step_level and listed != nnodes:
            raise _environment(nnodes_n, nnodes_v, f"disagrees with {list_n}='{(list_v or '')[:120]}', "
                               f"which names {listed} hosts: the Slurm environment is inconsistent",
                               "run the entry through srun in the allocation, or unset the stale variable")
        values["NNODES"] = (str(nnodes), nnodes_n)
    elif listed is not None:
        nnodes = listed
        values["NNODES"] = (str(listed), list_n)
    else:
        nnodes = None

    tasks_v, tasks_n = first_var(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
                              "SLURM_NTASKS_PER_NODE")
    groups = parse_tasks_per_node(tasks_n, tasks_v) if tasks_v else None

    node_id = get_var(env, "SLURM_NODEID")
    proc_id = get_var(env, "SLURM_PROCID")
    node_rank: int | None = None
    if node_id is not None:
        node_rank = parse_int("SLURM_NODEID", node_id, 0)
        values["NODE_RANK"] = (str(node_rank), "SLURM_NODEID")
    elif proc_id is not None:
        task = parse_int("SLURM_PROCID", proc_id, 0)
        if groups is not None:
            node_rank = node_of_task(groups, task)
            if node_rank is None:
                raise _environment("SLURM_PROCID", proc_id, f"is beyond the tasks that {tasks_n}='{tasks_v}' "
                                   "describes", "run through srun")
            origin = f"SLURM_PROCID with {tasks_n}"
        else:
            node_rank, origin = task, "SLURM_PROCID"
        values["NODE_RANK"] = (str(node_rank), origin)
    elif nnodes is not None and nnodes > 1 and r.user("NODE_RANK") is None:
        job = get_var(env, "SLURM_JOB_ID") or ""
        reason = (f"inside Slurm job {job} of {nnodes} nodes but neither SLURM_NODEID nor SLURM_PROCID "
                  "is set, so this node's rank is unknown (running in the batch script or salloc "
                  "shell, not in a step)")
        fix = "start the entry with srun (one task per node), or export NODE_RANK"
        raise RuleRefusal("scheduler_environment", ("SLURM_JOB_ID", job, reason, fix),
                          text=f"{reason}. Fix: {fix}.")

    tasks_here = 1
    if groups is not None and node_rank is not None:
        found = tasks_on_node(groups, node_rank)
        if found is not None:
            tasks_here = found

    first_v = get_var(env, "PRIMUS_SLURM_FIRST_HOST")
    if first_v is not None:
        values["MASTER_ADDR"] = (first_v, "PRIMUS_SLURM_FIRST_HOST (scontrol show hostnames)")
    elif list_v:
        try:
            first = hostlist.first_host(list_v)
        except hostlist.HostlistError as exc:
            # Name the variable the list came from (the user cannot see which one).
            raise hostlist.HostlistError(f"{list_n}: {exc}") from None
        values["MASTER_ADDR"] = (first, f"first host of {list_n}")
    port = slurm_step_port(env)
    if port is not None and r.user("MASTER_PORT") is None and "MASTER_PORT" not in r.defaults:
        values["MASTER_PORT"] = port
    return values, tasks_here, list_v


# Slurm steps get their own rendezvous port when nobody chose one, so two steps
# (or two jobs) sharing nodes do not both try MASTER_PORT 1234. Every node of a
# step sees the same SLURM_JOB_ID and SLURM_STEP_ID, so every node derives the
# same port:
#     MASTER_PORT = 10000 + 2 * ((16 * SLURM_JOB_ID + SLURM_STEP_ID) mod 11384)
# an even port in 10000-32766: the cluster check's MASTER_PORT + 1 stays below
# 32768, where Linux's default ephemeral range (net.ipv4.ip_local_port_range
# 32768 60999, kernel docs ip-sysctl) begins, so outgoing connections never hold
# it. Steps 0-15 of one job never collide; a missing or non-numeric step id
# (the batch step) counts as 0.
SLURM_PORT_BASE = 10000
SLURM_PORT_SLOTS = 11384


def slurm_step_port(env: Mapping[str, str]) -> tuple[str, str] | None:
    job = get_var(env, "SLURM_JOB_ID")
    if job is None or not DECIMAL.match(job):
        return None
    step_v, step_n = first_var(env, "SLURM_STEP_ID", "SLURM_STEPID")
    step = int(step_v) if step_v is not None and DECIMAL.match(step_v) else 0
    port = SLURM_PORT_BASE + 2 * ((16 * int(job) + step) % SLURM_PORT_SLOTS)
    return str(port), f"derived from SLURM_JOB_ID={job} and {step_n or 'SLURM_STEP_ID'}={step}"


def mpi_values(r: Resolver, source: str) -> tuple[dict[str, tuple[str, str]], int]:
    env = r.env
    values: dict[str, tuple[str, str]] = {}
    rank_v, rank_n = first_var(env, "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
    size_v, size_n = first_var(env, "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE")
    local_v, local_n = first_var(env, "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE",
                              "LOCAL_WORLD_SIZE")
    local_size = parse_int(local_n, local_v, 1) if local_v else 1
    if local_v is None:
        r.notes.append(f"{source}: no local size variable; assuming one rank per node")
    if rank_v is not None:
        rank = parse_int(rank_n, rank_v, 0)
        values["NODE_RANK"] = (str(rank // local_size),
                               f"{rank_n} // {local_n}" if local_n else rank_n)
    if size_v is not None:
        size = parse_int(size_n, size_v, 1)
        if size % local_size:
            raise _environment(size_n, str(size), f"is not a multiple of {local_n}={local_size}: ranks "
                               "are not spread evenly over nodes", "launch the same number of ranks on "
                               "every node (e.g. mpirun --map-by ppr:1:node)")
        values["NNODES"] = (str(size // local_size), f"{size_n} / {local_n}" if local_n else size_n)
    return values, local_size


def _pet_nnodes(r: Resolver, value: str) -> str:
    low, sep, high = value.partition(":")
    if not sep:
        return value
    lo = parse_int("PET_NNODES", low, 1)
    hi = parse_int("PET_NNODES", high, lo)
    if lo == hi:
        return str(lo)
    user = r.user("NNODES")
    if user is not None and DECIMAL.match(user) and lo <= int(user, 10) <= hi:
        return str(int(user, 10))
    raise RuleRefusal("scheduler_environment", ("PET_NNODES", value, "is an elastic range; a static launch "
                                                "needs one node count",
                                                f"export NNODES=<{lo}..{hi}> or make the PyTorchJob non-elastic"))


def pytorchjob_values(r: Resolver) -> dict[str, tuple[str, str]]:
    env = r.env
    values: dict[str, tuple[str, str]] = {}
    nnodes = get_var(env, "PET_NNODES")
    if nnodes is not None:
        values["NNODES"] = (_pet_nnodes(r, nnodes), "PET_NNODES")
    for name, pet in (("NODE_RANK", "PET_NODE_RANK"), ("MASTER_ADDR", "PET_MASTER_ADDR"),
                      ("MASTER_PORT", "PET_MASTER_PORT")):
        value = get_var(env, pet)
        if value is not None:
            values[name] = (value, pet)
    nproc = get_var(env, "PET_NPROC_PER_NODE")
    if nproc is not None and DECIMAL.match(nproc):
        values["GPUS_PER_NODE"] = (nproc, "PET_NPROC_PER_NODE")
    return values


def scheduler_values(r: Resolver) -> tuple[str | None, dict[str, tuple[str, str]], int, str | None]:
    """(scheduler, {name: (value, origin)}, tasks on this node, node list) from the
    variables of the scheduler the job runs under (None: no scheduler)."""
    env, source = r.env, detect_source(r.env)
    sched: dict[str, tuple[str, str]] = {}
    tasks_per_node, nodelist = 1, None
    if source == "slurm":
        sched, tasks_per_node, nodelist = slurm_values(r)
    elif source in ("openmpi", "pmix"):
        sched, tasks_per_node = mpi_values(r, source)
    elif source == "pytorchjob":
        sched = pytorchjob_values(r)
    elif source == "jobset":
        sched["NODE_RANK"] = (get_var(env, "JOB_COMPLETION_INDEX") or "", "JOB_COMPLETION_INDEX")
    elif source in ("lws", "pytorchjob-v1"):  # scheduler/kubernetes.py
        from primus_runner.scheduler import kubernetes

        sched = kubernetes.values(source, env, r.notes)
    return source, sched, tasks_per_node, nodelist


def take_scheduled(r: Resolver, sched: Mapping[str, tuple[str, str]]) -> None:
    """Weigh each distributed value: the user's, else the scheduler's, else config/default."""
    for name in ("NNODES", "NODE_RANK", "MASTER_PORT", "GPUS_PER_NODE"):
        value, origin = sched.get(name, (None, None))
        if value is not None:
            parse_int(origin or name, value, 0)   # a scheduler value must be a number too
        r.take(name, value, origin, compare=same_number)
    addr, addr_origin = sched.get("MASTER_ADDR", (None, None))
    r.take("MASTER_ADDR", addr, addr_origin, compare=same_host)


def scheduler_refusal(env: Mapping[str, str]) -> RuleRefusal | None:
    """The refusal of rule scheduler_contradiction or scheduler_environment the
    rank mapping would raise for ``env`` (the rules engine asks it); a malformed
    value is the type rules', not this."""
    r = Resolver(env, None)
    try:
        take_scheduled(r, scheduler_values(r)[1])
    except RuleRefusal as exc:
        return exc
    except UsageError:
        return None
    return None


def detect_source(env: Mapping[str, str]) -> str | None:
    """The scheduler whose variables are present, in docs/configuration.md "Detection and rank mapping" order."""
    if get_var(env, "SLURM_JOB_ID") is not None:
        return "slurm"
    if get_var(env, "OMPI_COMM_WORLD_RANK") is not None or get_var(env, "OMPI_COMM_WORLD_SIZE") is not None:
        return "openmpi"
    if get_var(env, "PMIX_RANK") is not None:
        return "pmix"
    if any(get_var(env, n) is not None for n in ("PET_NNODES", "PET_NODE_RANK", "PET_MASTER_ADDR")):
        return "pytorchjob"
    if get_var(env, "JOB_COMPLETION_INDEX") is not None:
        return "jobset"
    if get_var(env, "LWS_LEADER_ADDRESS") is not None or get_var(env, "LWS_WORKER_INDEX") is not None:
        return "lws"
    if _pod_index_env(env):
        return "pytorchjob-v1"
    return None


def _pod_index_env(env: Mapping[str, str]) -> bool:
    """A Kubeflow PyTorchJob (training-operator v1) pod without PET_*: the operator
    exports MASTER_ADDR, MASTER_PORT, WORLD_SIZE (the number of pods) and RANK (this
    pod's index, the master 0). Detected as PyTorch Lightning's KubeflowEnvironment
    does: those plus KUBERNETES_SERVICE_HOST/KUBERNETES_PORT, and none of the
    variables torchrun sets for its workers (LOCAL_RANK, GROUP_RANK,
    LOCAL_WORLD_SIZE). Sources: https://www.kubeflow.org/docs/components/trainer/legacy-v1/user-guides/pytorch/
    and lightning.fabric.plugins.environments.kubeflow.KubeflowEnvironment."""
    if not all(get_var(env, n) is not None for n in ("MASTER_ADDR", "WORLD_SIZE", "RANK")):
        return False
    if any(get_var(env, n) is not None for n in ("LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE")):
        return False
    return any(get_var(env, n) is not None for n in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_PORT"))
