"""Straggler scores: the rank the others wait for, from the monitor's once-a-second
looks at every rank's main thread (pure functions).

In a round of ``ROUND_S`` seconds each rank's *wait share* is the part of its
looks that found its main thread blocked until something else answers (a futex
or a poll: procstat.Sample.waiting; a collective's wait is one). A healthy job
has every rank wait about as often; a rank that the others wait for waits less
than they do. Its score is the others' median wait share minus its own, 0..1,
counted only when the others wait in at least ``OTHERS_MIN`` of their looks.
A score of at least ``THRESHOLD`` in ``ROUNDS`` rounds in a row names the rank
(a WARN line); every ``TABLE_ROUNDS`` rounds the scores go to the log.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

# The registry's thresholds (data/variables.yaml shared_facts monitor_thresholds).
from primus_runner.facts import MONITOR_STRAGGLER_OTHERS_MIN as OTHERS_MIN
from primus_runner.facts import MONITOR_STRAGGLER_ROUND_S as ROUND_S
from primus_runner.facts import MONITOR_STRAGGLER_ROUNDS as ROUNDS
from primus_runner.facts import MONITOR_STRAGGLER_TABLE_ROUNDS as TABLE_ROUNDS
from primus_runner.facts import MONITOR_STRAGGLER_THRESHOLD as THRESHOLD

__all__ = ["OTHERS_MIN", "ROUNDS", "ROUND_S", "TABLE_ROUNDS", "THRESHOLD"]


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def scores(shares: Mapping[int, float]) -> dict[int, float]:
    """rank -> score from rank -> wait share of one round (pure)."""
    out: dict[int, float] = {}
    for rank, share in shares.items():
        others = [s for r, s in shares.items() if r != rank]
        base = median(others)
        out[rank] = round(max(0.0, base - share), 3) if others and base >= OTHERS_MIN else 0.0
    return out


def flagged(history: Sequence[Mapping[int, float]]) -> list[int]:
    """Ranks whose score was >= THRESHOLD in each of the last ROUNDS rounds (pure)."""
    if len(history) < ROUNDS:
        return []
    last = history[-ROUNDS:]
    ranks = set(last[0])
    for round_scores in last[1:]:
        ranks &= set(round_scores)
    return sorted(r for r in ranks if all(s[r] >= THRESHOLD for s in last))


def table(shares: Mapping[int, float], round_scores: Mapping[int, float]) -> str:
    """One line: ``rank 0 wait 0.33 score 0.00; rank 1 ...`` (pure)."""
    return "; ".join(f"rank {r} wait {shares[r]:.2f} score {round_scores.get(r, 0.0):.2f}" for r in sorted(shares))
