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

* PRIMUS_FR_TRIGGER=<fifo>: a daemon thread that dumps PyTorch's flight recorder
  when the run monitor writes a byte to that FIFO (created here, mode 0600), for
  backends without torch's own dump pipe (gloo: TORCH_NCCL_DEBUG_INFO_PIPE_FILE is
  read by ProcessGroupNCCL only). It blocks in open() of the FIFO while idle (no
  polling, no GIL held), never imports torch (it dumps only when the workload has
  torch.distributed imported and initialized), and writes
  torch._C._distributed_c10d._dump_fr_trace() (a pickle, bytes) to
  TORCH_FR_DUMP_TEMP_FILE<rank> (or its older name TORCH_NCCL_DEBUG_INFO_TEMP_FILE,
  else <the FIFO's directory>/flight-recorder-rank-<rank>), mode 0600. Any error
  is written to stderr once and never reaches the workload.

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


FR_DEFAULT_NAME = "flight-recorder-rank-"  # python/primus_runner/monitor/flightrec.py reads the same


def _primus_fr_dump(trigger: str) -> str:
    """Dump the flight recorder of this rank now; the file written, or why not."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return "torch.distributed is not initialized"
    import pickle

    rank = dist.get_rank()
    # bytes: "Stringified pickle work traces" (its docstring in torch 2.13).
    data = sys.modules["torch"]._C._distributed_c10d._dump_fr_trace()
    # gloo (torch 2.13) records its group's ranks under the name "" (recorded before the
    # group is named), which torch's analyzer (fr_trace) cannot match to the entries
    # (KeyError ('0', 0)): the groups as torch.distributed names them are added.
    dump = pickle.loads(data)  # torch's own dump of this process
    config = dump.get("pg_config") if isinstance(dump, dict) else None
    if isinstance(config, dict) and "" in config:
        c10d = dist.distributed_c10d
        for group in list(c10d._world.pg_map):
            name = c10d._get_process_group_name(group)
            config.setdefault(name, {"name": name, "desc": group.group_desc,
                                     "ranks": str(dist.get_process_group_ranks(group))})
        if len(config) > 1:
            del config[""]
        data = pickle.dumps(dump)
    prefix = (os.environ.get("TORCH_FR_DUMP_TEMP_FILE") or os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
              or os.path.join(os.path.dirname(trigger), FR_DEFAULT_NAME))
    path = f"{prefix}{rank}"
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)  # one write: a dump is a few MB at most
    finally:
        os.close(fd)
    os.replace(path + ".tmp", path)
    return path


def _primus_say(line: str) -> None:
    """LINE on the rank's stderr; nothing when that is closed."""
    import contextlib

    with contextlib.suppress(Exception):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _primus_fr_loop(trigger: str) -> None:
    told = False
    while True:
        try:
            with open(trigger, "rb") as fifo:  # blocks until the monitor opens it to write
                fifo.read(1)
        except OSError:
            return  # the FIFO is gone (the launch's rc directory was removed)
        try:
            _primus_fr_dump(trigger)
        except Exception as error:  # noqa: BLE001 - never into the workload
            if not told:
                told = True
                _primus_say(f"primus: flight-recorder dump failed: {type(error).__name__}: {error}")


def _primus_fr_thread(trigger: str) -> None:
    try:
        import threading

        if os.path.lexists(trigger):
            os.unlink(trigger)
        os.mkfifo(trigger, 0o600)
        threading.Thread(target=_primus_fr_loop, args=(trigger,), name="primus-fr-dump", daemon=True).start()
    except Exception as error:  # noqa: BLE001 - never into the workload
        _primus_say(f"primus: no flight-recorder dump thread: {type(error).__name__}: {error}")


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
    trigger = os.environ.pop("PRIMUS_FR_TRIGGER", "")
    if trigger:
        _primus_fr_thread(trigger)


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
