"""The parent-death guard: the run monitor's part that stops a run whose launcher died.

The launcher writes ``done`` to the monitor's pipe before it ends on purpose
(runner/lib/supervise.sh). End of file without it, with the launcher gone,
means the launcher was killed (SIGKILL, the OOM killer): its workload got
SIGTERM from the parent-death signal (python/primus_runner/launch/spawn.py;
torchrun sends it on to every worker). The guard then waits the stop grace
(PRIMUS_KILL_GRACE) for every process of the run and SIGKILLs what is left
(monitor/members.py, the wait every stop shares), and writes the closing
line. The texts are pure functions; ``stop_orphaned_run`` does the rest.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from primus_runner.monitor.members import POLL, kill_after_grace, members
from primus_runner.procstat import alive

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


def stop_orphaned_run(run_id: str, launcher: int, grace: int, say: Callable[[str, str], None]) -> None:
    """The launcher died: wait GRACE seconds for the run to end, SIGKILL the rest, say so."""
    count = len(members(run_id))
    if not count:
        return
    say("WARN", gone_line(launcher, grace, count))
    say("WARN", closing_line(launcher, grace, count, kill_after_grace(grace, run_id)))
