"""Node 0 of a multi-node run, after its own dump: the other nodes' bundles gathered,
their stacks in one table, and their flight-recorder dumps analysed together.

How the bundles reach node 0: nothing is sent between nodes. Every node's monitor
writes its bundle beside its own log (``<log without .log>.hang-<n>/``, the
workspace's ``logs/``); when the nodes share that filesystem (a Slurm job's
workspace usually is), node 0 finds them there (diagnose/cli.py ``gather``: each
node's newest ``summary.json`` since the hang began, waiting up to 30 s for them).

The job-wide flight recorder: each node's bundle holds its ranks' dumps as
``flight-recorder/fr-rank-<R>``, R the global rank (the name torch and the dump
thread give the file: TORCH_FR_DUMP_TEMP_FILE + global rank; torch's analyzer takes
the rank from the name), and ``flight-recorder.json`` (monitor/flightrec.py ``mark``:
the ranks asked, then, done, the ranks copied). Node 0 waits for every gathered
node's to be done, links all the dumps (relative symlinks, nothing copied) into
``<node 0's bundle>/flight-recorder-all-nodes/``, runs the analyzer there once and
prints one line (flightrec.verdict_of), also appended to its bundle's summary.txt;
its output: ``flight-recorder-all-nodes.txt``. Without the dumps of some node it
names that node and why, never a verdict from a part of the job. It must not decide
when (monitor/act.py) nor read the analyzer's text itself (flightrec.verdict_of).
"""
from __future__ import annotations

import contextlib
import json
import os
import time

from primus_runner.diagnose.bundle import private_text
from primus_runner.diagnose.summary import rank_list
from primus_runner.monitor import flightrec

GATHER_WAIT_S = 30.0                         # for the other nodes' bundles (diagnose gather)
MARK_WAIT_S = flightrec.DUMP_WAIT_S + 15.0   # then for their dumps (a node's own wait, and a margin)
JOB_DIR = "flight-recorder-all-nodes"        # in node 0's bundle: a link per rank's dump
JOB_OUTPUT = "flight-recorder-all-nodes.txt"
HEAD = "flight recorder, all nodes: "


