"""Set up by runner/helpers/run_worker.sh for each rank: what a stack dump
needs from inside the rank. It owns two hooks and must do nothing else (no import of
the launcher's package: the rank may run on another interpreter):

* PRIMUS_FAULTHANDLER_FILE: faulthandler writes every thread's stack to that file on
  SIGURG (its default action is to ignore it), the fallback when py-spy cannot attach
  (no ptrace in a container without CAP_SYS_PTRACE);
* PRIMUS_FAILURE_STACKS=<rc dir>: an uncaught exception first has the stacks of this
  node's other ranks read (python -m primus_runner.diagnose dump, by PRIMUS_PYTHON)
  while they still wait for this rank, then goes on to the previous sys.excepthook.

* PRIMUS_PTRACER_PID=<launcher pid>: prctl(PR_SET_PTRACER) lets that process and
  its descendants (the run monitor and the py-spy it starts) read this rank's
  stacks where Yama's ptrace_scope=1 (Ubuntu's default) would refuse a process
  that is not this rank's ancestor; without Yama the call fails harmlessly.

The variables are removed from os.environ so the rank's own children do not take
them. A sitecustomize of the user's further on sys.path is imported after this one.
"""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType


def _primus_faulthandler(path: str) -> None:
    import faulthandler
    import signal

    try:
        handle = open(path, "a")  # noqa: SIM115 - kept open for the process's life
    except OSError:
        return
    faulthandler.register(signal.SIGURG, file=handle, all_threads=True, chain=False)


def _primus_failure_hook(rc_dir: str, root: str) -> None:
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        rank = os.environ.get("RANK", "0")
        try:
            os.mkdir(os.path.join(rc_dir, "failure-stacks.lock"))
        except OSError:
            previous(kind, value, tb)
            return
        import contextlib
        import subprocess

        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.join(root, "python")
        command = [os.environ.get("PRIMUS_PYTHON", "python3"), "-m", "primus_runner.diagnose", "dump",
                   "--run-id", os.environ.get("PRIMUS_RUN_ID", ""), "--kind", "failure", "--no-native",
                   "--skip-rank", rank,
                   "--report-file", os.path.join(rc_dir, "failure-stacks"),
                   "--heading", f"  stacks of this node's other ranks when rank {rank} raised {kind.__name__}"]
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=60, check=False)
        previous(kind, value, tb)

    sys.excepthook = hook


PR_SET_PTRACER = 0x59616D61  # <linux/prctl.h>: "Yama"


def _primus_ptracer(pid: int, prctl: object = None) -> bool:
    """Allow PID (and its descendants) to ptrace this process; False when the kernel refused."""
    if prctl is None:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    try:
        return prctl(PR_SET_PTRACER, pid, 0, 0, 0) == 0  # type: ignore[operator,no-any-return]
    except (OSError, AttributeError):
        return False


def _primus_setup() -> None:
    tracer = os.environ.pop("PRIMUS_PTRACER_PID", "")
    if tracer.isdigit():
        _primus_ptracer(int(tracer))
    path = os.environ.pop("PRIMUS_FAULTHANDLER_FILE", "")
    if path:
        _primus_faulthandler(path)
    rc_dir = os.environ.pop("PRIMUS_FAILURE_STACKS", "")
    if rc_dir and os.environ.get("PRIMUS_RUN_ID"):
        here = os.path.abspath(__file__)
        for _ in range(4):  # runner/helpers/pystartup/sitecustomize.py -> the repository
            here = os.path.dirname(here)
        _primus_failure_hook(rc_dir, here)


_primus_setup()
# A sitecustomize of the user's, further on the path, still runs.
def _primus_chain() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_primus_chain()
