"""Copy one output stream to its log file and to the console; never fail the writer.

Run as a script by runner/lib/launch_log.sh (the launcher's stdout and stderr),
never imported on the launch path; the run monitor imports ``Writer`` to write
every torchrun rank's file by the same rules (python/primus_runner/monitor/rankout.py):

    python3 -I -S logwriter.py (--log PATH | --log-fd N) [--console-fd N]
        [--fallback PATH --prefix TEXT] [--warn PATH | --warn-fd N] [--once FLAG] [--lines]

It reads its stdin until end of file and copies every chunk to the log file
(appending) and to the console descriptor. A full disk or a closed console:

- The log file cannot be written (a full disk: ENOSPC, a quota, EIO): the copy
  to the file stops, the stream is still read to its end, so its writer (the
  workload) never blocks nor gets an error, and one warning names the file and
  the reason. ``--once FLAG``: only the process that removes FLAG warns (every
  writer of a launch shares it: one warning per launch). ``--fallback``: from
  then on the lines go there instead, each prefixed (a rank's lines reach the
  console through torchrun's stdout when its own file cannot grow).
- The console is gone (``| head`` closed the pipe: EPIPE, or EIO): the copy to
  the console stops quietly and the log file still gets everything.

Stop signals (INT, TERM, HUP, USR1, USR2) are ignored: the writer ends when the
last writer of the stream closes it, after the launcher's closing lines.
"""
from __future__ import annotations

import os
import select
import signal
import sys

CHUNK = 65536
LINE_WAIT_S = 0.1
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
        """True when this writer is the one of its launch to warn (it removed the
        ``--once`` flag file, or there is none)."""
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


def parse(argv: list[str]) -> dict[str, str]:
    """The options as a dict; ValueError names what is wrong."""
    known = {"--log", "--log-fd", "--console-fd", "--fallback", "--prefix", "--warn", "--warn-fd", "--once"}
    opts: dict[str, str] = {}
    it = iter(argv)
    for word in it:
        if word == "--lines":
            opts[word] = "1"
            continue
        if word not in known:
            raise ValueError(f"unknown option {word!r}")
        value = next(it, None)
        if value is None:
            raise ValueError(f"option {word} needs a value")
        opts[word] = value
    if ("--log" in opts) == ("--log-fd" in opts):
        raise ValueError("give exactly one of --log PATH or --log-fd N")
    for key in ("--log-fd", "--console-fd", "--warn-fd"):
        if key in opts and not opts[key].isdigit():
            raise ValueError(f"{key} takes a descriptor number, not {opts[key]!r}")
    return opts


def _fd_name(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return f"descriptor {fd}"


def main(argv: list[str]) -> int:
    try:
        opts = parse(argv)
    except ValueError as err:
        sys.stderr.write(f"logwriter.py: {err}\n")
        return 2
    for name in _STOP_SIGNALS:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    warn: str | int | None = opts.get("--warn")
    if "--warn-fd" in opts:
        warn = int(opts["--warn-fd"])
    log_fd: int | None = None
    failed: OSError | None = None
    if "--log" in opts:
        log_name = opts["--log"]
        try:
            log_fd = os.open(log_name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as err:
            failed = err
    else:
        log_fd = int(opts["--log-fd"])
        log_name = _fd_name(log_fd)
    writer = Writer(log_fd, log_name,
                    int(opts["--console-fd"]) if "--console-fd" in opts else None,
                    opts.get("--fallback"), opts.get("--prefix", "").encode(), warn, opts.get("--once"))
    if failed is not None:
        writer.log_failed(failed)
    copy(writer, "--lines" in opts)
    writer.finish()
    return 0


def whole_lines(pending: bytes, chunk: bytes) -> tuple[bytes, bytes]:
    """(what to write now: PENDING + CHUNK up to its last newline, the rest to hold) (pure)."""
    data = pending + chunk
    cut = data.rfind(b"\n") + 1
    if not cut and len(data) >= CHUNK:
        return data, b""  # a line longer than a chunk goes on as it comes
    return data[:cut], data[cut:]


def copy(writer: Writer, lines: bool) -> None:
    """Read stdin to its end into WRITER. LINES: write whole lines only, a line's
    start held until its newline or LINE_WAIT_S of quiet (a prompt without one):
    a rank's `print` under `python -u` writes the text and the newline in two
    writes, and torchrun's tee, reading the rank's file line by line, would echo
    the half line and let another rank's line in between."""
    pending = b""
    while True:
        if lines and pending and not select.select([0], [], [], LINE_WAIT_S)[0]:
            writer.feed(pending)
            pending = b""
            continue
        try:
            chunk = os.read(0, CHUNK)
        except InterruptedError:
            continue
        if not chunk:
            break
        if not lines:
            writer.feed(chunk)
            continue
        now, pending = whole_lines(pending, chunk)
        if now:
            writer.feed(now)
    if pending:
        writer.feed(pending)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
