"""The probe's node pairs, judged: which node a slow pair is blamed on.

A pair's figure is one link between two nodes; when it is slow, either end may be
the slow one. Pure functions over the measured pairs, used by the probe on every
node (to plan the confirmation round, all nodes computing the same plan from the
same figures) and by the fleet verdict. Rules:
- a link (two nodes) counts with the best of its measurements (a busy CPU only
  ever slows one down); the survey (rounds 1 and 2) measures every node twice and
  the recheck round (3) measures each slow link of the survey once more;
- the reference is the median over the nodes of each node's best link after the
  recheck: what a healthy link does on this fleet;
- a link is slow below ``ratio`` x the reference, or below an absolute floor
  (GB/s) when one is given;
- after the recheck, a node with no slow link is known good; a node with a slow
  link is a suspect, and the confirmation round (4) pairs each suspect with a
  known-good node it was not measured with yet; round 5 measures each slow
  confirmation link once more (one busy moment never excludes a node);
- a node is excluded only when it is slow in every pair it was measured in (with
  two partners at least), or slow with a node known to be good (confirmed);
- any other node with a slow pair that no excluded partner explains is a suspect:
  named, never excluded. With two nodes a slow pair cannot say which end is slow:
  both are suspects.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from primus_runner.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_RATIO = 0.8
SURVEY_ROUNDS = (1, 2)
RECHECK_ROUND = 3
CONFIRM_ROUND = 4
CONFIRM_RECHECK_ROUND = 5
PLANNED_ROUNDS = (RECHECK_ROUND, CONFIRM_ROUND, CONFIRM_RECHECK_ROUND)


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    gbps: float
    latency_us: float
    round: int

    def other(self, host: str) -> str:
        return self.b if host == self.a else self.a


@dataclass
class NodeProbe:
    """One node's figure and what its pairs say about it."""
    host: str
    gbps: float | None = None          # median of its pairs (with partners not excluded)
    latency_us: float | None = None
    ratio: float | None = None         # gbps / reference
    excluded: str = ""                 # why the pairs exclude it ("" when they do not)
    suspect: str = ""                  # a slow pair nobody explains ("" when none)


def natural(host: str) -> list[int | str]:
    import re

    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", host)]


def measured(reports: Iterable[Mapping[str, Any]]) -> list[Pair]:
    """One pair per two hosts and round, from both ends' records (the faster figure:
    both ends timed the same exchange, a busy CPU only ever slows one down)."""
    best: dict[tuple[str, str, int], Pair] = {}
    for rep in reports:
        host = str(rep["host"])
        for p in (rep.get("probe") or {}).get("pairs", []):
            a, b = sorted((host, str(p["peer"])), key=natural)
            pair = Pair(a, b, float(p["gbps"]), float(p.get("latency_us") or 0.0), int(p.get("round") or 1))
            key = (a, b, pair.round)
            if key not in best or pair.gbps > best[key].gbps:
                best[key] = pair
    return sorted(best.values(), key=lambda p: (p.round, natural(p.a), natural(p.b)))


def links(pairs: Iterable[Pair], last_round: int = CONFIRM_RECHECK_ROUND) -> list[Pair]:
    """One entry per two hosts: its best figure up to ``last_round``."""
    best: dict[tuple[str, str], Pair] = {}
    for p in pairs:
        if p.round <= last_round and ((p.a, p.b) not in best or p.gbps > best[(p.a, p.b)].gbps):
            best[(p.a, p.b)] = p
    return list(best.values())


def reference(pairs: Sequence[Pair]) -> float | None:
    best: dict[str, float] = {}
    for p in links(pairs, RECHECK_ROUND):
        for host in (p.a, p.b):
            best[host] = max(best.get(host, 0.0), p.gbps)
    return statistics.median(best.values()) if best else None


@dataclass(frozen=True)
class Limits:
    ratio: float = DEFAULT_RATIO
    floor_gbps: float | None = None


def _slow(p: Pair, ref: float | None, limits: Limits) -> bool:
    return ((ref is not None and ref > 0 and p.gbps < limits.ratio * ref)
            or (limits.floor_gbps is not None and p.gbps < limits.floor_gbps))


def known_good(pairs: Sequence[Pair], limits: Limits) -> set[str]:
    """Hosts measured before the confirmation round with no slow link."""
    ref = reference(pairs)
    seen: set[str] = set()
    slow: set[str] = set()
    for p in links(pairs, RECHECK_ROUND):
        seen |= {p.a, p.b}
        if _slow(p, ref, limits):
            slow |= {p.a, p.b}
    return seen - slow


