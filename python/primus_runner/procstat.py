"""What the kernel says about one rank, read from /proc without touching the rank.

Owns the parsing (pure functions) and the reading of a rank's main thread:
its scheduler state (``R`` running, ``S`` sleeping, ``D`` disk wait, ``T``
stopped, ``t`` stopped by a debugger, ``Z`` zombie), the kernel function it
sleeps in (its wait channel), its CPU time and context switches, and the
process's I/O counters. Reading these files never stops nor signals the rank
(proc(5)); the wait channel needs the same access as reading its memory maps.
It must not decide anything (python/primus_runner/monitor/verdicts.py does).
"""
from __future__ import annotations

import os

from primus_runner.records import dataclass

# Wait channels of a thread blocked until another thread or process answers:
# a futex (a condition variable: gloo's and NCCL's work.wait(), a store wait,
# a lock), a poll or select on descriptors (a socket, a pipe). Sleeping
# (hrtimer_nanosleep: time.sleep), disk I/O and running are not waits.
_WAIT_CHANNELS = ("futex", "ep_poll", "do_epoll_wait", "do_sys_poll", "do_select", "poll_schedule_timeout",
                  "core_sys_select", "sk_wait_data", "unix_stream_read", "pipe_read", "inet_csk_accept")
STOPPED_STATES = ("T", "t")


@dataclass(frozen=True)
class Sample:
    """One look at a rank's main thread: the kernel's view, no stack."""

    state: str          # one letter of proc(5)'s state field
    cpu_ticks: int      # user + system time of the main thread, in clock ticks
    switches: int       # voluntary + involuntary context switches of the main thread (-1: not read)
    io_bytes: int       # the process's rchar + wchar (-1: not readable, or not read)
    wchan: str          # the kernel function the main thread sleeps in ("" when running or unknown)

    @property
    def stopped(self) -> bool:
        return self.state in STOPPED_STATES

    @property
    def waiting(self) -> bool:
        """Blocked until something else answers (see _WAIT_CHANNELS)."""
        return self.state == "S" and self.wchan.startswith(_WAIT_CHANNELS)

    def moved_since(self, other: Sample) -> bool:
        """Any of CPU time, context switches or I/O advanced since OTHER (a counter
        one of the two did not read does not count)."""
        return (self.cpu_ticks != other.cpu_ticks
                or (self.switches >= 0 and other.switches >= 0 and self.switches != other.switches)
                or (self.io_bytes >= 0 and other.io_bytes >= 0 and self.io_bytes != other.io_bytes))


def parse_stat(text: str) -> tuple[str, int]:
    """(state, utime + stime) of a /proc/.../stat line; the command name may hold
    spaces and parentheses, so the fields are counted from its last ')' (pure)."""
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); utime and stime are fields 14 and 15.
    return rest[0], int(rest[11]) + int(rest[12])


def parse_switches(text: str) -> int:
    """voluntary + nonvoluntary context switches of a /proc/.../status text (pure)."""
    total = 0
    for line in text.splitlines():
        if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
            total += int(line.split(":", 1)[1])
    return total


def parse_io(text: str) -> int:
    """rchar + wchar of a /proc/PID/io text, -1 when they are missing (pure)."""
    values = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("rchar", "wchar") and value.strip().isdigit():
            values[key] = int(value)
    return values["rchar"] + values["wchar"] if len(values) == 2 else -1


def parse_environ(data: bytes) -> dict[str, str]:
    """The variables of a /proc/PID/environ (NUL-separated NAME=VALUE) (pure);
    bytes that are not UTF-8 are kept as surrogate escapes, as os.environ does."""
    env: dict[str, str] = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name:
            env[name.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return env


def parse_parent(text: str) -> tuple[str, int]:
    """(command name, parent pid) of a /proc/PID/stat line (pure); the name may
    hold spaces and parentheses, so the fields are counted from its last ')'."""
    name = text[text.index("(") + 1:text.rindex(")")]
    return name, int(text[text.rindex(")") + 2:].split()[1])


def read_environ(pid: int, proc: str = "/proc") -> dict[str, str] | None:
    """PID's environment as it started (None: gone, or not ours to read)."""
    try:
        with open(f"{proc}/{pid}/environ", "rb") as handle:
            return parse_environ(handle.read())
    except OSError:
        return None


def read_parent(pid: int, proc: str = "/proc") -> int:
    """PID's parent pid (0: gone)."""
    try:
        with open(f"{proc}/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return parse_parent(handle.read())[1]
    except (OSError, ValueError, IndexError):
        return 0


def _read(path: str) -> str:
    """The file's text: three system calls (open, read, close), not the seven of a
    buffered open() (the monitor reads four files per rank each second)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 8192).decode("ascii", "replace")
    finally:
        os.close(fd)


def read_sample(pid: int, proc: str = "/proc", last: Sample | None = None) -> Sample | None:
    """The main thread of PID now; None when the process is gone. With LAST (the
    sample before) and CPU time that moved since it, the context switches and the
    I/O counters are not read (-1): the rank moved either way, and a node of 32
    or 64 computing ranks costs half the reads."""
    task = f"{proc}/{pid}/task/{pid}"
    try:
        state, ticks = parse_stat(_read(f"{task}/stat"))
        cheap = last is not None and last.cpu_ticks != ticks
        switches = -1 if cheap else parse_switches(_read(f"{task}/status"))
    except (OSError, ValueError, IndexError):
        return None
    io_bytes = -1
    if not cheap:
        try:
            io_bytes = parse_io(_read(f"{proc}/{pid}/io"))
        except OSError:
            io_bytes = -1
    wchan = ""
    if state == "S":  # the wait channel matters only to a sleeping thread (Sample.waiting)
        try:
            wchan = _read(f"{task}/wchan").strip()
        except OSError:
            wchan = ""
    return Sample(state, ticks, switches, io_bytes, "" if wchan == "0" else wchan)


def alive(pid: int, proc: str = "/proc") -> bool:
    """True while PID runs (a zombie or no such process counts as gone)."""
    try:
        state, _ = parse_stat(_read(f"{proc}/{pid}/stat"))
    except (OSError, ValueError, IndexError):
        return False
    return state not in ("Z", "X")
