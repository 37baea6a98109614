"""Every rank's output, written by the run monitor: no writer process per rank.

Each torchrun worker runs through runner/helpers/run_worker.sh, which gives the
rank a pipe as its stdout and stderr, keeps the pipe's read end open for the
rank's whole life (so a rank never dies of EPIPE) and notes
``$PRIMUS_RC_DIR/writer.<RANK>``:

    WRAPPER_PID READ_FD DONE_FD LOCAL_RANK FILE

FILE is the rank's file under ``<log>.ranks/`` (torchrun's tee echoes it to the
console and the log). This module's thread finds each new record within
``SCAN_S``, opens the pipe through ``/proc/WRAPPER_PID/fd/READ_FD`` and copies
every line into FILE as it comes, whole lines only (a line's start is held until
its newline or ``LINE_WAIT_S`` of quiet). At the pipe's end
(the rank and whatever it left behind closed it) it writes ``d`` into the
wrapper's DONE pipe: the wrapper reports the rank gone only once every line is
in the file (or after 2 s when nobody answers).

A run monitor killed (kill -9, the OOM killer) is restarted by the launcher
(runner/lib/watchdog.sh); meanwhile the ranks' prints wait in their pipes, and
the new monitor takes every pipe over from the records: at most the one read the
dead monitor had in hand is lost. A file that cannot be written (a full disk)
never blocks the rank: python/primus_runner/launch/logwriter.py's ``Writer``
decides that (one warning per launch, PRIMUS_LOG_ONCE; a rank the console shows,
PRIMUS_CONSOLE_RANKS, then sends its lines to the console prefixed
``[default<LOCAL_RANK>]:``, as torchrun would).

The record's parsing and the console choice are pure; the thread does the I/O.
"""
from __future__ import annotations

import contextlib
import os
import select
import threading
import time

from primus_runner import log
from primus_runner.launch.logwriter import CHUNK, Writer
from primus_runner.monitor.procstat import alive
from primus_runner.records import dataclass

SCAN_S = 0.05   # seconds between two looks for new records (a rank's first line waits at most this long)
DONE = b"d\n"   # what the wrapper reads on its DONE pipe: every line of its rank is written
LINE_WAIT_S = 0.1   # seconds a line's start waits for its newline (a prompt has none)


@dataclass(frozen=True)
class Source:
    """One rank's pipe, as its wrapper noted it."""

    rank: int
    wrapper: int
    read_fd: int
    done_fd: int
    local_rank: int
    path: str


def parse(rank: str, text: str) -> Source | None:
    """The record of ``writer.<RANK>`` (None when it is not one, e.g. half written) (pure)."""
    if not text.endswith("\n"):
        return None
    parts = text[:-1].split(" ", 4)
    if len(parts) != 5 or not rank.isdigit() or not all(p.isdigit() for p in parts[:4]) or not parts[4]:
        return None
    return Source(int(rank), int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3]), parts[4])


def whole_lines(pending: bytes, chunk: bytes) -> tuple[bytes, bytes]:
    """(what to write now: PENDING + CHUNK up to its last newline, the rest to hold) (pure).
    A rank's `print` under `python -u` writes the text and the newline in two
    writes, and torchrun's tee, reading the rank's file line by line, would echo
    the half line and let another rank's line in between."""
    data = pending + chunk
    cut = data.rfind(b"\n") + 1
    if not cut and len(data) >= CHUNK:
        return data, b""  # a line longer than a chunk goes on as it comes
    return data[:cut], data[cut:]


def shown(console_ranks: str, local_rank: int) -> bool:
    """True when the console shows LOCAL_RANK (PRIMUS_CONSOLE_RANKS: "all" or a comma list) (pure)."""
    return console_ranks == "all" or str(local_rank) in console_ranks.split(",")


class _RankWriter(Writer):
    """logwriter's Writer whose one warning is a line of the monitor's (its stderr)."""

    def _warn(self, text: str) -> None:
        if self.claim_warning():
            with contextlib.suppress(OSError, ValueError):
                log.warn(text)


