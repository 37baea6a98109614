"""The run's record: what a launch and its run did, as JSON lines for tools to read.

Each node's log ``<dir>/primus-<UTC time>-node<R>.log`` has its record beside it,
``<dir>/primus-<UTC time>-node<R>.events.jsonl``: one JSON object per line, written
by the launcher and the supervisor as things happen, read by ``primus-cli report``
and by node 0 when it compares the nodes. Every object has

- ``"t"``: when it happened (Unix time, seconds, float),
- ``"event"``: what it is (below),
- ``"node"``: the node rank (int) and ``"host"``: the host name (str),

plus the event's own fields:

- ``phase``: one launch phase, ``"phase"`` (plan, layers, hooks, verdict, spawn,
  rendezvous, first_output), ``"start"`` and ``"end"`` (Unix times);
- ``verdict``: a run monitor verdict, ``"verdict"`` (hang, stopped, mismatch,
  straggler, ...), ``"ranks"`` (list of global ranks), ``"text"`` (the line printed);
- ``straggler_scores``: ``"scores"``, a mapping of global rank (as a string) to score;
- ``restart``: one restart of the closed loop, ``"attempt"``, ``"reason"``,
  ``"left_out"`` (list of hosts), ``"lost_s"``;
- ``end``: the run's end, ``"exit_code"``.

A reader skips a line it cannot parse (a node killed mid-write) and an event it does
not know, so new events never break an old reader. Standard library only: this runs
inside a user's container, whose Python may have nothing else.
"""
from __future__ import annotations

import json
import os
import socket
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs milliseconds of every launch
    from collections.abc import Iterator
    from typing import Any

SUFFIX = ".events.jsonl"


def record_path(log_file: str) -> str:
    """The record beside LOG_FILE: its name with ``.log`` replaced (or added)."""
    stem = log_file[:-4] if log_file.endswith(".log") else log_file
    return stem + SUFFIX


def make_event(event: str, node: int, host: str, when: float, **fields: Any) -> dict[str, Any]:
    """One event as a dict, the common keys first (pure)."""
    out: dict[str, Any] = {"t": when, "event": event, "node": node, "host": host}
    out.update(fields)
    return out


def append(log_file: str, event: str, **fields: Any) -> None:
    """Append one event to LOG_FILE's record (one ``write`` on an ``O_APPEND`` file, so
    the lines of several writers never interleave). ``node`` and ``host`` default to
    ``NODE_RANK`` and this host; ``t`` to now."""
    node = int(fields.pop("node", os.environ.get("NODE_RANK", "0") or 0))
    host = str(fields.pop("host", socket.gethostname()))
    when = float(fields.pop("t", time.time()))
    line = json.dumps(make_event(event, node, host, when, **fields), sort_keys=False) + "\n"
    fd = os.open(record_path(log_file), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def parse_lines(lines: Iterator[str] | list[str]) -> list[dict[str, Any]]:
    """The events of a record's lines; a line that is not a JSON object with ``event``
    and ``t`` is skipped (pure)."""
    out: list[dict[str, Any]] = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and isinstance(item.get("event"), str) and isinstance(item.get("t"), (int, float)):
            out.append(item)
    return out


def read(path: str) -> list[dict[str, Any]]:
    """The events of the record at PATH (a missing file reads as none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return parse_lines(list(handle))
    except FileNotFoundError:
        return []
