"""Read one process's stacks: py-spy (``--native`` where it works), else a faulthandler dump.

Owns the py-spy call and the fallback: when py-spy cannot attach (no ptrace: a
container without CAP_SYS_PTRACE, yama ptrace_scope), the rank's faulthandler,
registered for ``FAULTHANDLER_SIGNAL`` by ``runner/helpers/pystartup/sitecustomize.py``
(the worker wrapper puts it on the path), writes its stacks to the file named in
the rank's ``PRIMUS_FAULTHANDLER_FILE``. It must not choose which processes to read
(python/primus_runner/diagnose/runs.py) nor summarise (summary.py).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

from primus_runner.diagnose.frames import Thread, parse_faulthandler, parse_pyspy_json

# SIGURG: its default action is to ignore it (signal(7)), so a process that did not
# register the handler is not harmed; SIGUSR1/SIGUSR2 are Slurm's notices here.
FAULTHANDLER_SIGNAL = signal.SIGURG
DUMP_TIMEOUT_S = 30.0


def pyspy_program() -> str | None:
    """py-spy beside the helper's interpreter (the project's .venv), else on PATH."""
    here = os.path.dirname(sys.executable)
    return shutil.which("py-spy", path=os.pathsep.join([here, os.environ.get("PATH", "")]))


def _run_pyspy(program: str, pid: int, native: bool, nonblocking: bool = False,
               timeout: float = DUMP_TIMEOUT_S) -> tuple[list[Thread], str]:
    cmd = [program, "dump", "--json", "--pid", str(pid)] + (["--native"] if native else [])
    if nonblocking:
        cmd.append("--nonblocking")  # read the memory without pausing the process
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return [], f"py-spy did not answer within {timeout:.0f} s"
    except OSError as exc:
        return [], f"py-spy cannot run: {exc}"
    threads = parse_pyspy_json(done.stdout) if done.returncode == 0 else []
    if threads:
        return threads, ""
    return [], f"py-spy: {pyspy_error(done.stderr) or f'exit code {done.returncode}'}"


def pyspy_error(stderr: str) -> str:
    """The telling part of py-spy's error output: its "Error:" line and the innermost
    cause ("Permission denied (os error 13)"), without the backtrace (pure)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    error = next((line for line in lines if line.startswith("Error:")), lines[0] if lines else "")
    causes = []
    if "Caused by:" in lines:
        for line in lines[lines.index("Caused by:") + 1:]:
            head, _, rest = line.partition(": ")
            if not head.isdigit():
                break
            causes.append(rest)
    return f"{error} ({causes[-1]})" if causes else error


def faulthandler_dump(pid: int, path: str, wait_s: float = 5.0) -> tuple[list[Thread], str]:
    """Ask the rank for a faulthandler dump into PATH; its threads, or why not."""
    if not path or not os.path.isfile(path):
        return [], "faulthandler: no file (the rank did not start through run_worker.sh, or not in Python)"
    start = os.path.getsize(path)
    try:
        os.kill(pid, FAULTHANDLER_SIGNAL)
    except OSError as exc:
        return [], f"faulthandler signal: {exc.strerror}"
    deadline = time.monotonic() + wait_s
    size = start
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = os.path.getsize(path)
        if now > start and now == size:  # grown, then stable for one poll
            break
        size = now
    with open(path, "rb") as handle:
        handle.seek(start)
        text = handle.read().decode("utf-8", "replace")
    threads = parse_faulthandler(text)
    return (threads, "") if threads else ([], f"faulthandler: no dump within {wait_s:.0f} s")


def read_stacks(pid: int, faulthandler_file: str = "", native: bool = True) -> tuple[list[Thread], str, str]:
    """(threads, how they were read, what failed on the way). NATIVE: try ``--native``
    first (about 2 s per rank of a torch process: the symbols of libtorch)."""
    program = pyspy_program()
    problems: list[str] = []
    if program is None:
        problems.append("py-spy not found (pip install py-spy, a dependency in pyproject.toml)")
    else:
        for with_native in (True, False) if native else (False,):
            threads, error = _run_pyspy(program, pid, with_native)
            if threads:
                return threads, "py-spy --native" if with_native else "py-spy", "; ".join(problems)
            problems.append(error + (" (with --native)" if with_native else ""))
    threads, error = faulthandler_dump(pid, faulthandler_file)
    if threads:
        return threads, "faulthandler (py-spy could not attach)", "; ".join(problems)
    problems.append(error)
    return [], "", "; ".join(problems)


def sample_stacks(pid: int, faulthandler_file: str = "") -> tuple[list[Thread], str]:
    """A light look at PID's stacks for the run monitor: py-spy ``--nonblocking``
    (the rank is not paused; ~15 ms), else the faulthandler dump (a signal the rank
    handles: its context switches move). (threads, how: "py-spy", "faulthandler" or "")."""
    program = pyspy_program()
    if program is not None:
        threads, _ = _run_pyspy(program, pid, native=False, nonblocking=True, timeout=10.0)
        if threads:
            return threads, "py-spy"
    threads, _ = faulthandler_dump(pid, faulthandler_file, wait_s=2.0)
    return threads, "faulthandler" if threads else ""