class Stream:
    """One rank's pipe being copied."""

    def __init__(self, source: Source, fd: int, done: int | None, writer: Writer) -> None:
        self.source = source
        self.fd = fd
        self.done = done
        self.writer = writer
        self.pending = b""
        self.data_at = 0.0

    def take(self, chunk: bytes, now: float) -> None:
        out, self.pending = whole_lines(self.pending, chunk)
        if out:
            self.writer.feed(out)
        self.data_at = now

    def flush(self) -> None:
        if self.pending:
            self.writer.feed(self.pending)
            self.pending = b""

    def close(self) -> None:
        """The pipe ended: the last bytes written, the wrapper told, everything closed."""
        self.flush()
        self.writer.finish()
        if self.done is not None:
            with contextlib.suppress(OSError):
                os.write(self.done, DONE)
            os.close(self.done)
        if self.writer.log_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.writer.log_fd)
        os.close(self.fd)


def open_source(source: Source, console_ranks: str, once: str | None) -> Stream | None:
    """The stream of SOURCE's pipe, or None when its wrapper is gone."""
    try:
        fd = os.open(f"/proc/{source.wrapper}/fd/{source.read_fd}", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    done: int | None
    try:
        done = os.open(f"/proc/{source.wrapper}/fd/{source.done_fd}", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        done = None
    failed: OSError | None = None
    log_fd: int | None = None
    try:
        log_fd = os.open(source.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as err:
        failed = err
    fallback = "/proc/self/fd/1" if shown(console_ranks, source.local_rank) else None
    writer = _RankWriter(log_fd, source.path, None, fallback, f"[default{source.local_rank}]:".encode(), None, once)
    if failed is not None:
        writer.log_failed(failed)
    return Stream(source, fd, done, writer)


class RankOutput(threading.Thread):
    """The thread that writes every rank's output of this node's run (see the module)."""

    def __init__(self, rc_dir: str, console_ranks: str = "", once: str | None = None) -> None:
        super().__init__(name="rank-output", daemon=True)
        self.rc_dir = rc_dir
        self.console_ranks = console_ranks
        self.once = once
        self.streams: dict[int, Stream] = {}      # read fd -> stream
        self.taken: set[tuple[int, int]] = set()  # (wrapper, read fd) taken over by this monitor
        self.marks: dict[str, tuple[int, int, int]] = {}
        self.ending = threading.Event()

    def stop(self, wait: float = 5.0) -> None:
        """Copy what the pipes still hold, then end (the launch is over)."""
        self.ending.set()
        self.join(wait)

    def scan(self) -> None:
        """Take over every pipe of a new record whose wrapper runs."""
        try:
            entries = [e for e in os.scandir(self.rc_dir) if e.name.startswith("writer.")]
        except OSError:
            return
        for entry in entries:
            try:
                info = entry.stat()
            except OSError:
                continue
            mark = (info.st_ino, info.st_mtime_ns, info.st_size)
            if self.marks.get(entry.name) == mark:
                continue
            try:
                with open(entry.path, encoding="utf-8") as handle:
                    source = parse(entry.name.split(".", 1)[1], handle.read())
            except (OSError, UnicodeDecodeError):
                continue
            if source is None:
                continue  # half written: read again at the next look
            self.marks[entry.name] = mark
            key = (source.wrapper, source.read_fd)
            if key in self.taken or not alive(source.wrapper):
                continue
            stream = open_source(source, self.console_ranks, self.once)
            if stream is not None:
                self.taken.add(key)
                self.streams[stream.fd] = stream

    def copy_ready(self, timeout: float) -> bool:
        """Copy what every readable pipe holds; True when something was read."""
        if not self.streams:
            self.ending.wait(timeout)
            return False
        ready, _, _ = select.select(list(self.streams), [], [], timeout)
        now = time.monotonic()
        for fd in ready:
            stream = self.streams[fd]
            try:
                chunk = os.read(fd, CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                stream.take(chunk, now)
            else:
                del self.streams[fd]
                stream.close()
        return bool(ready)

    def flush_quiet(self) -> None:
        """A line's start held LINE_WAIT_S without its newline goes out as it is (a prompt)."""
        now = time.monotonic()
        for stream in self.streams.values():
            if stream.pending and now - stream.data_at >= LINE_WAIT_S:
                stream.flush()

    def run(self) -> None:
        next_scan = 0.0
        while not self.ending.is_set():
            now = time.monotonic()
            if now >= next_scan:
                self.scan()
                next_scan = now + SCAN_S
            waiting = any(s.pending for s in self.streams.values())
            self.copy_ready(min(SCAN_S, LINE_WAIT_S) if waiting else SCAN_S)
            self.flush_quiet()
        self.scan()
        while self.streams and self.copy_ready(0.0):
            pass
        for stream in list(self.streams.values()):
            stream.flush()
            stream.writer.finish()
