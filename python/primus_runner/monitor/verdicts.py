"""The run monitor's verdicts: what the ranks of this node are doing, from what the
monitor saw (pure functions, no processes, no files).

A rank is *still* when neither its main thread's CPU time, its context switches,
its I/O counters, its output nor its heartbeat moved for ``STILL_AFTER``
seconds; a still rank's stack is sampled ``SAMPLE_GAP`` seconds apart, and it
is *settled* once ``SETTLE_SAMPLES`` samples in a row are the same stack. A
settled rank *waits* when its main thread is inside torch.distributed (a
collective, a barrier, a store wait), else it is *idle* there.

The verdicts (docs/when-a-job-hangs.md "Hangs and stacks" documents them and these thresholds):

- **stopped**: a rank in state T or t (SIGSTOP, a debugger) for ``STOPPED_AFTER``
  seconds; the job cannot progress while it is. Fix: ``kill -CONT``.
- **mismatch**: every live rank settled, and the waiting ones wait in different
  collectives or at different call sites of one.
- **hang**: every live rank settled, some wait in one collective at one call site
  and nothing moves; the ranks not waiting there (idle elsewhere, or ended) are
  the suspects. On one node, all of them waiting there is a hang too (the
  network or the collective library stalls); on one node of several it is
  *waiting* (reported, never acted on: the rank they wait for may be busy on
  another node, whose own monitor names it if it is hung).
- **working**: some ranks have waited settled for ``WORKING_AFTER`` seconds while
  another rank still moves (computes, switches, reads or writes): a report that
  names the busy rank, never a hang.
- Every live rank settled and none waits (a checkpoint, a sleep): no verdict.
Only hang, mismatch and stopped (once it lasted ``STOP_STOPPED_AFTER``) are
acted on with PRIMUS_HANG_ACTION=stop.
"""
from __future__ import annotations

from collections.abc import Sequence

from primus_runner.diagnose.summary import RankPlace, rank_list

# The registry's thresholds (data/variables.yaml shared_facts monitor_thresholds).
from primus_runner.facts import MONITOR_SAMPLE_GAP as SAMPLE_GAP
from primus_runner.facts import MONITOR_SETTLE_SAMPLES as SETTLE_SAMPLES
from primus_runner.facts import MONITOR_STILL_AFTER as STILL_AFTER
from primus_runner.facts import MONITOR_STOP_STOPPED_AFTER as STOP_STOPPED_AFTER
from primus_runner.facts import MONITOR_STOPPED_AFTER as STOPPED_AFTER
from primus_runner.facts import MONITOR_TICK as TICK
from primus_runner.facts import MONITOR_WORKING_AFTER as WORKING_AFTER
from primus_runner.facts import MONITOR_WORKING_REPEAT as WORKING_REPEAT
from primus_runner.records import dataclass

__all__ = ["SAMPLE_GAP", "SETTLE_SAMPLES", "STILL_AFTER", "STOPPED_AFTER", "STOP_STOPPED_AFTER", "TICK",
           "WORKING_AFTER", "WORKING_REPEAT"]


@dataclass(frozen=True)
class RankView:
    """One live (or ended) rank as the monitor sees it now."""

    rank: int
    pid: int
    still_for: float = 0.0       # seconds since a progress signal last moved
    stopped_for: float = 0.0     # seconds in state T/t (0: not stopped)
    settled: bool = False        # SETTLE_SAMPLES equal stack samples while still
    place: RankPlace | None = None  # where its last stack sample put it
    op: str = ""                 # the torch.distributed call it waits in ("" none)
    exit_code: int = -1          # >= 0: the rank has ended with this code


@dataclass(frozen=True)
class Verdict:
    kind: str                    # stopped | mismatch | hang | working
    line: str                    # the one line for the console and the log
    suspects: tuple[int, ...] = ()
    actionable: bool = False     # PRIMUS_HANG_ACTION=stop may act on it now


def waits_op(place: RankPlace | None) -> str:
    """The torch.distributed function a rank waits in ("" when it does not) (pure)."""
    if place is None or not place.waiting or not place.callee:
        return ""
    return place.callee.split(" (", 1)[0].rsplit(".", 1)[-1]


def _where(view: RankView) -> str:
    return view.place.where if view.place is not None and view.place.where else "(no stack)"


def _who(views: Sequence[RankView]) -> str:
    word = "rank" if len(views) == 1 else "ranks"
    pids = ", ".join(str(v.pid) for v in views)
    return f"{word} {rank_list(v.rank for v in views)} (pid {pids})"


def stopped_verdict(views: Sequence[RankView]) -> Verdict | None:
    stopped = [v for v in views if v.exit_code < 0 and v.stopped_for >= STOPPED_AFTER]
    if not stopped:
        return None
    longest = max(v.stopped_for for v in stopped)
    pids = " ".join(str(v.pid) for v in stopped)
    line = (f"stopped: {_who(stopped)} stopped (state T: SIGSTOP, SIGTSTP or a debugger) for {longest:.0f} s; "
            f"the job cannot progress until it continues. Fix: kill -CONT {pids}")
    return Verdict("stopped", line, tuple(v.rank for v in stopped), longest >= STOP_STOPPED_AFTER)


