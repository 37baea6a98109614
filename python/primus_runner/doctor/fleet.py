"""Comparing the nodes of a fleet: odd nodes out against the majority, probe figures
against the fleet median, the ranked table and the ``--exclude=`` line.

Pure functions over node reports (node.py's ``primus-doctor/1`` dicts), so the
ranking is tested on recorded figures. Rules:
- every fact (versions, CPU vendor, accelerator kind, model and device count) and
  every cluster-uniform variable should be the same on every node; where values
  differ, the nodes holding a value other than the majority's are the odd ones out
  (a tie: every side but the one holding the first node in host order);
- probe: which end of a slow pair (below ``ratio`` x the reference or below the
  floor) is slow is pairs.py's: a node slow in every pair, or slow with a node
  known to be good, fails; an unexplained slow pair makes its nodes suspects,
  named but never excluded;
- a node fails when any of its checks failed, it is odd one out, or its pairs say so.
Must not run anything on the nodes.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from primus_runner.doctor.pairs import DEFAULT_RATIO, Limits, judge, measured, natural
from primus_runner.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DEFAULT_RATIO", "NodeVerdict", "exclude_line", "fleet_json", "rank", "table"]


@dataclass
class NodeVerdict:
    host: str
    failed: list[str] = field(default_factory=list)
    warned: list[str] = field(default_factory=list)
    suspect: list[str] = field(default_factory=list)
    bandwidth: float | None = None       # GB/s, median of its pairs (pairs.py)
    latency_us: float | None = None
    ratio: float | None = None           # bandwidth / the reference (pairs.py)

    @property
    def bad(self) -> bool:
        return bool(self.failed)


_natural = natural


def odd_ones_out(reports: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """host -> ["<what>: <its value> (majority: <value>)"] for every non-uniform item."""
    hosts = [str(r["host"]) for r in reports]
    out: dict[str, list[str]] = {h: [] for h in hosts}
    items: dict[str, dict[str, str]] = {}
    for r in reports:
        for key, value in r.get("facts", {}).items():
            items.setdefault(key, {})[r["host"]] = str(value)
        for key, value in r.get("uniform", {}).items():
            items.setdefault(key, {})[r["host"]] = "****" if str(value).startswith("sha256:") else str(value)
    order = sorted(hosts, key=_natural)
    for key, values in sorted(items.items()):
        full = {h: values.get(h, "<unset>") for h in hosts}
        counts: dict[str, int] = {}
        for value in full.values():
            counts[value] = counts.get(value, 0) + 1
        if len(counts) < 2:
            continue
        top = max(counts.values())
        leaders = [v for v, n in counts.items() if n == top]
        majority = next(full[h] for h in order if full[h] in leaders)
        for host in order:
            if full[host] != majority:
                out[host].append(f"{key}: {full[host]} (majority: {majority})")
    return out


def rank(reports: Sequence[Mapping[str, Any]], ratio: float = DEFAULT_RATIO,
         floor_gbps: float | None = None) -> list[NodeVerdict]:
    """Every node's verdict, worst first (most failures, then lowest ratio, then host)."""
    odd = odd_ones_out(reports)
    verdicts: list[NodeVerdict] = []
    for r in reports:
        v = NodeVerdict(str(r["host"]))
        for c in r.get("checks", []):
            if c["status"] == "fail":
                v.failed.append(f"{c['name']}: {c['value']}")
            elif c["status"] == "warn":
                v.warned.append(c["name"])
        v.failed += [f"differs: {item}" for item in odd.get(v.host, [])]
        verdicts.append(v)
    probes = judge([v.host for v in verdicts], measured(reports), Limits(ratio, floor_gbps),
                   failed=[v.host for v in verdicts if v.failed])
    for v in verdicts:
        p = probes[v.host]
        v.bandwidth, v.latency_us, v.ratio = p.gbps, p.latency_us, p.ratio
        if p.excluded:
            v.failed.append(p.excluded)
        if p.suspect:
            v.suspect.append(p.suspect)
    verdicts.sort(key=lambda v: (-len(v.failed), -len(v.suspect), v.ratio if v.ratio is not None else 1.0,
                                 _natural(v.host)))
    return verdicts


def exclude_line(verdicts: Sequence[NodeVerdict]) -> str | None:
    from primus_runner.scheduler.hostlist import compress

    bad = sorted((v.host for v in verdicts if v.bad), key=_natural)
    return f"--exclude={compress(bad)}" if bad else None


def table(verdicts: Sequence[NodeVerdict]) -> list[str]:
    rows = [("NODE", "STATUS", "GB/S", "LAT(us)", "x MEDIAN", "FAILED CHECKS")]
    for v in verdicts:
        status = "FAIL" if v.bad else "suspect" if v.suspect else "warn" if v.warned else "ok"
        rows.append((v.host, status,
                     f"{v.bandwidth:.3g}" if v.bandwidth is not None else "-",
                     f"{v.latency_us:.0f}" if v.latency_us is not None else "-",
                     f"{v.ratio:.2f}" if v.ratio is not None else "-",
                     "; ".join(v.failed + v.suspect)
                     or (f"(warnings: {', '.join(v.warned)})" if v.warned else "-")))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5] for r in rows]


def masked(report: Mapping[str, Any]) -> dict[str, Any]:
    """A report for a file: secret values (compared as SHA-256 digests) shown as ****."""
    uniform = {k: "****" if str(v).startswith("sha256:") else v for k, v in report.get("uniform", {}).items()}
    return {**report, "uniform": uniform}


def fleet_json(reports: Sequence[Mapping[str, Any]], verdicts: Sequence[NodeVerdict],
               ratio: float, floor_gbps: float | None) -> dict[str, Any]:
    from primus_runner.records import asdict

    return {"protocol": "primus-doctor-fleet/1", "nodes": len(reports), "ratio": ratio,
            "floor_gbps": floor_gbps, "ranking": [asdict(v) for v in verdicts],
            "exclude": exclude_line(verdicts), "reports": [masked(r) for r in reports]}
