"""Accelerator device files held open by another process: who holds which.

Every ``/proc/<pid>/fd/*`` link to ``/dev/kfd``, ``/dev/dri/*`` or ``/dev/neuron*``
(under PRIMUS_SYSFS_ROOT for /proc and PRIMUS_DEV_ROOT for /dev, so fixture trees
work, a tree's ``proc`` may be a link to the real one), other than this process
and its parents, with the holder's pid, user and command. The doctor's check and
the launch's refusal (rule ``accelerators_free``) both read it. Must not change
anything: it only reads /proc.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from primus_runner.records import dataclass, field

HELD_PREFIXES = ("/dev/kfd", "/dev/dri/", "/dev/neuron")
PREFIXES_OF = {"rocm": ("/dev/kfd", "/dev/dri/renderD"), "neuron": ("/dev/neuron",)}


@dataclass
class Holder:
    pid: int
    user: str
    command: str
    devices: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"pid {self.pid} (user {self.user}: {self.command}) holds {', '.join(self.devices)}"


def _ancestors(proc: str) -> set[int]:
    pids, pid = {os.getpid()}, os.getpid()
    while pid > 1:
        try:
            with open(os.path.join(proc, str(pid), "stat"), encoding="utf-8") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        pids.add(pid)
    return pids


def _user(path: str) -> str:
    try:
        uid = os.stat(path).st_uid
    except OSError:
        return "?"
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _command(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            command = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
    return command[:120] or "?"


def _environ(path: str) -> dict[str, str]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def device_holders(proc_root: str, dev_root: str, prefixes: tuple[str, ...] = HELD_PREFIXES,
                   kin: Mapping[str, str] | None = None) -> list[Holder]:
    """Every other process holding a device file whose /dev path starts with one of
    ``prefixes``, in pid order. ``kin``: variables (e.g. this Slurm step's
    SLURM_JOB_ID and SLURM_STEP_ID) whose values in a holder's environment make it
    one of this launch's own (another task of the same step), not a holder."""
    base = os.path.join(proc_root or "/", "proc")
    dev_prefix = os.path.join(dev_root or "/", "dev").rstrip("/")
    live = os.path.realpath(base) == "/proc"
    mine = _ancestors(base) if live else set()
    out: list[Holder] = []
    try:
        pids = sorted(int(p) for p in os.listdir(base) if p.isdigit())
    except OSError:
        return []
    for pid in pids:
        if pid in mine:
            continue
        fd_dir = os.path.join(base, str(pid), "fd")
        try:
            links = os.listdir(fd_dir)
        except OSError:
            continue
        held: set[str] = set()
        for fd in links:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if dev_prefix != "/dev" and target.startswith(dev_prefix + "/"):
                target = "/dev" + target[len(dev_prefix):]
            if target.startswith(prefixes):
                held.add(target)
        where = os.path.join(base, str(pid))
        if not held or (kin and all(_environ(os.path.join(where, "environ")).get(k) == v
                                    for k, v in kin.items())):
            continue
        out.append(Holder(pid, _user(where), _command(os.path.join(where, "cmdline")), sorted(held)))
    return out
