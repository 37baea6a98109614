"""Run torchrun (torch.distributed.run) exactly as ``python -m torch.distributed.run``
does, but end quietly when the launcher stops it.

torchrun turns SIGTERM/SIGINT/SIGHUP into a SignalException that reaches the top
level as a ~30-line traceback on every stop (scancel, Ctrl-C, the launcher's own
grace period), after it has already stopped its workers. The launcher prints
the one closing line of a stopped run itself; here such a stop exits 128+N
without the traceback. Any other exception is raised unchanged.

Usage: <python> torchrun_quiet.py [torchrun options] -- as torchrun.
"""
from __future__ import annotations

import runpy
import sys


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
        raise


if __name__ == "__main__":
    main()
