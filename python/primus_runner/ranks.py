"""Distributed rank mapping: scheduler variables -> MASTER_ADDR, MASTER_PORT,
NNODES, NODE_RANK, GPUS_PER_NODE (SPEC section 5).

``resolve(env, defaults)`` is a pure function of an environment mapping. Sources,
in the order SPEC section 5 gives: Slurm (``SLURM_JOB_ID``), OpenMPI/PMIx
(``OMPI_COMM_WORLD_*``, ``PMIX_RANK``), Kubernetes PyTorchJob (``PET_*``) and
JobSet (``JOB_COMPLETION_INDEX``), then plain exported values ("explicit") or a
single host ("single").

Precedence for every value: what the user exported > what the scheduler says >
``defaults`` (config files) > the reference defaults (MASTER_ADDR localhost,
MASTER_PORT 1234, NNODES 1, NODE_RANK 0, GPUS_PER_NODE 8). A user value that
contradicts the scheduler is an error naming both values (exit 2), as is any
value out of range.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from primus_runner.errors import UsageError
from primus_runner.records import asdict, dataclass, field
from primus_runner.rules import distributed
from primus_runner.rules.distributed import is_ip_literal

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any

BUILTIN_DEFAULTS = {
    "MASTER_ADDR": "localhost",
    "MASTER_PORT": "1234",
    "NNODES": "1",
    "NODE_RANK": "0",
    "GPUS_PER_NODE": "8",
}
SOURCES = ("explicit", "slurm", "openmpi", "pmix", "pytorchjob", "jobset", "pytorchjob-v1", "single")

_DECIMAL = re.compile(r"^[0-9]+$")
_TASKS_ITEM = re.compile(r"^([0-9]+)(?:\(x([0-9]+)\))?$")


@dataclass
class RankMap:
    nnodes: int
    node_rank: int
    master_addr: str
    master_port: int
    gpus_per_node: int
    source: str
    tasks_per_node: int = 1
    nodelist: str | None = None
    origins: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_env(self) -> dict[str, str]:
        return {
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
            "NNODES": str(self.nnodes),
            "NODE_RANK": str(self.node_rank),
            "GPUS_PER_NODE": str(self.gpus_per_node),
        }

    def neuron_root_comm_id(self, port: int | None = None) -> str:
        """NEURON_RT_ROOT_COMM_ID for this job (see :func:`neuron_root_comm_id`)."""
        return neuron_root_comm_id(self.master_addr, self.master_port, port)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)
        return data


def neuron_root_comm_id(master_addr: str, master_port: int, port: int | None = None) -> str:
    """The one derivation of NEURON_RT_ROOT_COMM_ID (the Neuron layer asks for it
    on multi-node jobs): ``host:port`` of the rank-0 node. ``port`` is
    PRIMUS_NEURON_ROOT_COMM_PORT when given, else MASTER_PORT+1 (MASTER_PORT-1
    for 65535), so it never collides with the torch rendezvous store on
    MASTER_PORT; the same on every node because it derives from shared values.
    An IPv6 host is put in brackets (``[fd00::10]:29501``), as PyTorch/XLA's own
    Neuron set-up does (torch_xla/_internal/neuron.py, set_rt_root_comm_id)."""
    host = master_addr.strip()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    if port is None:
        port = master_port + 1 if master_port < 65535 else master_port - 1
    return f"{host}:{port}"


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def _first(env: Mapping[str, str], *names: str) -> tuple[str | None, str]:
    """(value, name) of the first set variable among ``names``; (None, "") when none is."""
    for name in names:
        value = _get(env, name)
        if value is not None:
            return value, name
    return None, ""


def _where(origin: str) -> str:
    return " (exported)" if origin == "exported" else f" (from {origin})"


def parse_int(name: str, value: str, low: int, high: int | None = None, origin: str = "") -> int:
    """A decimal integer (leading zeros allowed: ``08`` is 8) within [low, high]."""
    where = _where(origin) if origin and origin != name else ""
    accepted = f"{low}..{high}" if high is not None else f"an integer >= {low}"
    if not _DECIMAL.match(value):
        raise UsageError(f"{name}='{value}'{where} is not a decimal integer; accepted: "
                         f"{accepted}. Fix: export {name}=<{accepted}> or unset it.")
    number = int(value, 10)
    if number < low or (high is not None and number > high):
        raise UsageError(f"{name}={value}{where} is out of range; accepted: {accepted}. "
                         f"Fix: export {name} with a value in that range.")
    return number


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


class _Resolver:
    """Collects each value with where it came from, then validates."""

    def __init__(self, env: Mapping[str, str], defaults: Mapping[str, str] | None) -> None:
        self.env = env
        self.defaults = {k: str(v) for k, v in (defaults or {}).items() if v is not None and str(v) != ""}
        self.values: dict[str, str] = {}
        self.origins: dict[str, str] = {}
        self.notes: list[str] = []

    # -- sources -----------------------------------------------------------
    def user(self, name: str) -> str | None:
        return _get(self.env, name)

    def take(self, name: str, sched_value: str | None, sched_origin: str | None,
             compare: Callable[[str, str], bool] | None = None) -> None:
        """Set ``name`` from the user, else the scheduler, else config, else built-in."""
        user = self.user(name)
        if user is not None:
            if sched_value is not None:
                same = compare(user, sched_value) if compare else user == sched_value
                if not same:
                    raise UsageError(
                        f"{name}={user} (exported) contradicts the scheduler: {sched_origin}="
                        f"{sched_value}. Fix: unset {name} to use the scheduler's value, or "
                        f"change the job so that both agree.")
            self.values[name], self.origins[name] = user, "exported"
        elif sched_value is not None:
            self.values[name], self.origins[name] = sched_value, sched_origin or "scheduler"
        elif name in self.defaults:
            self.values[name], self.origins[name] = self.defaults[name], "config"
        else:
            self.values[name], self.origins[name] = BUILTIN_DEFAULTS[name], "default"

    def number(self, name: str, low: int, high: int | None = None) -> int:
        return parse_int(name, self.values[name], low, high, self.origins[name])


def _same_number(a: str, b: str) -> bool:
    if _DECIMAL.match(a) and _DECIMAL.match(b):
        return int(a, 10) == int(b, 10)
    return a == b


def _same_host(user: str, first: str) -> bool:
    return user == first or short_name(user) == short_name(first) or is_ip_literal(user)


def _slurm(r: _Resolver) -> tuple[dict[str, tuple[str, str]], int, str | None]:
    """Scheduler values (value, origin) from Slurm; also tasks on this node and the node list."""
    env = r.env
    values: dict[str, tuple[str, str]] = {}
    nnodes_v, nnodes_n = _first(env, "SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES")
    list_v, list_n = _first(env, "SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST")
    from primus_runner import hostlist

    try:
        listed = hostlist.count(list_v) if list_v else None
    except hostlist.HostlistError as exc:
        # Name the variable the list came from (the user cannot see which one).
        raise hostlist.HostlistError(f"{list_n}: {exc}") from None
    if nnodes_v is not None:
        nnodes = parse_int(nnodes_n, nnodes_v, 1)
        step_level = (nnodes_n == "SLURM_STEP_NUM_NODES") == (list_n == "SLURM_STEP_NODELIST")
        if listed is not None and step_level and listed != nnodes:
            raise UsageError(f"{nnodes_n}={nnodes_v} but {list_n}='{(list_v or '')[:120]}' names {listed} "
                             "hosts; the Slurm environment is inconsistent. Fix: run the entry "
                             "through srun in the allocation, or unset the stale variable.")
        values["NNODES"] = (str(nnodes), nnodes_n)
    elif listed is not None:
        nnodes = listed
        values["NNODES"] = (str(listed), list_n)
    else:
        nnodes = None

    tasks_v, tasks_n = _first(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
                              "SLURM_NTASKS_PER_NODE")
    groups = parse_tasks_per_node(tasks_n, tasks_v) if tasks_v else None

    node_id = _get(env, "SLURM_NODEID")
    proc_id = _get(env, "SLURM_PROCID")
    node_rank: int | None = None
    if node_id is not None:
        node_rank = parse_int("SLURM_NODEID", node_id, 0)
        values["NODE_RANK"] = (str(node_rank), "SLURM_NODEID")
    elif proc_id is not None:
        task = parse_int("SLURM_PROCID", proc_id, 0)
        if groups is not None:
            node_rank = node_of_task(groups, task)
            if node_rank is None:
                raise UsageError(f"SLURM_PROCID={proc_id} is beyond the tasks that "
                                 f"{tasks_n}='{tasks_v}' describes. Fix: run through srun.")
            origin = f"SLURM_PROCID with {tasks_n}"
        else:
            node_rank, origin = task, "SLURM_PROCID"
        values["NODE_RANK"] = (str(node_rank), origin)
    elif nnodes is not None and nnodes > 1 and r.user("NODE_RANK") is None:
        raise UsageError(f"inside Slurm job {_get(env, 'SLURM_JOB_ID')} of {nnodes} nodes but "
                         "neither SLURM_NODEID nor SLURM_PROCID is set, so this node's rank is "
                         "unknown (running in the batch script or salloc shell, not in a step). "
                         "Fix: start the entry with srun (one task per node), or export NODE_RANK.")

    tasks_here = 1
    if groups is not None and node_rank is not None:
        found = tasks_on_node(groups, node_rank)
        if found is not None:
            tasks_here = found

    first_v = _get(env, "PRIMUS_SLURM_FIRST_HOST")
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
    job = _get(env, "SLURM_JOB_ID")
    if job is None or not _DECIMAL.match(job):
        return None
    step_v, step_n = _first(env, "SLURM_STEP_ID", "SLURM_STEPID")
    step = int(step_v) if step_v is not None and _DECIMAL.match(step_v) else 0
    port = SLURM_PORT_BASE + 2 * ((16 * int(job) + step) % SLURM_PORT_SLOTS)
    return str(port), f"derived from SLURM_JOB_ID={job} and {step_n or 'SLURM_STEP_ID'}={step}"


def _mpi(r: _Resolver, source: str) -> tuple[dict[str, tuple[str, str]], int]:
    env = r.env
    values: dict[str, tuple[str, str]] = {}
    rank_v, rank_n = _first(env, "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
    size_v, size_n = _first(env, "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE")
    local_v, local_n = _first(env, "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE",
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
            raise UsageError(f"{size_n}={size} is not a multiple of {local_n}={local_size}: "
                             "ranks are not spread evenly over nodes. Fix: launch the same number "
                             "of ranks on every node (e.g. mpirun --map-by ppr:1:node).")
        values["NNODES"] = (str(size // local_size), f"{size_n} / {local_n}" if local_n else size_n)
    return values, local_size


def _pet_nnodes(r: _Resolver, value: str) -> str:
    low, sep, high = value.partition(":")
    if not sep:
        return value
    lo = parse_int("PET_NNODES", low, 1)
    hi = parse_int("PET_NNODES", high, lo)
    if lo == hi:
        return str(lo)
    user = r.user("NNODES")
    if user is not None and _DECIMAL.match(user) and lo <= int(user, 10) <= hi:
        return str(int(user, 10))
    raise UsageError(f"PET_NNODES='{value}' is an elastic range; a static launch needs one node "
                     f"count. Fix: export NNODES=<{lo}..{hi}> or make the PyTorchJob non-elastic.")


def _pytorchjob(r: _Resolver) -> dict[str, tuple[str, str]]:
    env = r.env
    values: dict[str, tuple[str, str]] = {}
    nnodes = _get(env, "PET_NNODES")
    if nnodes is not None:
        values["NNODES"] = (_pet_nnodes(r, nnodes), "PET_NNODES")
    for name, pet in (("NODE_RANK", "PET_NODE_RANK"), ("MASTER_ADDR", "PET_MASTER_ADDR"),
                      ("MASTER_PORT", "PET_MASTER_PORT")):
        value = _get(env, pet)
        if value is not None:
            values[name] = (value, pet)
    nproc = _get(env, "PET_NPROC_PER_NODE")
    if nproc is not None and _DECIMAL.match(nproc):
        values["GPUS_PER_NODE"] = (nproc, "PET_NPROC_PER_NODE")
    return values


def detect_source(env: Mapping[str, str]) -> str | None:
    """The scheduler whose variables are present, in SPEC section 5 order."""
    if _get(env, "SLURM_JOB_ID") is not None:
        return "slurm"
    if _get(env, "OMPI_COMM_WORLD_RANK") is not None or _get(env, "OMPI_COMM_WORLD_SIZE") is not None:
        return "openmpi"
    if _get(env, "PMIX_RANK") is not None:
        return "pmix"
    if any(_get(env, n) is not None for n in ("PET_NNODES", "PET_NODE_RANK", "PET_MASTER_ADDR")):
        return "pytorchjob"
    if _get(env, "JOB_COMPLETION_INDEX") is not None:
        return "jobset"
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
    if not all(_get(env, n) is not None for n in ("MASTER_ADDR", "WORLD_SIZE", "RANK")):
        return False
    if any(_get(env, n) is not None for n in ("LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE")):
        return False
    return any(_get(env, n) is not None for n in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_PORT"))


def check_rendezvous_env(env: Mapping[str, str], notes: list[str]) -> None:
    """torchrun reads PET_<OPTION> variables as its option defaults
    (torch.distributed.argparse_util.env), so an exported PET_RDZV_BACKEND=c10d
    (elastic PyTorchJobs set it) turns the launcher's static rendezvous into an
    elastic one whose group ranks follow arrival order: NODE_RANK 0 can become
    rank 1. Refused unless PRIMUS_ELASTIC=1 asks for it."""
    found = sorted(n for n in env if n.startswith("PET_RDZV_") and _get(env, n) is not None)
    if not found:
        return
    shown = ", ".join(f"{n}={env[n]}" for n in found)
    if _get(env, "PRIMUS_ELASTIC") == "1":
        notes.append(f"PRIMUS_ELASTIC=1: torchrun uses the exported elastic rendezvous ({shown}); "
                     "group ranks follow arrival order, not NODE_RANK")
        return
    raise UsageError(f"{shown} exported: torchrun reads PET_* variables as its defaults and would "
                     "run an elastic rendezvous that assigns ranks by arrival, so NODE_RANK would "
                     "not decide which node is rank 0. Fix: unset " + " ".join(found) + " (the "
                     "launcher starts torchrun with a static rendezvous from NNODES, NODE_RANK, "
                     "MASTER_ADDR and MASTER_PORT), or export PRIMUS_ELASTIC=1 to use elastic "
                     "rendezvous on purpose.")


def _refuse_bare_rank(env: Mapping[str, str]) -> None:
    """RANK/WORLD_SIZE exported outside any known scheduler and without NNODES/NODE_RANK:
    they may count nodes (an old PyTorchJob without Kubernetes variables) or processes;
    guessing would start one node alone, so the launch is refused."""
    if _get(env, "LOCAL_RANK") is not None or _get(env, "NNODES") is not None \
            or _get(env, "NODE_RANK") is not None:
        return
    rank, size = _get(env, "RANK"), _get(env, "WORLD_SIZE")
    if rank is None or size is None or not _DECIMAL.match(size) or int(size) <= 1:
        return
    raise UsageError(f"RANK={rank} and WORLD_SIZE={size} are exported but NNODES and NODE_RANK are "
                     "not, outside Slurm, MPI or a Kubernetes pod: the launcher cannot tell whether "
                     "they count nodes or processes and would start this node alone. Fix: export "
                     f"NNODES={size} NODE_RANK={rank} when they count nodes (Kubeflow PyTorchJob v1 "
                     "pod index), or unset RANK and WORLD_SIZE.")


def check_master_resolves(mapping: RankMap, root: str) -> None:
    """On every node but rank 0, MASTER_ADDR must resolve here: otherwise torchrun's
    rendezvous retries for its whole timeout before failing."""
    if mapping.nnodes <= 1 or mapping.node_rank == 0:
        return
    from primus_runner.nics.routes import resolves

    if not resolves(root, mapping.master_addr):
        origin = mapping.origins.get("MASTER_ADDR", "")
        where = _where(origin) if origin else ""
        raise UsageError(f"MASTER_ADDR='{mapping.master_addr}'{where} does not resolve on this node "
                         f"(NODE_RANK {mapping.node_rank}): the rendezvous would retry until its "
                         "timeout and fail. Fix: use node 0's IP address or a name this node's "
                         "/etc/hosts or DNS knows, the same on every node.")


def resolve(env: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> RankMap:
    """Map an environment to the distributed launch values. Raises UsageError."""
    # The user's own values first, by the rule env check applies (one verdict, one message).
    for name in distributed.CHECKED:
        value = env.get(name)
        found = distributed.problem(name, value) if value is not None else None
        if found is not None:
            raise UsageError(distributed.describe(name, value or "", *found))
    user_rank, user_nodes = env.get("NODE_RANK"), env.get("NNODES")
    if user_rank is not None and user_nodes is not None:
        bound = distributed.rank_problem("NODE_RANK", int(user_rank, 10), "NNODES", int(user_nodes, 10))
        if bound is not None:
            raise UsageError(distributed.describe("NODE_RANK", user_rank, *bound))
    r = _Resolver(env, defaults)
    source = detect_source(env)
    sched: dict[str, tuple[str, str]] = {}
    tasks_per_node = 1
    nodelist = None
    if source == "slurm":
        sched, tasks_per_node, nodelist = _slurm(r)
    elif source in ("openmpi", "pmix"):
        sched, tasks_per_node = _mpi(r, source)
    elif source == "pytorchjob":
        sched = _pytorchjob(r)
    elif source == "jobset":
        sched["NODE_RANK"] = (_get(env, "JOB_COMPLETION_INDEX") or "", "JOB_COMPLETION_INDEX")
    elif source == "pytorchjob-v1":
        sched["NNODES"] = (_get(env, "WORLD_SIZE") or "", "WORLD_SIZE (PyTorchJob v1: pods)")
        sched["NODE_RANK"] = (_get(env, "RANK") or "", "RANK (PyTorchJob v1: pod index)")
        r.notes.append("Kubeflow PyTorchJob v1 environment (no PET_*): NNODES=WORLD_SIZE and "
                       "NODE_RANK=RANK, as the operator sets them per pod")
    else:
        _refuse_bare_rank(env)
    check_rendezvous_env(env, r.notes)

    for name in ("NNODES", "NODE_RANK", "MASTER_PORT", "GPUS_PER_NODE"):
        value, origin = sched.get(name, (None, None))
        if value is not None:
            parse_int(origin or name, value, 0)   # a scheduler value must be a number too
        r.take(name, value, origin, compare=_same_number)
    addr, addr_origin = sched.get("MASTER_ADDR", (None, None))
    r.take("MASTER_ADDR", addr, addr_origin, compare=_same_host)
    if addr is not None and r.origins["MASTER_ADDR"] == "exported" and is_ip_literal(
            r.values["MASTER_ADDR"]) and not is_ip_literal(addr):
        r.notes.append(f"MASTER_ADDR={r.values['MASTER_ADDR']} is an IP address; it could not be "
                       f"compared with {addr_origin} '{addr}' without DNS")

    nnodes = r.number("NNODES", 1)
    node_rank = r.number("NODE_RANK", 0)
    port = r.number("MASTER_PORT", 1024, 65535)
    gpus = r.number("GPUS_PER_NODE", 1)
    master = r.values["MASTER_ADDR"]
    bound = distributed.rank_problem("NODE_RANK", node_rank, "NNODES", nnodes)
    if bound is not None:
        raise UsageError(distributed.describe("NODE_RANK", str(node_rank), *bound))
    host_problem = distributed.problem("MASTER_ADDR", master)
    if host_problem is not None:  # a scheduler's or config's value (the user's was checked first)
        raise UsageError(distributed.describe("MASTER_ADDR", master, *host_problem)
                         + f" (MASTER_ADDR from {r.origins['MASTER_ADDR']})")
    # An exported loopback address with NNODES > 1 is legitimate: several
    # "nodes" on one machine (tests, bring-up); env check warns. A default is a mistake.
    loop = distributed.loopback_problem(master, nnodes, users=r.origins["MASTER_ADDR"] == "exported")
    if loop is not None and loop[0] == "error":
        raise UsageError(distributed.describe("MASTER_ADDR", master, loop[1], loop[2])
                         + f" (MASTER_ADDR from {r.origins['MASTER_ADDR']})")
    if source is None:
        explicit = nnodes > 1 or any(r.user(n) is not None for n in ("NNODES", "NODE_RANK", "MASTER_ADDR"))
        source = "explicit" if explicit else "single"
    return RankMap(nnodes=nnodes, node_rank=node_rank, master_addr=master, master_port=port,
                   gpus_per_node=gpus, source=source, tasks_per_node=tasks_per_node,
                   nodelist=nodelist, origins=dict(r.origins), notes=r.notes)


def main(argv: list[str]) -> int:
    import argparse
    import json
    import os
    import sys

    parser = argparse.ArgumentParser(
        prog="python3 -m primus_runner ranks",
        description="Map scheduler variables (Slurm, OpenMPI/PMIx, PyTorchJob PET_*, JobSet) "
                    "and exported values to MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK and "
                    "GPUS_PER_NODE. Exported values win unless they contradict the scheduler.")
    parser.add_argument("--format", choices=("shell", "json", "nul", "table", "neuron-root-comm"),
                        default="shell",
                        help="shell: export lines; json: everything incl. source and origins; "
                             "nul: NAME\\0VALUE\\0 records for the launcher; table: aligned text; "
                             "neuron-root-comm: the NEURON_RT_ROOT_COMM_ID value alone "
                             "(port PRIMUS_NEURON_ROOT_COMM_PORT, else MASTER_PORT+1)")
    parser.add_argument("--default", action="append", default=[], metavar="NAME=VALUE",
                        help="a config-file value used when neither the environment nor the "
                             "scheduler gives one (repeatable)")
    args = parser.parse_args(argv)
    defaults: dict[str, str] = {}
    for item in args.default:
        name, sep, value = item.partition("=")
        if not sep or name not in BUILTIN_DEFAULTS:
            raise UsageError(f"--default '{item}': expected NAME=VALUE with NAME one of "
                             f"{', '.join(BUILTIN_DEFAULTS)}")
        defaults[name] = value
    result = resolve(os.environ, defaults)
    if args.format == "neuron-root-comm":
        raw = _get(os.environ, "PRIMUS_NEURON_ROOT_COMM_PORT")
        port = parse_int("PRIMUS_NEURON_ROOT_COMM_PORT", raw, 1024, 65535) if raw else None
        print(result.neuron_root_comm_id(port))
        return 0
    if args.format == "json":
        print(json.dumps(result.as_dict(), indent=2, sort_keys=True))
    elif args.format == "nul":
        from primus_runner.shellfmt import nul_records

        sys.stdout.flush()
        sys.stdout.buffer.write(nul_records(result.as_env().items()))
        sys.stdout.buffer.flush()
    elif args.format == "table":
        for name, value in result.as_env().items():
            print(f"{name:<14} {value:<24} {result.origins.get(name, '')}")
        print(f"{'source':<14} {result.source}")
    else:
        from primus_runner.shellfmt import export_lines

        sys.stdout.write(export_lines(result.as_env()))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
