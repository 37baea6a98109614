"""Readers of sysfs-shaped trees: a file's text, a folder's names, a number, a
``key value`` properties file, the NUMA nodes' CPU lists.

Every detector (hardware/, network/) reads the host through a root
(``PRIMUS_SYSFS_ROOT``, default ``/``) so tests run on fake trees; these are the
bottom-level readers they share. They never raise on a missing or unreadable
file (``None`` / empty), and must not interpret what they read beyond syntax.
"""
from __future__ import annotations

import os
from collections.abc import Mapping


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def list_dir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def to_int(text: str | None, default: int = -1) -> int:
    if text is None:
        return default
    text = text.strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return default


def parse_properties(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key:
            out[key] = value.strip()
    return out


def numa_cpus(root: str) -> dict[int, str]:
    base = os.path.join(root, "sys/devices/system/node")
    out: dict[int, str] = {}
    for name in list_dir(base):
        if name.startswith("node") and name[4:].isdigit():
            cpus = read_text(os.path.join(base, name, "cpulist"))
            if cpus is not None:
                out[int(name[4:])] = cpus
    return dict(sorted(out.items()))


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def which(name: str, env: Mapping[str, str]) -> str | None:
    """The executable NAME on env's PATH, like shutil.which without importing shutil
    on every launch (vendor tools, container runtimes)."""
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
