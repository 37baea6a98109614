"""Copy the launcher's output streams to its log file and the console; never fail the writer.

Run as a script by runner/lib/launch_log.sh, one process for the launcher's
stdout and stderr, never imported on the launch path; the run monitor imports
``Writer`` to write every torchrun rank's file by the same
rules (python/primus_runner/monitor/rankout.py):

    python3 -I -S logwriter.py --log PATH [--console-fd N] [--stderr-fd N
        [--stderr-console-fd N]] [--warn-fd N] [--once FLAG]

It reads its stdin (the launcher's stdout) and, with ``--stderr-fd``, that
descriptor too (the launcher's stderr) until both end, and copies every chunk
to the log file (appending) and to the stream's console descriptor
(``--console-fd``, ``--stderr-console-fd``; none: the file only). A full disk
or a closed console:

- The log file cannot be written (a full disk: ENOSPC, a quota, EIO): the copy
  to the file stops, the streams are still read to their end, so their writers
  (the launcher, torchrun) never block nor get an error, and one warning
  (``--warn-fd``) names the file and the reason. ``--once FLAG``: only the
  writer that removes FLAG warns (the run monitor's rank files share it: one
  warning per launch). A rank's writer may instead send its lines to a
  ``fallback``, each prefixed (its lines reach the console when its own file
  cannot grow).
- The console is gone (``| head`` closed the pipe: EPIPE, or EIO): the copy to
  that console stops quietly and the log file still gets everything.

Stop signals (INT, TERM, HUP, USR1, USR2) are ignored: the writer ends when the
last writer of every stream has closed it, after the launcher's closing lines.
"""
from __future__ import annotations

import os
import select
import signal
import sys

CHUNK = 65536
_STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")


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
                 fallback: str | None, prefix: bytes, warn: str | int | None, once: str | None) -> None:
        self.log_fd = log_fd
        self.log_name = log_name
        self.console_fd = console_fd
        self.fallback = fallback
        self.fallback_fd: int | None = None
        self.prefix = prefix
        self.pending = b""
        self.warn = warn
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
        if not self.claim_warning():
            return
        target = self.warn if self.warn is not None else self.console_fd
        if target is None:
            return
        try:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND) if isinstance(target, str) else os.dup(target)
        except OSError:
            return
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if root not in sys.path:
            sys.path.insert(0, root)
        from primus_runner import log  # the launcher's line format (one owner)

        saved = sys.stderr
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as stream:
                sys.stderr = stream
                log.warn(text)
        except OSError:
            pass
        finally:
            sys.stderr = saved


OPTIONS = ("--log", "--console-fd", "--stderr-fd", "--stderr-console-fd", "--warn-fd", "--once")
FD_OPTIONS = ("--console-fd", "--stderr-fd", "--stderr-console-fd", "--warn-fd")


def parse(argv: list[str]) -> dict[str, str]:
    """The options as a dict; ValueError names what is wrong (pure)."""
    opts: dict[str, str] = {}
    it = iter(argv)
    for word in it:
        if word not in OPTIONS:
            raise ValueError(f"unknown option {word!r}")
        value = next(it, None)
        if value is None:
            raise ValueError(f"option {word} needs a value")
        opts[word] = value
    if "--log" not in opts:
        raise ValueError("--log PATH is required")
    for key in FD_OPTIONS:
        if key in opts and not opts[key].isdigit():
            raise ValueError(f"{key} takes a descriptor number, not {opts[key]!r}")
    if "--stderr-console-fd" in opts and "--stderr-fd" not in opts:
        raise ValueError("--stderr-console-fd needs --stderr-fd")
    return opts


def _fd(opts: dict[str, str], key: str) -> int | None:
    return int(opts[key]) if key in opts else None


def main(argv: list[str]) -> int:
    try:
        opts = parse(argv)
    except ValueError as err:
        sys.stderr.write(f"logwriter.py: {err}\n")
        return 2
    for name in _STOP_SIGNALS:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    log_name = opts["--log"]
    warn, once = _fd(opts, "--warn-fd"), opts.get("--once")
    inputs = [(0, _fd(opts, "--console-fd"))]
    stderr_fd = _fd(opts, "--stderr-fd")
    if stderr_fd is not None:
        inputs.append((stderr_fd, _fd(opts, "--stderr-console-fd")))
    streams: dict[int, Writer] = {}
    failed: OSError | None = None
    for in_fd, console in inputs:
        log_fd: int | None = None
        try:
            log_fd = os.open(log_name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as err:
            failed = err
        streams[in_fd] = Writer(log_fd, log_name, console, None, b"", warn, once)
    if failed is not None:
        for writer in streams.values():
            writer.log_failed(failed)
    copy(streams)
    return 0


def copy(streams: dict[int, Writer]) -> None:
    """Read every input descriptor of STREAMS to its end into its Writer, as it comes."""
    while streams:
        try:
            ready, _, _ = select.select(list(streams), [], [])
        except InterruptedError:
            continue
        for fd in ready:
            try:
                chunk = os.read(fd, CHUNK)
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                streams[fd].feed(chunk)
            else:
                streams.pop(fd).finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
