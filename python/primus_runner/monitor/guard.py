"""The parent-death guard: the run monitor's part that stops a run whose launcher died.

The launcher writes ``done`` to the monitor's pipe before it ends on purpose
(runner/lib/supervise.sh). End of file without it, with the launcher gone,
means the launcher was killed (SIGKILL, the OOM killer): its workload got
SIGTERM from the parent-death signal (python/primus_runner/launch/spawn.py;
torchrun sends it on to every worker). The guard then waits the stop grace
(PRIMUS_KILL_GRACE) for every process of the run (``PRIMUS_RUN_ID`` in its
environment, found even after it was re-parented), SIGKILLs what is left and
writes the closing line. The texts are pure functions; ``stop_orphaned_run``
does the looking and the killing.
"""
from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

from primus_runner.diagnose.runs import scan
from primus_runner.monitor.procstat import alive

POLL = 0.1  # seconds between two looks at the run's processes during the grace
GONE_WAIT = 10.0  # seconds a launcher that closed its pipe without "done" may take to be gone


def gone_line(launcher: int, grace: int, count: int) -> str:
    """The line that says the launcher is gone and what happens now (pure)."""
    return (f"the launcher (pid {launcher}) is gone (killed: SIGKILL or the OOM killer; sender unknown): "
            f"its workload got SIGTERM; SIGKILL after {grace} s to what is left of {count} process(es).")


def closing_line(launcher: int, grace: int, count: int, killed: str) -> str:
    """The closing line of a run whose launcher died (pure)."""
    text = (f"stop: launcher pid {launcher} died; {count} process(es) of the run stopped "
            "(SIGTERM from the parent-death signal)")
    if killed:
        return text + f", killed after the {grace} s grace: {killed}."
    return text + f" and all ended within the {grace} s grace."


launcher_alive = alive  # True while the pid runs (a zombie counts as gone)


def launcher_ended(pid: int, limit: float = GONE_WAIT) -> bool:
    """True once PID is gone, looked at until LIMIT seconds have passed.

    The kernel closes a dying process's files before it becomes a zombie: the
    end of file on the launcher's pipe can come while /proc still shows the
    launcher running (seen on a loaded host), so one look is not enough.
    """
    deadline = time.monotonic() + limit
    while launcher_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)
    return True


def members(run_id: str) -> list[int]:
    """Every live process of the run on this node, this one excluded."""
    run = scan().get(run_id)
    if run is None:
        return []
    own = os.getpid()
    return sorted(pid for pid in run.processes if pid != own and alive(pid))


def _describe(pids: list[int]) -> str:
    parts = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
                comm = handle.read().strip()
        except OSError:
            comm = "?"
        parts.append(f"{pid}({comm})")
    return " ".join(parts)


def stop_orphaned_run(run_id: str, launcher: int, grace: int, say: Callable[[str, str], None]) -> None:
    """The launcher died: wait GRACE seconds for the run to end, SIGKILL the rest, say so."""
    found = members(run_id)
    if not found:
        return
    count = len(found)
    say("WARN", gone_line(launcher, grace, count))
    deadline = time.monotonic() + grace
    left = found
    while True:
        left = members(run_id)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(POLL)
    killed = ""
    if left:
        killed = _describe(left)
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    say("WARN", closing_line(launcher, grace, count, killed))