def read_mark(bundle: str) -> dict[str, object] | None:
    """BUNDLE's flight-recorder.json; None when there is none (or it cannot be read)."""
    try:
        with open(os.path.join(bundle, flightrec.MARK_FILE), encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def wait_marks(bundles: dict[int, str], wait_s: float = MARK_WAIT_S) -> dict[int, dict[str, object] | None]:
    """Each bundle's flight-recorder.json once done, or as it is after WAIT_S seconds.
    A bundle with none at all has no flight-recorder step coming (it is written before
    the bundle's summary.json): not waited for."""
    end = time.monotonic() + wait_s
    while True:
        marks = {node: read_mark(bundle) for node, bundle in bundles.items()}
        if all(m is None or m.get("done") for m in marks.values()) or time.monotonic() >= end:
            return marks
        time.sleep(0.5)


def dumps_in(bundle: str) -> dict[int, str]:
    """{global rank: its dump} in BUNDLE's flight-recorder/."""
    directory = os.path.join(bundle, flightrec.BUNDLE_DIR)
    found: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            rank = name[len(flightrec.BUNDLE_PREFIX):]
            if name.startswith(flightrec.BUNDLE_PREFIX) and rank.isdigit():
                found[int(rank)] = os.path.join(directory, name)
    return found


def _ints(value: object) -> list[int]:
    return [v for v in value if isinstance(v, int)] if isinstance(value, list) else []


def why_none(node: int, bundle: str | None, mark: dict[str, object] | None, wait_s: float) -> str:
    """Why NODE's dumps are not there (pure): its bundle, its mark (flight-recorder.json)."""
    if bundle is None:
        return (f"node {node}: no bundle of this hang found beside node 0's log after {GATHER_WAIT_S:.0f} s "
                "(logs not on a shared filesystem?)")
    if mark is None:
        return f"node {node}: its monitor took no flight-recorder dump (its verdict was not a hang, mismatch or wait)"
    if not mark.get("done"):
        return f"node {node}: its dumps were not in its bundle {wait_s:.0f} s after it was found"
    asked = _ints(mark.get("asked"))
    if not asked:
        return f"node {node}: no live rank to ask"
    problems = mark.get("problems")
    why = "; ".join(f"rank {r}: {v}" for r, v in problems.items()) if isinstance(problems, dict) else ""
    return f"node {node}: no dump ({why or 'none copied'})"


def job_line(nodes: int, bundles: dict[int, str], marks: dict[int, dict[str, object] | None],
             dumps: dict[int, dict[int, str]], verdict: str, output: str, wait_s: float = MARK_WAIT_S) -> str:
    """The job-wide line (pure): VERDICT (flightrec.verdict_of, "" when not run) of the
    DUMPS ({node: {rank: file}}) of every node, else which nodes' dumps are missing."""
    none = [n for n in range(nodes) if not dumps.get(n)]
    if none:
        whys = [why_none(n, bundles.get(n), marks.get(n), wait_s) for n in none]
        have = [n for n in range(nodes) if dumps.get(n)]
        seen = f"; dumps found from node(s) {rank_list(have)} only" if have else ""
        return (f"{HEAD}no job-wide verdict: no dumps from node(s) {rank_list(none)} ({'; '.join(whys)}){seen}; "
                "the analyzer needs every node's dumps (each node's own line judges its ranks alone)")
    ranks = sorted(r for found in dumps.values() for r in found)
    absent = []
    for node, mark in sorted(marks.items()):
        lost = sorted(set(_ints((mark or {}).get("asked"))) - set(dumps.get(node, {})))
        if lost:
            absent.append(f"rank(s) {rank_list(lost)} (node {node})")
    note = f"; no dump from {', '.join(absent)}" if absent else ""
    return (f"{HEAD}torch's analyzer (fr_trace) on the dumps of rank(s) {rank_list(ranks)} from node(s) "
            f"{rank_list(range(nodes))}: {verdict}{note}; its output: {output}")


def link_dumps(dumps: dict[int, dict[int, str]], directory: str) -> None:
    """One relative symlink per rank's dump in DIRECTORY (fr-rank-<R>; a rank dumped by
    two nodes: the lower node's)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    for node in sorted(dumps, reverse=True):
        for rank, path in dumps[node].items():
            link = os.path.join(directory, f"{flightrec.BUNDLE_PREFIX}{rank}")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(link)
            os.symlink(os.path.relpath(path, directory), link)


def job_flight_recorder(nodes: int, bundles: dict[int, str], own: str, python: str,
                        wait_s: float = MARK_WAIT_S) -> str:
    """Node 0: every node's dumps (BUNDLES: {node: its bundle}, OWN: node 0's) analysed
    together with PYTHON's torch; the line (without the monitor's prefix)."""
    everyone = bundles | {0: own}  # node 0's: the one just written
    marks = wait_marks(everyone, wait_s)
    dumps = {node: dumps_in(bundle) for node, bundle in everyone.items()}
    output = os.path.join(own, JOB_OUTPUT)
    if any(not dumps.get(n) for n in range(nodes)):
        return job_line(nodes, everyone, marks, dumps, "", output, wait_s)
    directory = os.path.join(own, JOB_DIR)
    try:
        link_dumps(dumps, directory)
    except OSError as error:
        return f"{HEAD}no job-wide verdict: cannot link the dumps into {directory} ({error.strerror})"
    text, code = flightrec.analyze(python, directory)
    with contextlib.suppress(OSError):
        private_text(output, text)
    return job_line(nodes, everyone, marks, dumps, flightrec.verdict_of(text, code), output, wait_s)
