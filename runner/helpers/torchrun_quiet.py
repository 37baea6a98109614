"""Run torchrun (torch.distributed.run) exactly as ``python -m torch.distributed.run``
does, but keep its tracebacks off the console.

torchrun turns SIGTERM/SIGINT/SIGHUP into a SignalException that reaches the top
level as a ~30-line traceback on every stop (scancel, Ctrl-C, the launcher's own
grace period), after it has already stopped its workers. The launcher prints
the one closing line of a stopped run itself; here such a stop exits 128+N
without the traceback.

Any other exception (a failed worker's ChildFailedError table, a busy
MASTER_PORT, a rendezvous timeout): when the launcher runs it (PRIMUS_RC_DIR is
set), the full traceback goes to $PRIMUS_RC_DIR/torchrun.err, which the
launcher's failure report appends to the log file, and one line naming the
exception reaches stderr; exit status 1, as torchrun's. Without PRIMUS_RC_DIR
the exception is raised unchanged.

Usage: <python> torchrun_quiet.py [torchrun options] -- as torchrun.
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback


def keep_traceback(exc: BaseException, rc_dir: str) -> bool:
    """Write EXC's traceback to RC_DIR/torchrun.err; False when it cannot."""
    try:
        with open(os.path.join(rc_dir, "torchrun.err"), "a", encoding="utf-8") as handle:
            handle.write("".join(traceback.format_exception(exc)))
    except OSError:
        return False
    return True


def summary(exc: BaseException) -> str:
    """``ChildFailedError: ...`` on one line, at most 300 characters."""
    text = " ".join(str(exc).split())
    if type(exc).__name__ == "ChildFailedError":
        text = "a worker failed (see the failure report below)"
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def main() -> None:
    try:
        from torch.distributed.elastic.multiprocessing.api import SignalException
    except ImportError:  # no torch: let runpy report it as torchrun would
        SignalException = None  # type: ignore[assignment,misc]  # noqa: N806
    try:
        runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        if SignalException is not None and isinstance(exc, SignalException):
            sys.exit(128 + int(exc.sigval))
        rc_dir = os.environ.get("PRIMUS_RC_DIR", "")
        if not rc_dir or not keep_traceback(exc, rc_dir):
            raise
        print(f"torchrun: {summary(exc)} (full traceback in the log)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
