"""Rules for the launch path's refusals (issue 29): each refusal of the rank
mapping that no value type explains is a registered rule, so ``env check``
and ``env explain`` name it. The conditions live once, in
env/refusals.py (ranks.py raises the same ones); this module only adapts
them to the engine. ``master_addr_resolves`` is a host probe: it runs only
when the check context allows host probes.
"""
from __future__ import annotations

from collections.abc import Iterator

from primus_runner.env import refusals
from primus_runner.env.rules.engine import _State, rule
from primus_runner.env.rules.types import Finding


@rule("pet_rdzv_exported")
def _pet_rdzv(s: _State) -> Iterator[Finding]:
    problem = refusals.pet_rdzv_problem(s.env)
    if problem is not None:
        yield s.found("error", problem[0], problem[2], problem[3], problem[1])


@rule("bare_rank_world_size")
def _bare_rank(s: _State) -> Iterator[Finding]:
    from primus_runner.cluster.schedulers import detect_source
    from primus_runner.env.rules.primus import _launcher_set

    # NNODES/NODE_RANK a launcher or base_env default filled in are not the user's.
    view = {k: v for k, v in s.env.items() if k not in ("NNODES", "NODE_RANK") or not _launcher_set(s, k)}
    problem = refusals.bare_rank_problem(view, detect_source(s.env))
    if problem is not None:
        yield s.found("error", problem[0], problem[2], problem[3], problem[1])


@rule("master_addr_resolves")
def _master_resolves(s: _State) -> Iterator[Finding]:
    if not s.ctx.host_probes:
        return
    nnodes, node_rank, addr = s.uint("NNODES"), s.uint("NODE_RANK"), s.get("MASTER_ADDR")
    if nnodes is None or node_rank is None or addr is None:
        return
    root = s.env.get("PRIMUS_SYSFS_ROOT") or "/"
    problem = refusals.master_resolve_problem(addr, nnodes, node_rank, root)
    if problem is not None:
        yield s.found("error", problem[0], problem[2], problem[3], problem[1])
