"""Start the launcher's workload process: own session, parent-death signal.

Run as a script by runner/lib/supervise.sh (never imported on the launch path):

    python3 spawn.py --parent PID [--in-process] -- PROGRAM [ARGS...]

- ``setsid()``: the workload is a session (and process group) of its own, so a
  signal sent to the launcher's process group (``timeout``, ``kill -- -PGID``,
  Ctrl-C) reaches only the launcher, which then delivers it once.
- ``prctl(PR_SET_PDEATHSIG, SIGTERM)``: when the launcher dies (SIGKILL, OOM
  killer) this process receives SIGTERM; the run monitor, the run's
  parent-death guard (python/primus_runner/monitor/guard.py), sends SIGKILL
  after the grace. The setting
  survives ``execve`` (prctl(2)); when the launcher is already gone (it died
  before the prctl), the process ends at once.
- SIGINT back to its default when it arrives ignored (bash starts every
  ``cmd &`` of a script with SIGINT ignored, and the launcher starts us so): the
  launcher's SIGINT then stops a ``--single`` workload as Ctrl-C stops it in a
  terminal, instead of waiting for the SIGKILL after the grace.
- ``--in-process`` (for torchrun, a Python console script): run PROGRAM in this
  interpreter with SIGUSR1/SIGUSR2 caught (a no-op), so a signal sent to every
  process of a Slurm step does not kill torchrun: torchrun handles only
  SIGINT/SIGTERM/SIGHUP/SIGQUIT (https://github.com/pytorch/pytorch/issues/154849)
  and the default action of SIGUSR1 ends a process (signal(7)). Its workers get
  the default dispositions back at their own ``execve``. It is also a child
  subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a process of the run whose
  parent ends early (a process a rank started and left behind) is re-parented
  here, inside the run, never to init.
Otherwise PROGRAM replaces this process (``execvp``), keeping its pid.
"""

from __future__ import annotations

import ctypes
import os
import runpy
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _prctl(option: int, value: int, name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        sys.stderr.write(f"spawn.py: prctl({name}) failed: {os.strerror(err)}\n")


def _set_parent_death_signal(sig: int) -> None:
    _prctl(PR_SET_PDEATHSIG, sig, "PR_SET_PDEATHSIG")


def _usage() -> int:
    sys.stderr.write("usage: spawn.py --parent PID [--in-process] -- PROGRAM [ARGS...]\n")
    return 2


def main(argv: list[str]) -> int:
    parent = 0
    in_process = False
    while argv and argv[0] != "--":
        opt = argv.pop(0)
        if opt == "--parent" and argv and argv[0].isdigit():
            parent = int(argv.pop(0))
        elif opt == "--in-process":
            in_process = True
        else:
            return _usage()
    if len(argv) < 2:
        return _usage()
    program, args = argv[1], argv[2:]
    if os.getsid(0) != os.getpid():
        os.setsid()
    _set_parent_death_signal(signal.SIGTERM)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    if parent and os.getppid() != parent:
        # The launcher died before the prctl: nobody would ever stop us.
        return 128 + signal.SIGTERM
    if in_process:
        _prctl(PR_SET_CHILD_SUBREAPER, 1, "PR_SET_CHILD_SUBREAPER")
        for sig in (signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, lambda _num, _frame: None)
        sys.argv = [program, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(program))
        runpy.run_path(program, run_name="__main__")
        return 0
    try:
        os.execvp(program, [program, *args])
    except OSError as exc:
        sys.stderr.write(f"spawn.py: cannot run '{program}': {exc.strerror}\n")
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
