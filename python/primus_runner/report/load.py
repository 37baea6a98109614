"""What ``primus-cli report`` draws, read from what a run left (pure where it can be).

RUN is a node's log file (``<dir>/primus-<UTC time>-node<R>.log``), its run record
(``<same stem>.events.jsonl``, runrecord.py) or the log directory. A log or a record
stands for its whole run: every node's record of the same launch (the same name up to
``-node<R>``) in that directory is read. A directory stands for every record in it.
A ``.json`` file is a doctor record: ``primus-cli doctor --json`` (one node) or
``slurm doctor --json`` (the fleet: every node's report, the ranking, the excluded
nodes).
"""
from __future__ import annotations

import json
import os
import re
from typing import Any

from primus_runner import runrecord
from primus_runner.doctor import pairs as pairs_mod
from primus_runner.errors import MissingError, UsageError
from primus_runner.records import dataclass, field

_NODE_RE = re.compile(r"^(?P<run>.+)-node(?P<node>\d+)$")


@dataclass
class Run:
    """The events of one run (every node's record), grouped for drawing."""
    title: str
    records: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    @property
    def start(self) -> float:
        return min((float(e["t"]) for e in self.events), default=0.0)


@dataclass
class Doctor:
    """A doctor record: the nodes, the node x node bandwidth (GB/s) and the excluded nodes."""
    title: str
    hosts: list[str]
    gbps: dict[tuple[str, str], float]
    excluded: set[str]
    suspects: set[str]
    status: dict[str, str]


def run_stem(path: str) -> str:
    """PATH's name without its directory, ``.log`` or ``.events.jsonl`` (pure)."""
    name = os.path.basename(path)
    for suffix in (runrecord.SUFFIX, ".log"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def sibling_records(directory: str, stem: str, names: list[str]) -> list[str]:
    """The records in NAMES that belong to the run of STEM: every node's (pure)."""
    match = _NODE_RE.match(stem)
    run = match.group("run") if match else stem
    found = []
    for name in sorted(names):
        if not name.endswith(runrecord.SUFFIX):
            continue
        other = _NODE_RE.match(name[: -len(runrecord.SUFFIX)])
        if (other.group("run") if other else name[: -len(runrecord.SUFFIX)]) == run:
            found.append(os.path.join(directory, name))
    return found


def records_of(target: str) -> tuple[str, list[str]]:
    """(title, the record files) RUN stands for; MissingError when it names nothing."""
    if os.path.isdir(target):
        records = sorted(os.path.join(target, n) for n in os.listdir(target) if n.endswith(runrecord.SUFFIX))
        if not records:
            raise MissingError(f"'{target}' holds no run record (*{runrecord.SUFFIX}); a launch writes one beside "
                               "each node's log. Fix: name a log directory of a launch, a node's log or its record")
        return os.path.basename(os.path.normpath(target)) or target, records
    if not os.path.exists(target):
        raise MissingError(f"'{target}' does not exist; accepted: a node's log file, its run record "
                           f"(*{runrecord.SUFFIX}), the log directory or a doctor --json file")
    directory = os.path.dirname(os.path.abspath(target))
    stem = run_stem(target)
    records = sibling_records(directory, stem, os.listdir(directory))
    if not records:
        raise MissingError(f"no run record beside '{target}' (looked for {runrecord.record_path(target)} and the "
                           "other nodes'); a run of this version writes one beside each node's log")
    match = _NODE_RE.match(stem)
    return (match.group("run") if match else stem), records


def load_run(target: str) -> Run:
    title, records = records_of(target)
    run = Run(title=title, records=records)
    for path in records:
        run.events.extend(runrecord.read(path))
    run.events.sort(key=lambda e: float(e["t"]))
    if not run.events:
        raise MissingError(f"the run record(s) of '{target}' hold no event: {', '.join(records)}")
    return run


def doctor_from(doc: dict[str, Any], title: str) -> Doctor:
    """The heatmap's figures of a doctor record: a fleet's or one node's (pure)."""
    found = doc.get("reports")
    reports: list[dict[str, Any]] = [r for r in found if isinstance(r, dict)] if isinstance(found, list) else [doc]
    hosts = sorted({str(r.get("host", "?")) for r in reports}, key=pairs_mod.natural)
    grid: dict[tuple[str, str], float] = {}
    for p in pairs_mod.links(pairs_mod.measured(reports)):
        grid[(p.a, p.b)] = grid[(p.b, p.a)] = p.gbps
        for host in (p.a, p.b):
            if host not in hosts:
                hosts.append(host)
    ranking = doc.get("ranking") or []
    excluded = {str(v["host"]) for v in ranking if v.get("failed")}
    suspects = {str(v["host"]) for v in ranking if v.get("suspect") and not v.get("failed")}
    status = {}
    for v in ranking:
        host = str(v["host"])
        status[host] = "FAIL" if v.get("failed") else "suspect" if v.get("suspect") else \
            "warn" if v.get("warned") else "ok"
    for r in reports:
        host = str(r.get("host", "?"))
        if host not in status and r.get("checks"):
            states = {str(c.get("status")) for c in r["checks"]}
            status[host] = "FAIL" if "fail" in states else "warn" if "warn" in states else "ok"
    return Doctor(title=title, hosts=hosts, gbps=grid, excluded=excluded, suspects=suspects, status=status)


def is_doctor(target: str) -> bool:
    return target.endswith(".json") and os.path.isfile(target)


def load_doctor(target: str) -> Doctor:
    try:
        with open(target, encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError) as exc:
        raise UsageError(f"'{target}' is not a doctor record ({exc}); accepted: the file primus-cli doctor --json "
                         "or slurm doctor --json wrote") from exc
    if not isinstance(doc, dict) or not ("reports" in doc or "checks" in doc):
        raise UsageError(f"'{target}' is JSON but not a doctor record (no 'reports' and no 'checks'); accepted: "
                         "the file primus-cli doctor --json or slurm doctor --json wrote")
    return doctor_from(doc, os.path.basename(target))
