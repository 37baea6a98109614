"""The processes of one run on this node, read from /proc, and the grace that ends them.

A run's processes carry ``PRIMUS_RUN_ID`` in their environment
(runner/lib/supervise.sh gives it to the workload), so they are found even
after they were re-parented; the descendants of the run's own process count
too. In run mode torchrun a rank is the child of a ``run_worker.sh`` whose pid
is in ``$PRIMUS_RC_DIR/worker.<RANK>`` (``failed-<RANK>``: that rank ended);
in run mode single the run's own process is the rank. Reading never signals;
``kill_after_grace`` is the one wait-then-SIGKILL of every stop: the
launcher's (monitor/supervise.py) and the parent-death guard's (monitor/guard.py).
"""
from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable

from primus_runner.procstat import alive, parse_parent

POLL = 0.1  # seconds between two looks at the run's processes during a grace


def parent_table(proc: str = "/proc") -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command name) of every process now."""
    table: dict[int, tuple[int, str]] = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", encoding="ascii", errors="replace") as handle:
                name, ppid = parse_parent(handle.read())
        except (OSError, ValueError, IndexError):
            continue
        table[int(entry)] = (ppid, name)
    return table


def descendants(root: int, table: dict[int, tuple[int, str]]) -> list[int]:
    """ROOT's descendants in TABLE, breadth first (pure)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    queue = [root]
    while queue:
        for pid in sorted(children.get(queue.pop(0), [])):
            found.append(pid)
            queue.append(pid)
    return found


def _carries(pid: int, marker: bytes, proc: str) -> bool:
    try:
        with open(f"{proc}/{pid}/environ", "rb") as handle:
            return marker in handle.read().split(b"\0")
    except OSError:
        return False


def members(run_id: str, root: int = 0, proc: str = "/proc") -> list[int]:
    """Every live process of the run: PRIMUS_RUN_ID=RUN_ID in its environment,
    or ROOT and its descendants. This process and its parent never count."""
    table = parent_table(proc)
    marker = f"PRIMUS_RUN_ID={run_id}".encode()
    found = {pid for pid in table if _carries(pid, marker, proc)}
    if root and root in table:
        found.add(root)
        found.update(descendants(root, table))
    found -= {os.getpid(), os.getppid()}
    return sorted(pid for pid in found if alive(pid, proc))


def wrappers(rc_dir: str) -> dict[int, int]:
    """RANK -> the pid of its run_worker.sh, from RC_DIR/worker.<RANK>."""
    found: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in os.listdir(rc_dir):
            rank = entry.removeprefix("worker.")
            if not entry.startswith("worker.") or not rank.isdigit():
                continue
            try:
                with open(os.path.join(rc_dir, entry), encoding="ascii", errors="replace") as handle:
                    pid = handle.readline().strip()
            except OSError:
                continue
            if pid.isdigit():
                found[int(rank)] = int(pid)
    return found


def rank_pids(mode: str, run_pid: int, rc_dir: str, proc: str = "/proc") -> list[int]:
    """The processes that are this node's ranks now (run mode single: the run's own)."""
    if mode == "single":
        return [run_pid] if alive(run_pid, proc) else []
    ours = set(wrappers(rc_dir).values())
    if not ours:
        return []
    return sorted(pid for pid, (ppid, _) in parent_table(proc).items() if ppid in ours and alive(pid, proc))


def running_ranks(mode: str, run_pid: int, rc_dir: str, rank: int, proc: str = "/proc") -> list[int]:
    """The global ranks of this node still running, in order (single: RANK)."""
    if mode == "single":
        return [rank] if alive(run_pid, proc) else []
    return sorted(r for r, pid in wrappers(rc_dir).items()
                  if not os.path.exists(os.path.join(rc_dir, f"failed-{r}")) and alive(pid, proc))


def describe(pids: Iterable[int], proc: str = "/proc") -> str:
    """'pid(name) ...' for a log line."""
    parts = []
    for pid in pids:
        try:
            with open(f"{proc}/{pid}/comm", encoding="utf-8", errors="replace") as handle:
                comm = handle.read().strip()
        except OSError:
            comm = "?"
        parts.append(f"{pid}({comm})")
    return " ".join(parts)


def kill_after_grace(grace: float, run_id: str, root: int = 0) -> str:
    """Wait up to GRACE seconds for every process of the run to end, SIGKILL
    what is left; 'pid(name) ...' of those killed, or ''."""
    deadline = time.monotonic() + grace
    while True:
        left = members(run_id, root)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(POLL)
    if not left:
        return ""
    killed = describe(left)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return killed
