"""Every output stream of the node's run, written by the run monitor: no writer process.

The launcher's stdout and stderr. runner/lib/launch_log.sh points them at two
pipes whose read ends the launcher keeps open and this process inherits
(``PRIMUS_MONITOR_OUTPUT``: ``OUT_FD ERR_FD SILENT``), so nothing written before
it reads them is lost, even when the launcher has closed its own copies by
then. This thread copies every chunk, as it comes, to the log file and to the
console: stdout to the monitor's own stdout (the launcher's
console; not with ``SILENT`` 1, --silent), stderr to its stderr. torchrun's
output is the launcher's (it inherits the pipes), and so is the workload's in
run mode single.

Each torchrun rank. runner/helpers/run_worker.sh gives the rank a pipe as its
stdout and stderr, keeps the pipe's read end open for the rank's whole life (so
a rank never dies of EPIPE) and notes ``$PRIMUS_RC_DIR/writer.<RANK>``:

    WRAPPER_PID READ_FD DONE_FD LOCAL_RANK FILE

FILE is the rank's file under ``<log>.ranks/`` (torchrun's tee echoes it to the
console and the log). The thread finds each new record within ``SCAN_S``, opens
the pipe through ``/proc/WRAPPER_PID/fd/READ_FD`` and copies every line into
FILE, whole lines only (a line's start is held until its newline or
``LINE_WAIT_S`` of quiet). It writes ``t`` into the wrapper's DONE pipe when
it takes the pipe, and ``d`` at the pipe's end (the rank and whatever it left
behind closed it): the wrapper reports the rank gone only once every line is in
the file (or 2 s after its end when a monitor took the pipe but does not answer,
30 s when none took it).

A run monitor killed (kill -9, the OOM killer) is restarted by the launcher
(runner/lib/watchdog.sh); meanwhile every stream waits in its pipe, and the new
monitor takes every pipe over: at most the one read the dead monitor had in hand
is lost. A file that cannot be written (a full disk) never blocks anyone:
monitor/writer.py's ``Writer`` decides that (one warning per launch,
PRIMUS_LOG_ONCE; a rank the console shows, PRIMUS_CONSOLE_RANKS, then sends its
lines to the console prefixed ``[default<LOCAL_RANK>]:``, as torchrun would).

The parsing and the console choice are pure; the thread does the I/O.
"""
from __future__ import annotations

import contextlib
import os
import selectors
import threading
import time

from primus_runner.monitor.writer import CHUNK, Writer
from primus_runner.procstat import alive
from primus_runner.records import dataclass

SCAN_S = 0.05   # seconds between two looks for new records (a rank's first line waits at most this long)
RESCAN_S = 1.0  # every record's stat read again this often even when the directory did not change
TAKEN = b"t\n"  # what the wrapper reads on its DONE pipe: a monitor copies the rank's pipe
DONE = b"d\n"   # what the wrapper reads on its DONE pipe: every line of its rank is written
LINE_WAIT_S = 0.1   # seconds a line's start waits for its newline (a prompt has none)
QUIET_S = 1.0   # once the launch is over: a stream quiet this long is done, even without its end of file
CONSOLE_OUT, CONSOLE_ERR = 1, 2   # the monitor's own stdout and stderr: the launcher's console


@dataclass(frozen=True)
class Source:
    """One rank's pipe, as its wrapper noted it."""

    rank: int
    wrapper: int
    read_fd: int
    done_fd: int
    local_rank: int
    path: str


@dataclass(frozen=True)
class LauncherPipes:
    """The launcher's stdout and stderr pipes (PRIMUS_MONITOR_OUTPUT)."""

    out_fd: int
    err_fd: int
    silent: bool


def parse(rank: str, text: str) -> Source | None:
    """The record of ``writer.<RANK>`` (None when it is not one, e.g. half written) (pure)."""
    if not text.endswith("\n"):
        return None
    parts = text[:-1].split(" ", 4)
    if len(parts) != 5 or not rank.isdigit() or not all(p.isdigit() for p in parts[:4]) or not parts[4]:
        return None
    return Source(int(rank), int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3]), parts[4])


def parse_pipes(text: str) -> LauncherPipes | None:
    """PRIMUS_MONITOR_OUTPUT: ``OUT_FD ERR_FD SILENT`` (None when unset or not that) (pure)."""
    parts = text.split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts[:2]) or parts[2] not in ("0", "1"):
        return None
    return LauncherPipes(int(parts[0]), int(parts[1]), parts[2] == "1")


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


def open_log(path: str) -> tuple[int | None, OSError | None]:
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644), None
    except OSError as err:
        return None, err


