"""The container launcher's parent-death guard: stop the container whose launcher died.

Started by runner/lib/container_watch.sh, in a session of its own, as
``python -m primus_runner supervise watch-container RUNTIME NAME LAUNCHER_PID GRACE``,
reading a pipe only the launcher writes: ``client PID`` once it started the
runtime client, ``done`` before it exits on purpose (its own stop removed the
container). End of file without ``done`` means the launcher was killed
(SIGKILL, the OOM killer). The container does not run as the launcher's child
(the runtime does), so it would run on to its end: this stops it as a SIGTERM
to the launcher would, ``RUNTIME stop -t GRACE NAME`` (SIGTERM to the
container's init, which hands it to the inner direct; SIGKILL after GRACE
seconds), ends the runtime client, removes the container and prints the
closing line. The signals that end a process group are ignored here; the
launcher watches this process in turn and starts a new one if it dies.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable

from primus_runner.procstat import alive

CLIENT_WAIT = 5.0    # seconds a client still starting its container may take to end with it
REMOVE_TRIES = 100   # looks at a removal in progress (a removal still lists the container)
REMOVE_POLL = 0.2


def read_pipe(lines: Iterable[str]) -> tuple[bool, int]:
    """(the launcher said ``done``, the client's pid or 0) from the pipe's lines (pure)."""
    client = 0
    for line in lines:
        word = line.rstrip("\n")
        if word == "done":
            return True, client
        if word.startswith("client "):
            pid = word.removeprefix("client ")
            client = int(pid) if pid.isdigit() else 0
    return False, client


def gone_line(launcher: int, name: str, grace: int) -> str:
    """(pure)"""
    return (f"the container launcher (pid {launcher}) is gone (killed: SIGKILL or the OOM killer; sender "
            f"unknown): stopping container {name} (SIGTERM, SIGKILL after {grace} s) and removing it.")


def closing_line(launcher: int, name: str, how: str, end: str) -> str:
    """(pure)"""
    return f"stop: container launcher pid {launcher} died; container {name} {how} {end}."


def _quiet(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False).returncode == 0
    except OSError:
        return False


def stop_container(runtime: str, name: str, launcher: int, grace: int, client: int,
                   say: Callable[[str], None]) -> None:
    """The launcher died: stop the container, end its client, remove it, say so."""
    say(gone_line(launcher, name, grace))
    how = f"stopped within the {grace} s grace"
    if not _quiet([runtime, "stop", "-t", str(grace), name]):
        how = "not running (not created yet, or already ended)"
    # The client ends with its container; one that is still starting it is stopped.
    if client and alive(client):
        deadline = time.monotonic() + CLIENT_WAIT
        while alive(client) and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(OSError):
            os.kill(client, signal.SIGTERM)
    # --rm removes it as the client ends; make sure, and wait until it is gone.
    for _ in range(REMOVE_TRIES):
        _quiet([runtime, "rm", "-f", name])
        if not _quiet([runtime, "container", "inspect", name]):
            break
        time.sleep(REMOVE_POLL)
    end = "and removed"
    if _quiet([runtime, "container", "inspect", name]):
        end = f"; it could not be removed: {os.path.basename(runtime)} rm -f {name}"
    say(closing_line(launcher, name, how, end))


def ignore_group_signals() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
