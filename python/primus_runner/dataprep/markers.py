"""The completion and failure markers of prepared data: JSON written under a
temporary name, fsynced and renamed into place (never seen half-written), and
the checks that decide whether a marker counts (the package doc gives the
protocol).
"""
from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from typing import Any

from primus_runner.dataprep import indexed_dataset as idx
from primus_runner.dataprep.plan import DataPlan

STALE_FAILURE_GRACE_SECONDS = 60.0


def read_marker(path: str) -> dict[str, Any] | None:
    """A marker's JSON, or None when absent or unreadable (a marker is always
    renamed into place whole, so unreadable means foreign or damaged)."""
    try:
        with open(path, "rb") as stream:
            data = json.loads(stream.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_marker(path: str, content: Mapping[str, Any]) -> None:
    """Write JSON to ``path`` atomically (temporary name, fsync, rename)."""
    tmp = f"{path}.tmp-{socket.gethostname()}-{os.getpid()}"
    from primus_runner.masking import mask_text

    with open(tmp, "w", encoding="utf-8") as stream:
        # A secret value (e.g. a token inside a data URL) is never written (docs/security.md "Secrets").
        stream.write(mask_text(json.dumps(content, indent=1, sort_keys=True)))
        stream.write("\n")
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")


def remove_file(path: str) -> bool:
    try:
        os.remove(path)
        return True
    except FileNotFoundError:
        return False


def done_is_valid(plan: DataPlan, marker: Mapping[str, Any] | None, key: str) -> str | None:
    """None when ``marker`` is a completion marker for ``key`` whose files pass
    the size check; else the reason it cannot be used."""
    if marker is None:
        return "no completion marker"
    if marker.get("key") != key:
        return "completion marker from a different corpus, split or tokenizer"
    for prefix in plan.prefixes:
        problem = idx.check_sizes(prefix)
        if problem:
            return problem
    return None


def failure_is_current(marker: Mapping[str, Any], key: str, my_run: str | None, started: float) -> bool:
    """True when a failure marker belongs to this launch (see the module doc)."""
    if marker.get("key") != key:
        return False
    theirs = marker.get("run_id")
    if my_run and theirs:
        return bool(theirs == my_run)
    created = marker.get("created")
    return isinstance(created, (int, float)) and created >= started - STALE_FAILURE_GRACE_SECONDS