def _sites(waiting: Sequence[RankView]) -> dict[tuple[str, str], list[RankView]]:
    sites: dict[tuple[str, str], list[RankView]] = {}
    for view in waiting:
        sites.setdefault((view.op, _where(view)), []).append(view)
    return sites


def settled_verdict(views: Sequence[RankView], nnodes: int = 1) -> Verdict | None:
    """hang or mismatch when every live rank has settled; None otherwise (pure). With
    NNODES > 1, every local rank waiting in one collective is reported but not acted
    on: the rank they wait for may be busy on another node (its own monitor names it)."""
    live = [v for v in views if v.exit_code < 0]
    if not live or not all(v.settled for v in live):
        return None
    waiting = [v for v in live if v.op]
    if not waiting:
        return None  # idle everywhere (a checkpoint, a sleep): not a hang
    still = min(v.still_for for v in live)
    sites = _sites(waiting)
    if len(sites) > 1:
        parts = [f"{_who(group)} in {op} at {where}"
                 for (op, where), group in sorted(sites.items(), key=lambda item: min(v.rank for v in item[1]))]
        ops = sorted({op for op, _ in sites})
        what = "different collectives" if len(ops) > 1 else f"{ops[0]} from different call sites"
        smallest = min(len(g) for g in sites.values())
        suspects = tuple(sorted(v.rank for g in sites.values() if len(g) == smallest for v in g))
        line = (f"collective mismatch: the ranks wait in {what}, which can never complete: "
                f"{'; '.join(parts)}; no progress for {still:.0f} s")
        return Verdict("mismatch", line, suspects, True)
    (op, where), group = next(iter(sites.items()))
    idle = [v for v in live if not v.op]
    ended = [v for v in views if v.exit_code >= 0]
    if idle or ended:
        blame = [f"{_who([v])} in {_where(v)}" + (f" <- {v.place.callee}" if v.place and v.place.callee else "")
                 for v in idle]
        blame += [f"rank {v.rank} has exited (code {v.exit_code})" for v in ended]
        line = (f"hang: {'; '.join(blame)}, not in the collective, while {_who(group)} wait for it in {op} "
                f"at {where}; no progress for {still:.0f} s")
        return Verdict("hang", line, tuple(sorted([v.rank for v in idle] + [v.rank for v in ended])), True)
    if nnodes > 1:
        line = (f"waiting: every local rank ({rank_list(v.rank for v in group)}) waits in {op} at {where} with no "
                f"progress for {still:.0f} s: for a rank on another node (its node's monitor names it when it is "
                "hung), or the network stalls; not acted on here")
        return Verdict("waiting", line, (), False)
    line = (f"hang: every rank ({rank_list(v.rank for v in group)}) waits in {op} at {where} with no "
            f"progress for {still:.0f} s: the network or the collective library stalls")
    return Verdict("hang", line, (), True)


def table(views: Sequence[RankView], node: int, host: str) -> list[str]:
    """One line per rank of this node: ``node 0 host  rank 2  pid 4242  idle 14 s  stuck_here (t.py:3)`` (pure)."""
    lines = []
    for v in sorted(views, key=lambda x: x.rank):
        if v.exit_code >= 0:
            state = f"exited (code {v.exit_code})"
        elif v.stopped_for > 0:
            state = f"stopped {v.stopped_for:.0f} s"
        elif v.settled:
            state = f"{'waits in ' + v.op if v.op else 'idle'} {v.still_for:.0f} s"
        elif v.still_for >= STILL_AFTER:
            state = f"still {v.still_for:.0f} s"
        else:
            state = "progressing"
        where = v.place.where if v.place is not None and v.place.where else ""
        pid = f"pid {v.pid}" if v.pid else "-"
        lines.append(f"  node {node} {host}  rank {v.rank}  {pid}  {state}" + (f"  {where}" if where else ""))
    return lines


def working_verdict(views: Sequence[RankView], busy_places: dict[int, RankPlace]) -> Verdict | None:
    """Ranks waiting settled for WORKING_AFTER seconds while another moves (pure)."""
    live = [v for v in views if v.exit_code < 0 and v.stopped_for <= 0]
    waiting = [v for v in live if v.settled and v.op]
    busy = [v for v in live if v.still_for < STILL_AFTER]
    if not waiting or not busy:
        return None
    waited = min(v.still_for for v in waiting)
    if waited < WORKING_AFTER:
        return None
    parts = []
    for view in busy:
        place = busy_places.get(view.rank)
        where = f" in {place.where}" if place is not None and place.where else ""
        parts.append(f"{_who([view])} busy{where}")
    ops = sorted({v.op for v in waiting})
    line = (f"quiet but working: {'; '.join(parts)}; {_who(waiting)} waiting for it in {', '.join(ops)} for "
            f"{waited:.0f} s (a report, not a hang: the busy rank still computes, switches or does I/O)")
    return Verdict("working", line, tuple(v.rank for v in busy), False)
