"""The grouped summary of a stack dump: ranks grouped by their innermost workload frame.

Owns the reduction of one rank's stacks to where it is (``RankPlace``), the grouping,
the choice of the suspect (the smallest group, preferring ranks that are not waiting
in torch.distributed) and the summary lines. Pure functions only: no processes, no
files (the JSON form is for the bundle's ``summary.json`` and the Slurm merge).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from primus_runner.diagnose.frames import Frame, Thread
from primus_runner.records import asdict, dataclass

# Decorators and dispatch frames that say nothing about where a rank is.
_GENERIC = {"wrapper", "inner", "_fn", "decorate_context", "__call__", "_call_impl", "_wrapped_call_impl",
            "wrapped", "_wrapper", "fn"}


@dataclass(frozen=True)
class RankPlace:
    """Where one rank is (or why that is unknown); ``exit_code`` set for a rank that ended."""

    rank: int
    node: int
    host: str
    where: str = ""          # the innermost workload frame, "stuck_here (train.py:42)"
    callee: str = ""         # what it called from there, "all_reduce (torch/distributed/...)"
    waiting: bool = False    # inside torch.distributed
    error: str = ""          # why there is no stack
    exit_code: int = -1      # >= 0: the rank has ended with this code
    stack_file: str = ""


def main_thread(threads: Sequence[Thread]) -> Thread | None:
    """The main thread (py-spy names it), else the first one."""
    for thread in threads:
        if thread.main:
            return thread
    return threads[0] if threads else None


def _callee(inner: Sequence[Frame]) -> str:
    """What the workload frame called: the outermost telling library frame, else native."""
    python = [f for f in inner if not f.native]
    for frame in reversed(python):
        if frame.name.rsplit(".", 1)[-1] not in _GENERIC and not frame.name.startswith("<"):
            return frame.short()
    if inner:
        return inner[-1].short()
    return ""


def place_of(rank: int, node: int, host: str, threads: Sequence[Thread], stack_file: str = "") -> RankPlace:
    """Reduce a rank's stacks to its place (pure)."""
    thread = main_thread(threads)
    if thread is None or not thread.frames:
        return RankPlace(rank, node, host, error="no Python stack in the dump", stack_file=stack_file)
    frames = thread.frames
    index = next((i for i, f in enumerate(frames) if f.workload), -1)
    waiting = any(f.distributed for f in frames)
    if index < 0:  # no workload frame: the innermost Python frame
        index = next((i for i, f in enumerate(frames) if not f.native), 0)
    return RankPlace(rank, node, host, frames[index].short(), _callee(frames[:index]), waiting,
                     stack_file=stack_file)


def rank_list(ranks: Iterable[int]) -> str:
    """``0,2-7``; two neighbours as ``0,1`` (pure)."""
    values = sorted(set(ranks))
    parts: list[str] = []
    start = prev = None
    for value in [*values, None]:
        if value is not None and prev is not None and value == prev + 1:
            prev = value
            continue
        if start is not None and prev is not None:
            if start == prev:
                parts.append(str(start))
            else:
                parts.append(f"{start},{prev}" if prev == start + 1 else f"{start}-{prev}")
        start = prev = value
    return ",".join(parts)


def members(places: Sequence[RankPlace], with_nodes: bool = False) -> str:
    """``rank 1`` / ``ranks 0,2-7``; WITH_NODES: ``rank 3 (node 1 host2)`` per node."""
    nodes = sorted({(p.node, p.host) for p in places})
    word = "rank" if len(places) == 1 else "ranks"
    if not with_nodes:
        return f"{word} {rank_list(p.rank for p in places)}"
    parts = [f"{rank_list(p.rank for p in places if (p.node, p.host) == n)} (node {n[0]} {n[1]})" for n in nodes]
    return f"{word} " + ", ".join(parts)


def groups(places: Sequence[RankPlace]) -> list[list[RankPlace]]:
    """Live ranks with a stack, grouped by place; the suspect group first, then by size."""
    found: dict[tuple[str, str], list[RankPlace]] = {}
    for place in places:
        if place.exit_code < 0 and not place.error:
            found.setdefault((place.where, place.callee), []).append(place)
    ordered = sorted(found.values(), key=lambda g: (len(g), min(p.rank for p in g)))
    return sorted(ordered, key=lambda g: g[0].waiting)  # stable: not waiting first, each by size


def suspect(grouped: Sequence[Sequence[RankPlace]]) -> int:
    """Index of the suspect group in GROUPED (as ordered by groups()), -1 for none: the
    smallest group not waiting in torch.distributed; when every group waits there, the
    smallest group if it is strictly the smallest."""
    if not grouped:
        return -1
    if not grouped[0][0].waiting:
        return 0
    sizes = sorted(len(g) for g in grouped)
    if len(sizes) > 1 and sizes[0] < sizes[1]:
        return min(range(len(grouped)), key=lambda i: len(grouped[i]))
    return -1


def summary_lines(places: Sequence[RankPlace], bundle: str, extra: Sequence[str] = (),
                  with_nodes: bool = False) -> list[str]:
    """The summary lines under the heading the caller prints (pure)."""
    grouped = groups(places)
    flagged = suspect(grouped)
    lines: list[str] = []
    for index, group in enumerate(grouped):
        first = group[0]
        tag = "SUSPECT " if index == flagged else "        "
        arrow = f" <- {first.callee}" if first.callee else ""
        lines.append(f"  {tag}{members(group, with_nodes)}: {first.where}{arrow}")
    ended = sorted((p for p in places if p.exit_code >= 0), key=lambda p: (p.node, p.rank))
    if ended:
        lines.append("  exited: " + ", ".join(f"{members([p], with_nodes)} (exit code {p.exit_code})" for p in ended))
    for place in sorted((p for p in places if p.error and p.exit_code < 0), key=lambda p: (p.node, p.rank)):
        lines.append(f"  no stack: {members([place], with_nodes)}: {place.error}")
    lines.extend(f"  {line}" for line in extra)
    if bundle:
        lines.append(f"  bundle: {bundle}")
    return lines


def to_json(places: Sequence[RankPlace]) -> list[dict[str, object]]:
    return [asdict(p) for p in places]


def from_json(items: object) -> list[RankPlace]:
    """RankPlace records from summary.json ([] for anything else)."""
    if not isinstance(items, list):
        return []
    out: list[RankPlace] = []
    for item in items:
        if isinstance(item, dict):
            try:
                out.append(RankPlace(int(item["rank"]), int(item["node"]), str(item["host"]), str(item["where"]),
                                     str(item["callee"]), bool(item["waiting"]), str(item["error"]),
                                     int(item["exit_code"]), str(item.get("stack_file", ""))))
            except (KeyError, TypeError, ValueError):
                continue
    return out
