"""The out-of-memory hint of the failure report: a rank killed by SIGKILL
(exit code 137) that the launcher did not kill itself was, most of the time,
killed by the kernel's out-of-memory killer. What can be read without
privileges is added as evidence: the OOM kill count of this process's cgroup
(cgroup v2 ``memory.events`` ``oom_kill``, which counts the cgroup and its
descendants; cgroup v1 ``memory.oom_control``) and, when readable, the kernel
log's OOM lines (``/dev/kmsg``; often root-only: kernel.dmesg_restrict).
Parsing is pure; the reader takes its roots (PRIMUS_SYSFS_ROOT for /proc and
/sys, PRIMUS_DEV_ROOT for /dev, as detection does) so tests use fake trees.
Never prints; the report decides what to show.
"""
from __future__ import annotations

import os
import re

SIGKILL_CODE = 137
_OOM_LINE = re.compile(r"out of memory|oom-kill|oom_reaper|killed process", re.IGNORECASE)


def cgroup_path(proc_cgroup: str) -> tuple[str, str] | None:
    """(version, path) of the memory cgroup in /proc/self/cgroup text: v1's
    ``N:memory:/path`` (or a controller list with memory) when listed (a hybrid
    host), else v2's ``0::/path``."""
    v1 = v2 = None
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = ("2", parts[2])
        elif "memory" in parts[1].split(","):
            v1 = ("1", parts[2])
    # A hybrid host lists both: memory is then the v1 controller's.
    return v1 or v2


def parse_counters(text: str) -> dict[str, int]:
    """``name value`` lines (memory.events, memory.oom_control) as a dict."""
    found = {}
    for line in text.splitlines():
        name, _, value = line.strip().partition(" ")
        if value.strip().isdigit():
            found[name] = int(value.strip())
    return found


def kernel_oom_lines(kmsg: str, limit: int = 2) -> list[str]:
    """The last LIMIT OOM lines of kernel log text (/dev/kmsg records
    ``prio,seq,time,flags;message`` or dmesg lines)."""
    lines = []
    for record in kmsg.splitlines():
        message = record.split(";", 1)[1] if ";" in record.split(" ", 1)[0] else record
        if _OOM_LINE.search(message):
            lines.append(message.strip())
    return lines[-limit:]


def _read(path: str, limit: int = 1 << 16) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def read_kmsg(path: str, max_bytes: int = 4 << 20) -> str | None:
    """The kernel log ring buffer from /dev/kmsg without blocking; None when
    it cannot be read (no permission: the usual case without root)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    chunks: list[bytes] = []
    total = 0
    try:
        while total < max_bytes:
            try:
                chunk = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == 32:  # EPIPE: a record was overwritten while reading; go on
                    continue
                break
            if not chunk:
                break
            chunks.append(chunk if chunk.endswith(b"\n") else chunk + b"\n")
            total += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def oom_hint(code: int, sysfs_root: str = "/", dev_root: str = "/") -> list[str]:
    """The hint lines for a rank that ended with CODE ([] unless 137)."""
    if code != SIGKILL_CODE:
        return []
    lines = ["hint: a rank killed by SIGKILL that the launcher did not stop was most often killed by "
             "the kernel's out-of-memory killer (host memory of all ranks, /dev/shm included); "
             "lower the batch size or the number of processes, or give the job more memory."]
    where = cgroup_path(_read(os.path.join(sysfs_root, "proc/self/cgroup")) or "")
    if where is not None:
        version, path = where
        base = os.path.join(sysfs_root, "sys/fs/cgroup", "" if version == "2" else "memory", path.lstrip("/"))
        name = "memory.events" if version == "2" else "memory.oom_control"
        text = _read(os.path.join(base, name))
        if text is not None:
            count = parse_counters(text).get("oom_kill")
            if count is not None:
                lines.append(f"  cgroup {path} {name}: oom_kill {count}"
                             + (" (the OOM killer did kill in this job's cgroup)" if count else
                                " (no OOM kill counted here: look for another cause, e.g. a kill -9)"))
    kmsg = read_kmsg(os.path.join(dev_root, "dev/kmsg"))
    if kmsg is None:
        lines.append("  kernel log: not readable here (dmesg needs root when kernel.dmesg_restrict=1); "
                     "ask an administrator for `dmesg | grep -i oom`.")
    else:
        found = kernel_oom_lines(kmsg)
        lines.extend(f"  kernel log: {line}" for line in found)
        if not found:
            lines.append("  kernel log: no out-of-memory line.")
    return lines
