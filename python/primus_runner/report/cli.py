"""``python3 -m primus_runner report RUN [--out FILE]`` (``primus-cli report``).

RUN: a node's log file, its run record (``*.events.jsonl``), the log directory, or a
doctor record (``doctor --json FILE``, ``slurm doctor --json FILE``). Writes one
self-contained HTML file and prints its path. Exit codes: 0 written; 1 RUN names no
record; 2 bad arguments or a file that is no record.
"""
from __future__ import annotations

import argparse
import os

from primus_runner import runrecord
from primus_runner.errors import UsageError
from primus_runner.report import load, page


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="primus-cli report",
        description="Draw a run (launch phases per node, the run monitor's verdicts, straggler scores, "
                    "restarts) or a doctor run (the node x node bandwidth heatmap, excluded nodes marked) "
                    "as one self-contained HTML file: no network, no script library.")
    p.add_argument("run", metavar="RUN",
                   help="a node's log file, its run record (*.events.jsonl), the log directory, "
                        "or a doctor --json file")
    p.add_argument("--out", metavar="FILE",
                   help="the HTML file to write (default: RUN without its suffix + .report.html; "
                        "for a directory, report.html in it)")
    return p


def default_out(target: str) -> str:
    """Where the report of TARGET goes when --out is not given (pure)."""
    if os.path.isdir(target):
        return os.path.join(target, "report.html")
    for suffix in (runrecord.SUFFIX, ".log", ".json"):
        if target.endswith(suffix):
            return target[: -len(suffix)] + ".report.html"
    return target + ".report.html"


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    out = args.out or default_out(args.run)
    if os.path.isdir(out):
        raise UsageError(f"--out {out} is a directory; accepted: a file path")
    if load.is_doctor(args.run):
        doc = load.load_doctor(args.run)
        html, what = page.doctor_page(doc), f"doctor record of {len(doc.hosts)} node(s)"
    else:
        run = load.load_run(args.run)
        html, what = page.run_page(run), f"{len(run.events)} event(s) from {len(run.records)} record(s)"
    try:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(html)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write it ({exc.strerror}); name a file in a writable "
                         "directory") from exc
    print(f"report: wrote {out} ({what})")
    return 0
