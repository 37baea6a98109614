"""One output stream into its log file and its console; never fail the stream's writer.

The run monitor's output thread (python/primus_runner/monitor/output.py) keeps
one ``Writer`` per stream of the node's run: the launcher's stdout and stderr,
and each torchrun rank's output. A full disk or a closed console:

- The log file cannot be written (a full disk: ENOSPC, a quota, EIO): the copy
  to the file stops, the stream is still read to its end, so its writer (the
  launcher, torchrun, a rank) never blocks nor gets an error, and one warning
  names the file and the reason: one per process (``claim_warning``), and with
  a ``once`` flag file (PRIMUS_LOG_ONCE) one per launch. A rank's stream may
  instead send its lines to a ``fallback``, each prefixed (its lines reach the
  console when its own file cannot grow).
- The console is gone (``| head`` closed the pipe: EPIPE, or EIO): the copy to
  that console stops quietly and the log file still gets everything.
"""
from __future__ import annotations

import contextlib
import os

from primus_runner import log

CHUNK = 65536


def reason(err: OSError) -> str:
    """The cause in words, lower case: 'no space left on device' for ENOSPC."""
    text = os.strerror(err.errno) if err.errno else str(err)
    return text[:1].lower() + text[1:]


def warning_text(path: str, err: OSError) -> str:
    """The one warning of a launch whose log cannot be written."""
    return (f"cannot write the log file {path}: {reason(err)}; the run goes on and the console "
            f"keeps its output, but that file misses everything from here on. Fix: free space on "
            f"that filesystem, or pass --log_file on another one.")


def prefixed(pending: bytes, chunk: bytes, prefix: bytes) -> tuple[bytes, bytes]:
    """The complete lines of PENDING + CHUNK, each with PREFIX, and the rest (no newline yet)."""
    data = pending + chunk
    cut = data.rfind(b"\n") + 1
    if not cut:
        return b"", data
    lines = data[:cut].splitlines(keepends=True)
    return b"".join(prefix + line for line in lines), data[cut:]


_WARNED: list[bool] = []   # this process has claimed its one warning (Writer.claim_warning)


class PartialWrite(Exception):
    """A write that failed after WRITTEN bytes; ERROR is the OSError."""

    def __init__(self, written: int, error: OSError) -> None:
        super().__init__(str(error))
        self.written = written
        self.error = error


def write_all(fd: int, data: bytes) -> int:
    """Write every byte of DATA to FD (os.write may write part of it); its length.
    PartialWrite says how much was written before an error."""
    view = memoryview(data)
    done = 0
    while done < len(data):
        try:
            done += os.write(fd, view[done:])
        except OSError as err:
            raise PartialWrite(done, err) from err
    return done


class Writer:
    """The copying state of one stream: which outputs still work."""

    def __init__(self, log_fd: int | None, log_name: str, console_fd: int | None,
                 fallback: str | None = None, prefix: bytes = b"", once: str | None = None) -> None:
        self.log_fd = log_fd
        self.log_name = log_name
        self.console_fd = console_fd
        self.fallback = fallback
        self.fallback_fd: int | None = None
        self.prefix = prefix
        self.pending = b""
        self.once = once

    def feed(self, chunk: bytes) -> None:
        """Copy CHUNK to the console first (no delay there), then to the file."""
        if self.console_fd is not None:
            try:
                write_all(self.console_fd, chunk)
            except PartialWrite:
                self.console_fd = None  # the console was closed: the file still gets everything
        rest = chunk
        if self.log_fd is not None:
            try:
                rest = rest[write_all(self.log_fd, chunk):]
            except PartialWrite as err:
                rest = chunk[err.written:]
                self.log_failed(err.error)
        if rest and self.log_fd is None and self.fallback_fd is not None:
            self._to_fallback(rest)

    def finish(self) -> None:
        if self.fallback_fd is not None and self.pending:
            self._to_fallback(b"\n")

    def log_failed(self, err: OSError) -> None:
        """The log file cannot be written: stop copying there, warn (once per launch)."""
        self.log_fd = None
        if self.fallback:
            try:
                self.fallback_fd = os.open(self.fallback, os.O_WRONLY | os.O_APPEND)
            except OSError:
                self.fallback_fd = None
        self._warn(warning_text(self.log_name, err))

    def _to_fallback(self, chunk: bytes) -> None:
        out, self.pending = prefixed(self.pending, chunk, self.prefix)
        if not out or self.fallback_fd is None:
            return
        try:
            write_all(self.fallback_fd, out)
        except PartialWrite:
            self.fallback_fd = None

    def claim_warning(self) -> bool:
        """True when this writer is the one of its launch to warn: the first of its
        process (one warning for both streams, or for every rank's file), and the one
        that removed the ``--once`` flag file shared with the launch's other processes."""
        if _WARNED:
            return False
        _WARNED.append(True)
        if self.once:
            try:
                os.unlink(self.once)
            except FileNotFoundError:
                return False  # another writer of this launch has warned
            except OSError:
                pass
        return True

    def _warn(self, text: str) -> None:
        """The one warning, a line of the monitor's own (its stderr: the console and the log)."""
        if self.claim_warning():
            with contextlib.suppress(OSError, ValueError):
                log.warn(text)
