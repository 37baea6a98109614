"""Comparing the nodes of a fleet: odd nodes out against the majority, probe figures
against the fleet median, the ranked table and the ``--exclude=`` line.

Pure functions over node reports (node.py's ``primus-doctor/1`` dicts), so the
ranking is tested on recorded figures. Rules:
- every fact (versions, CPU vendor, accelerator kind, model and device count) and
  every cluster-uniform variable should be the same on every node; where values
  differ, the nodes holding a value other than the majority's are the odd ones out
  (a tie: every side but the one holding the first node in host order);
- probe: a node's figure is its best pair bandwidth over the two pairing rounds,
  so a node slow in both rounds is the bad one and its partners are not; it fails
  below ``ratio`` x the fleet median (default 0.8) or below an absolute floor;
- a node fails when any of its checks failed, it is odd one out, or its figure is low.
Must not run anything on the nodes.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from primus_runner.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_RATIO = 0.8


@dataclass
class NodeVerdict:
    host: str
    failed: list[str] = field(default_factory=list)
    warned: list[str] = field(default_factory=list)
    bandwidth: float | None = None       # GB/s, best pair
    latency_us: float | None = None
    ratio: float | None = None           # bandwidth / fleet median

    @property
    def bad(self) -> bool:
        return bool(self.failed)


def _natural(host: str) -> list[int | str]:
    import re

    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", host)]


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


def node_bandwidth(report: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(best pair GB/s, that pair's latency in us) of one node's probe pairs."""
    pairs = report.get("probe", {}).get("pairs", [])
    if not pairs:
        return None, None
    best = max(pairs, key=lambda p: float(p["gbps"]))
    return float(best["gbps"]), float(best.get("latency_us") or 0.0)


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
        v.bandwidth, v.latency_us = node_bandwidth(r)
        verdicts.append(v)
    figures = [v.bandwidth for v in verdicts if v.bandwidth is not None]
    median = statistics.median(figures) if figures else None
    for v in verdicts:
        if v.bandwidth is None or median is None:
            continue
        v.ratio = v.bandwidth / median if median > 0 else 1.0
        if v.ratio < ratio:
            v.failed.append(f"probe: {v.bandwidth:.3g} GB/s is {v.ratio:.2f}x the fleet median "
                            f"{median:.3g} GB/s (threshold {ratio:g}x)")
        if floor_gbps is not None and v.bandwidth < floor_gbps:
            v.failed.append(f"probe: {v.bandwidth:.3g} GB/s below the floor {floor_gbps:g} GB/s")
    verdicts.sort(key=lambda v: (-len(v.failed), v.ratio if v.ratio is not None else 1.0, _natural(v.host)))
    return verdicts


def exclude_line(verdicts: Sequence[NodeVerdict]) -> str | None:
    from primus_runner.scheduler.hostlist import compress

    bad = sorted((v.host for v in verdicts if v.bad), key=_natural)
    return f"--exclude={compress(bad)}" if bad else None


def table(verdicts: Sequence[NodeVerdict]) -> list[str]:
    rows = [("NODE", "STATUS", "GB/S", "LAT(us)", "x MEDIAN", "FAILED CHECKS")]
    for v in verdicts:
        rows.append((v.host, "FAIL" if v.bad else ("warn" if v.warned else "ok"),
                     f"{v.bandwidth:.3g}" if v.bandwidth is not None else "-",
                     f"{v.latency_us:.0f}" if v.latency_us is not None else "-",
                     f"{v.ratio:.2f}" if v.ratio is not None else "-",
                     "; ".join(v.failed) or (f"(warnings: {', '.join(v.warned)})" if v.warned else "-")))
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
