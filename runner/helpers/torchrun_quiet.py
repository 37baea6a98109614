"""Run torchrun (torch.distributed.run) exactly as ``python -m torch.distributed.run``
does, but keep its tracebacks off the console.

torchrun turns SIGTERM/SIGINT/SIGHUP into a SignalException that reaches the top
level as a ~30-line traceback on every stop (scancel, Ctrl-C, the launcher's own
grace period), after it has already stopped its workers. The launcher prints
the one closing line of a stopped run itself; here such a stop exits 128+N
without the traceback.

torchrun's own log lines (its elastic agent's "Sending process N closing
signal SIGTERM", "failed (exitcode: 1)", "Received 15 death signal": the
``torch.distributed`` loggers) go to $PRIMUS_RC_DIR/torchrun.log, secrets
masked, which the launcher appends to its log file once the run has ended
(``keep_torchrun_log`` in python/primus_runner/launch/report.py, run by
``python -m primus_runner supervise``):
the console keeps the workers' output and the launcher's own lines.

Any other exception (a failed worker's ChildFailedError table, a busy
MASTER_PORT, a rendezvous timeout): when the launcher runs it (PRIMUS_RC_DIR is
set), the full traceback goes to $PRIMUS_RC_DIR/torchrun.err, which the
launcher's failure report appends to the log file, and one line naming the
exception reaches stderr; exit status 1, as torchrun's. Without PRIMUS_RC_DIR
the exception is raised unchanged.

The echoed rank lines are written line by line: torchrun's tee threads write
each rank's lines to its stdout without a flush, and a Python stdout that is a
pipe or a file is block-buffered, so a launch whose console is not a terminal
(``| tee``, a Slurm output file, the launcher's own log copy) saw the ranks'
lines only in 8 KiB bursts or at the end of the run. Line buffering here keeps
each line within torchrun's tail interval (0.1 s) of being written; the ranks'
own buffering is theirs (as under plain torchrun).

Usage: <python> torchrun_quiet.py [torchrun options] -- as torchrun.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import runpy
import sys
import threading
import traceback
from typing import NoReturn


def keep_traceback(exc: BaseException, rc_dir: str) -> bool:
    """Write EXC's traceback to RC_DIR/torchrun.err; False when it cannot."""
    try:
        with open(os.path.join(rc_dir, "torchrun.err"), "a", encoding="utf-8") as handle:
            handle.write("".join(traceback.format_exception(exc)))
    except OSError:
        return False
    return True


def keep_torch_logs(rc_dir: str) -> bool:
    """Send the ``torch.distributed`` loggers' records to RC_DIR/torchrun.log
    (masked) instead of the console; False when the file cannot be opened."""
    import logging

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    try:
        from primus_runner.masking import mask_text
    except ImportError:  # the runner's package not found: nothing leaves the console
        return False
    finally:
        sys.path.pop(0)

    class Masked(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return mask_text(super().format(record))

    try:
        handler = logging.FileHandler(os.path.join(rc_dir, "torchrun.log"), encoding="utf-8")
    except OSError:
        return False
    # The fields of torch's own log format: level letter, date and time, pid, where.
    handler.setFormatter(Masked("%(levelname).1s%(asctime)s %(process)d %(pathname)s:%(lineno)d] %(message)s",
                                "%m%d %H:%M:%S"))
    # torch's logging set-up gives "torch.distributed" and some of its children
    # their own console handler (propagate off): each is replaced by the file.
    names = [name for name in list(logging.root.manager.loggerDict)
             if name == "torch.distributed" or name.startswith("torch.distributed.")]
    for name in ["torch.distributed", *names]:
        logger = logging.getLogger(name)
        console = [h for h in logger.handlers if type(h) is logging.StreamHandler
                   and getattr(h, "stream", None) in (sys.stderr, sys.stdout)]
        for old in console:
            logger.removeHandler(old)
        if console or name == "torch.distributed":
            logger.addHandler(handler)
            logger.propagate = False
    return True


def summary(exc: BaseException) -> str:
    """``ChildFailedError: ...`` on one line, at most 300 characters."""
    text = " ".join(str(exc).split())
    if type(exc).__name__ == "ChildFailedError":
        text = "a worker failed (see the failure report below)"
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def exit_code(code: object) -> int:
    """The process status ``sys.exit(code)`` gives (a message goes to stderr)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def fast_exit(code: int) -> NoReturn:
    """End the process with CODE as the interpreter's own exit would, minus the
    teardown of its modules (see the header). Without CPython's
    ``threading._shutdown`` the interpreter's own exit is used."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None:
        sys.exit(code)
    try:
        shutdown()  # threading's exit functions, then every non-daemon thread joined
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # closed or broken
                stream.flush()
        os._exit(code)


def run_torchrun() -> int:
    """Run torch.distributed.run as ``python -m`` does; the exit status."""
    try:
        from torch.distributed.elastic.multiprocessing.api import SignalException
    except ImportError:  # no torch: let runpy report it as torchrun would
        SignalException = None  # type: ignore[assignment,misc]
    rc_dir = os.environ.get("PRIMUS_RC_DIR", "")
    if rc_dir and SignalException is not None:
        keep_torch_logs(rc_dir)
    try:
        runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)
    except SystemExit as done:
        return exit_code(done.code)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if SignalException is not None and isinstance(exc, SignalException):
            return 128 + int(exc.sigval)
        if not rc_dir or not keep_traceback(exc, rc_dir):
            raise
        print(f"torchrun: {summary(exc)} (full traceback in the log)", file=sys.stderr)
        return 1
    return 0


def line_buffered() -> None:
    """stdout and stderr flushed at every newline, whatever they are (see the header)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(OSError, ValueError):
                reconfigure(line_buffering=True)


# The prefix of an echoed rank line: torchrun's own "[<role><local rank>]:" names
# the local rank, so on every node but the first, "[default0]:" hid which rank
# spoke. torch.distributed.run reads this variable (run.py: "use global rank
# instead of the local rank ... [${rank}]"); a value of the user's is kept.
PREFIX_TEMPLATE = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"


def main() -> None:
    if PREFIX_TEMPLATE not in os.environ:
        os.environ[PREFIX_TEMPLATE] = "[${role_name}${rank}]:"
        os.environ["PRIMUS_PREFIX_TEMPLATE_OURS"] = "1"  # run_worker.sh drops both for the rank
    line_buffered()
    fast_exit(run_torchrun())


if __name__ == "__main__":
    main()
