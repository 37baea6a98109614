"""The launch's own helper processes, watched by the run monitor: what each one's
death means for the run, and the note the launcher's closing lines repeat.

A helper is given as ``NAME=PID`` in PRIMUS_MONITOR_HELPERS (``;`` between them,
set by runner/lib/watchdog.sh): ``log-writer`` (the launcher's log writer, one
process copying its stdout and stderr, python/primus_runner/launch/logwriter.py).
The parent-death guard is this process itself (monitor/guard.py), watched by the
launcher. The texts are pure functions; the looking is act.py's.
"""
from __future__ import annotations

MEANING = {
    "log-writer": ("the launcher's log writer",
                   "the console and the log lack every line of the launcher, of torchrun and of the ranks from "
                   "then on (the run monitor writes its own lines to the log file directly)"),
}
LOST_OUTPUT = ("log-writer",)


def parse(text: str) -> dict[str, int]:
    """NAME -> pid from ``NAME=PID;NAME=PID`` (unknown names and bad pids dropped) (pure)."""
    out: dict[str, int] = {}
    for item in text.split(";"):
        name, _, pid = item.partition("=")
        if name in MEANING and pid.isdigit():
            out[name] = int(pid)
    return out


def death_line(name: str, pid: int, when: str, ranks_dir: str) -> str:
    """The one line that says which helper died and what it means (pure)."""
    what, meaning = MEANING[name]
    line = f"{what} (pid {pid}) died at {when} (killed: SIGKILL or the OOM killer): {meaning}"
    if name in LOST_OUTPUT:
        line += f"; every rank's full output is in {ranks_dir}/rank-<RANK>.log"
    return line
