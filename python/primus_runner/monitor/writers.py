"""The ranks' log writers, kept alive by the run monitor.

Each rank's output goes through one log writer (python/primus_runner/launch/logwriter.py,
started by runner/helpers/run_worker.sh), which writes the rank's file under
``<log>.ranks/`` (torchrun's tee echoes that file to the console and the log).
The wrapper keeps the read end of the rank's output pipe open and notes
``$PRIMUS_RC_DIR/writer.<RANK>``: ``WRITER_PID WRAPPER_PID READ_FD FILE``. When a
writer dies (kill -9, the OOM killer) while its wrapper lives, the rank's prints
wait in the pipe; this module starts a new writer on the same pipe
(``/proc/WRAPPER/fd/READ_FD``), appending to the same file, and says so. At
most the one read the dead writer had in hand is lost.

Owns the record's parsing (pure) and the restart; the looking is act.py's.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys

from primus_runner.records import dataclass

LOGWRITER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch", "logwriter.py")


@dataclass(frozen=True)
class WriterRecord:
    rank: int
    writer: int
    wrapper: int
    read_fd: int
    path: str


def parse(rank: str, text: str) -> WriterRecord | None:
    """The record of ``writer.<RANK>`` (None when it is not one) (pure)."""
    parts = text.strip().split(" ", 3)
    if len(parts) != 4 or not rank.isdigit() or not all(p.isdigit() for p in parts[:3]) or not parts[3]:
        return None
    return WriterRecord(int(rank), int(parts[0]), int(parts[1]), int(parts[2]), parts[3])


def records(rc_dir: str) -> list[WriterRecord]:
    found: list[WriterRecord] = []
    try:
        names = [n for n in os.listdir(rc_dir) if n.startswith("writer.")]
    except OSError:
        return found
    for name in names:
        try:
            with open(os.path.join(rc_dir, name), encoding="utf-8") as handle:
                record = parse(name.split(".", 1)[1], handle.read())
        except (OSError, UnicodeDecodeError):
            continue
        if record is not None:
            found.append(record)
    return found


def alive(pid: int) -> bool:
    """True while PID runs (a zombie or no such process counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def restart(record: WriterRecord, rc_dir: str) -> tuple[subprocess.Popen[bytes] | None, str]:
    """A new writer on RECORD's pipe: (the process, "") or (None, why not)."""
    try:
        pipe = os.open(f"/proc/{record.wrapper}/fd/{record.read_fd}", os.O_RDONLY)
    except OSError as exc:
        return None, f"its pipe cannot be opened ({exc.strerror})"
    env = {k: v for k, v in os.environ.items() if k != "PRIMUS_RUN_ID"}
    try:
        argv = [sys.executable, "-I", "-S", LOGWRITER, "--log", record.path, "--lines", "--warn-fd", "2"]
        process = subprocess.Popen(argv, stdin=pipe, stdout=subprocess.DEVNULL, env=env)
    except OSError as exc:
        return None, f"a new writer cannot start ({exc.strerror})"
    finally:
        os.close(pipe)
    path = os.path.join(rc_dir, f"writer.{record.rank}")
    with contextlib.suppress(OSError), open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{process.pid} {record.wrapper} {record.read_fd} {record.path}\n")
    return process, ""
