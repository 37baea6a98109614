"""Distributed rank mapping: scheduler variables -> MASTER_ADDR, MASTER_PORT,
NNODES, NODE_RANK, GPUS_PER_NODE (docs/configuration.md "Detection and rank mapping").

``resolve(env, defaults)`` is a pure function of an environment mapping. Sources,
in the order docs/configuration.md "Detection and rank mapping" gives: Slurm (``SLURM_JOB_ID``), OpenMPI/PMIx
(``OMPI_COMM_WORLD_*``, ``PMIX_RANK``), Kubernetes PyTorchJob (``PET_*``) and
JobSet (``JOB_COMPLETION_INDEX``), LeaderWorkerSet (``LWS_*``), then plain exported values ("explicit") or a
single host ("single").

Precedence for every value: what the user exported > what the scheduler says >
``defaults`` (config files) > the reference defaults (MASTER_ADDR localhost,
MASTER_PORT 1234, NNODES 1, NODE_RANK 0, GPUS_PER_NODE 8). A user value that
contradicts the scheduler is an error naming both values (exit 2), as is any
value out of range.
"""
from __future__ import annotations

from collections.abc import Mapping

from primus_runner.env.rules import distributed
from primus_runner.errors import UsageError
from primus_runner.grammar import host_for_port, is_ip_literal
from primus_runner.records import asdict, dataclass, field
from primus_runner.scheduler.variables import (
    BUILTIN_DEFAULTS,
    Resolver,
    get_var,
    parse_int,
    scheduler_values,
    take_scheduled,
    where_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any

SOURCES = ("explicit", "slurm", "openmpi", "pmix", "pytorchjob", "jobset", "lws", "pytorchjob-v1", "single")

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
    host = host_for_port(master_addr)
    if port is None:
        port = master_port + 1 if master_port < 65535 else master_port - 1
    return f"{host}:{port}"


def check_rendezvous_env(env: Mapping[str, str], notes: list[str]) -> None:
    """An exported PET_RDZV_* (rule pet_rdzv_exported, env/refusals.py);
    with PRIMUS_ELASTIC=1 a note instead."""
    from primus_runner.env.refusals import RuleRefusal, pet_rdzv_problem

    problem = pet_rdzv_problem(env)
    if problem is not None:
        raise RuleRefusal("pet_rdzv_exported", problem)
    found = sorted(n for n in env if n.startswith("PET_RDZV_") and get_var(env, n) is not None)
    if found:
        shown = ", ".join(f"{n}={env[n]}" for n in found)
        notes.append(f"PRIMUS_ELASTIC=1: torchrun uses the exported elastic rendezvous ({shown}); "
                     "group ranks follow arrival order, not NODE_RANK")


def _refuse_bare_rank(env: Mapping[str, str]) -> None:
    """A bare RANK/WORLD_SIZE (rule bare_rank_world_size, env/refusals.py)."""
    from primus_runner.env.refusals import RuleRefusal, bare_rank_problem

    problem = bare_rank_problem(env, None)
    if problem is not None:
        raise RuleRefusal("bare_rank_world_size", problem)


def check_master_resolves(mapping: RankMap, root: str) -> None:
    """On every node but rank 0, MASTER_ADDR must resolve here (rule
    master_addr_resolves, env/refusals.py): a host probe."""
    from primus_runner.env.refusals import RuleRefusal, master_resolve_problem

    problem = master_resolve_problem(mapping.master_addr, mapping.nnodes, mapping.node_rank, root)
    if problem is not None:
        origin = mapping.origins.get("MASTER_ADDR", "")
        suffix = f" (MASTER_ADDR{where_text(origin)})" if origin and origin != "exported" else ""
        raise RuleRefusal("master_addr_resolves", problem, suffix)


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
    r = Resolver(env, defaults)
    source, sched, tasks_per_node, nodelist = scheduler_values(r)
    if source is None:
        _refuse_bare_rank(env)
    check_rendezvous_env(env, r.notes)

    take_scheduled(r, sched)
    addr, addr_origin = sched.get("MASTER_ADDR", (None, None))
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
        from primus_runner.env.refusals import RuleRefusal

        raise RuleRefusal("master_addr_multinode", ("MASTER_ADDR", master, loop[1], loop[2]),
                          f" (MASTER_ADDR from {r.origins['MASTER_ADDR']})")
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
        raw = get_var(os.environ, "PRIMUS_NEURON_ROOT_COMM_PORT")
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