class Stream:
    """One pipe being copied: whole lines (a rank) or chunks as they come (the launcher)."""

    def __init__(self, fd: int, writer: Writer, lines: bool, done: int | None = None) -> None:
        self.fd = fd
        self.writer = writer
        self.lines = lines
        self.done = done
        self.pending = b""
        self.data_at = time.monotonic()

    def take(self, chunk: bytes, now: float) -> None:
        self.data_at = now
        if not self.lines:
            self.writer.feed(chunk)
            return
        out, self.pending = whole_lines(self.pending, chunk)
        if out:
            self.writer.feed(out)

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
    """The stream of a rank's pipe, or None when its wrapper is gone."""
    try:
        fd = os.open(f"/proc/{source.wrapper}/fd/{source.read_fd}", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    done: int | None
    try:
        done = os.open(f"/proc/{source.wrapper}/fd/{source.done_fd}", os.O_WRONLY | os.O_NONBLOCK)
        os.write(done, TAKEN)
    except OSError:
        done = None
    log_fd, failed = open_log(source.path)
    fallback = f"/proc/self/fd/{CONSOLE_OUT}" if shown(console_ranks, source.local_rank) else None
    writer = Writer(log_fd, source.path, None, fallback, f"[default{source.local_rank}]:".encode(), once)
    if failed is not None:
        writer.log_failed(failed)
    return Stream(fd, writer, True, done)


def open_launcher(pipes: LauncherPipes, log_file: str, once: str | None) -> list[Stream]:
    """The streams of the launcher's stdout and stderr: the read ends this process
    inherited from the launcher (those still open)."""
    streams = []
    for pipe, console in ((pipes.out_fd, None if pipes.silent else CONSOLE_OUT), (pipes.err_fd, CONSOLE_ERR)):
        try:
            fd = os.dup(pipe)
            os.set_blocking(fd, False)
        except OSError:
            continue
        log_fd, failed = open_log(log_file)
        writer = Writer(log_fd, log_file, console, once=once)
        if failed is not None:
            writer.log_failed(failed)
        streams.append(Stream(fd, writer, False))
    return streams


class Output(threading.Thread):
    """The thread that writes every output stream of this node's run (see the module)."""

    def __init__(self, rc_dir: str, console_ranks: str = "", once: str | None = None,
                 launcher: list[Stream] | None = None) -> None:
        super().__init__(name="output", daemon=True)
        self.rc_dir = rc_dir
        self.console_ranks = console_ranks
        self.once = once
        self.streams: dict[int, Stream] = {}   # read fd -> stream
        # epoll (or poll): the pipes are registered once, so a look costs what is
        # ready, not what is open (32 or 64 ranks a node).
        self.selector = selectors.DefaultSelector()
        for stream in launcher or []:
            self._add(stream)
        self.dir_mark = (0, 0)    # rc_dir's (inode, mtime): a new record changes it
        self.rescan_at = 0.0
        self.taken: set[tuple[int, int]] = set()  # (wrapper, read fd) taken over by this monitor
        self.marks: dict[str, tuple[int, int, int]] = {}
        self.ending = threading.Event()
        self.first_rank_output = 0.0   # Unix time of the first bytes a rank wrote (monitor/phases.py)

    def stop(self, wait: float = 10.0) -> None:
        """The launch is over: copy what the pipes still hold (until their end, or
        QUIET_S without a byte), then end."""
        self.ending.set()
        self.join(wait)

    def _add(self, stream: Stream) -> None:
        self.streams[stream.fd] = stream
        self.selector.register(stream.fd, selectors.EVENT_READ)

    def _drop(self, fd: int) -> Stream:
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.selector.unregister(fd)
        return self.streams.pop(fd)

    def scan(self, now: float | None = None) -> None:
        """Take over every pipe of a new record whose wrapper runs. A record is
        written once per rank start (a new file or a rename: the directory's
        mtime moves), so the records are read only when it moved, and every
        RESCAN_S in any case."""
        if not self.rc_dir:
            return
        now = time.monotonic() if now is None else now
        try:
            info = os.stat(self.rc_dir)
        except OSError:
            return
        seen = (info.st_ino, info.st_mtime_ns)
        if seen == self.dir_mark and now < self.rescan_at:
            return
        self.dir_mark, self.rescan_at = seen, now + RESCAN_S
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
                self.dir_mark = (0, 0)   # half written: read again at the next look
                continue
            self.marks[entry.name] = mark
            key = (source.wrapper, source.read_fd)
            if key in self.taken or not alive(source.wrapper):
                continue
            stream = open_source(source, self.console_ranks, self.once)
            if stream is not None:
                self.taken.add(key)
                self._add(stream)

    def copy_ready(self, timeout: float) -> None:
        """Copy what every readable pipe holds (waiting up to TIMEOUT for one)."""
        if not self.streams:
            self.ending.wait(timeout)
            return
        ready = [key.fd for key, _ in self.selector.select(timeout)]
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
                if stream.lines:   # a rank's pipe (the launcher's are copied as chunks)
                    self.first_rank_output = self.first_rank_output or time.time()
                stream.take(chunk, now)
            else:
                self._drop(fd).close()

    def flush_quiet(self, now: float) -> None:
        """A line's start held LINE_WAIT_S without its newline goes out as it is (a prompt)."""
        for stream in self.streams.values():
            if stream.pending and now - stream.data_at >= LINE_WAIT_S:
                stream.flush()

    def run(self) -> None:
        next_scan = 0.0
        while not self.ending.is_set():
            now = time.monotonic()
            if now >= next_scan:
                self.scan(now)
                next_scan = now + SCAN_S
            self.copy_ready(SCAN_S)   # SCAN_S < LINE_WAIT_S: a held line's start is looked at in time
            self.flush_quiet(time.monotonic())
        self.rescan_at = 0.0
        self.scan()
        while self.streams:
            self.copy_ready(SCAN_S)
            now = time.monotonic()
            self.flush_quiet(now)
            for fd, stream in list(self.streams.items()):
                if now - stream.data_at >= QUIET_S:
                    self._drop(fd)
                    stream.flush()
                    stream.writer.finish()