def _steps(plan: Iterable[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Pairs grouped into steps of disjoint pairs, in order."""
    steps: list[list[tuple[str, str]]] = []
    for a, b in plan:
        step = next((s for s in steps if not {a, b} & {x for pair in s for x in pair}), None)
        if step is None:
            steps.append([(a, b)])
        else:
            step.append((a, b))
    return steps


def rechecks(pairs: Sequence[Pair], limits: Limits, rounds: tuple[int, ...] = SURVEY_ROUNDS
             ) -> list[list[tuple[str, str]]]:
    """Steps of the slow links first measured in ``rounds``, measured once more."""
    ref = reference(pairs)
    keys = {(p.a, p.b) for p in pairs if p.round in rounds}
    chosen = [p for p in links(pairs) if (p.a, p.b) in keys and _slow(p, ref, limits)]
    return _steps((p.a, p.b) for p in sorted(chosen, key=lambda p: (natural(p.a), natural(p.b))))


def plan(pairs: Sequence[Pair], limits: Limits, rnd: int) -> list[list[tuple[str, str]]]:
    """Round ``rnd``'s steps (one of PLANNED_ROUNDS), from every measurement so far."""
    if rnd == RECHECK_ROUND:
        return rechecks(pairs, limits)
    if rnd == CONFIRM_ROUND:
        return confirmations(pairs, limits)
    return rechecks(pairs, limits, (CONFIRM_ROUND,))


def confirmations(pairs: Sequence[Pair], limits: Limits) -> list[list[tuple[str, str]]]:
    """Steps of disjoint (suspect, known-good host) pairs: each suspect after the recheck
    with a known-good host it was not measured with (the least used one first)."""
    ref = reference(pairs)
    good = sorted(known_good(pairs, limits), key=natural)
    suspects = sorted({h for p in links(pairs, RECHECK_ROUND) if _slow(p, ref, limits)
                       for h in (p.a, p.b)}, key=natural)
    done = {frozenset((p.a, p.b)) for p in pairs}
    used = {g: 0 for g in good}
    plan: list[tuple[str, str]] = []
    for suspect in suspects:
        free = [g for g in good if frozenset((suspect, g)) not in done]
        if free:
            partner = min(free, key=lambda g: used[g])
            used[partner] += 1
            plan.append((suspect, partner))
    return _steps(plan)


def _figures(mine: Sequence[Pair]) -> tuple[float, float]:
    chosen = sorted(mine, key=lambda p: p.gbps)[(len(mine) - 1) // 2]      # the lower median
    return chosen.gbps, chosen.latency_us


def _says(pairs: Iterable[Pair], host: str, ref: float) -> str:
    return ", ".join(f"{p.gbps:.3g} GB/s with {p.other(host)} ({p.gbps / ref:.2f}x)" for p in pairs)


def judge(hosts: Sequence[str], pairs: Sequence[Pair], limits: Limits,
          failed: Iterable[str] = ()) -> dict[str, NodeProbe]:
    """Every host's probe verdict. ``failed``: hosts already failed by their own checks
    (a slow pair with one of them is explained)."""
    ref = reference(pairs)
    good = known_good(pairs, limits)
    out = {h: NodeProbe(h) for h in hosts}
    if ref is None or ref <= 0:
        return out
    limit = (f"reference {ref:.3g} GB/s, the median of the nodes' best pairs; threshold {limits.ratio:g}x"
             + (f", floor {limits.floor_gbps:g} GB/s" if limits.floor_gbps is not None else ""))
    mine = {h: [p for p in links(pairs) if h in (p.a, p.b)] for h in hosts}
    for h, own in mine.items():
        slow = [p for p in own if _slow(p, ref, limits)]
        partners = {p.other(h) for p in own}
        confirmed = [p for p in slow if p.other(h) in good]
        if own and len(slow) == len(own) and len(partners) >= 2:
            out[h].excluded = f"probe: slow in every pair: {_says(slow, h, ref)} ({limit})"
        elif confirmed:
            out[h].excluded = (f"probe: slow with a node known to be good: {_says(confirmed, h, ref)} "
                               f"({limit})")
    gone = {h for h, v in out.items() if v.excluded} | set(failed)
    for h, own in mine.items():
        if not own:
            continue
        kept = [p for p in own if p.other(h) not in gone] or own
        gbps, out[h].latency_us = _figures(kept)
        out[h].gbps, out[h].ratio = gbps, gbps / ref
        unexplained = [p for p in own if _slow(p, ref, limits) and p.other(h) not in gone]
        if h in gone or not unexplained:
            continue
        out[h].suspect = f"probe suspect: {_says(unexplained, h, ref)} ({limit}); " + (
            "with two nodes a slow pair cannot say which end is slow: not excluded; add a node known "
            "to be good (-w with a third node) to find out" if len(hosts) == 2 else
            "not confirmed against a node known to be good: not excluded")
    return out
