"""Small readers and address helpers shared by the NIC detectors."""
from __future__ import annotations

import os
import re

from primus_runner.errors import UsageError

DEFAULT_HCA_EXCLUDE = r"bond"


def read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:      # missing, or EINVAL for an empty GID slot
        return None


def listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def natural_key(name: str) -> list[int | str]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def state_word(text: str | None) -> str:
    """'4: ACTIVE' -> 'ACTIVE', '5: LinkUp' -> 'LinkUp'."""
    if not text:
        return "unknown"
    return text.split(":", 1)[1].strip() if ":" in text else text.strip()


def compile_pattern(name: str, pattern: str) -> re.Pattern[str]:
    if pattern == "":
        return re.compile(r"(?!)")  # set but empty: exclude nothing (an empty regex matches all)
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"{name}='{pattern}' is not a valid regular expression ({exc}); "
                         f"accepted: a Python regular expression, e.g. '{DEFAULT_HCA_EXCLUDE}'") from None


def ip_to_int(ip: str) -> int | None:
    parts = ip.split(".")
    if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
        return None
    return (int(parts[0]) << 24) | (int(parts[1]) << 16) | (int(parts[2]) << 8) | int(parts[3])


def int_to_ip(value: int) -> str:
    return ".".join(str((value >> s) & 255) for s in (24, 16, 8, 0))


def hex_le(text: str) -> int:
    """/proc/net/route's little-endian hex ('010200C0' is 192.0.2.1) to an int."""
    value = int(text, 16)
    return int.from_bytes(value.to_bytes(4, "little"), "big")


def is_real_root(root: str) -> bool:
    return os.path.realpath(root) == "/"


# The per-node network variables the cluster check compares by what they mean
# (subnet, link layer, GID type and family) rather than by value.
SOCKET_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "IP_INTERFACE")
MEANING_VARS = (*SOCKET_VARS, "NCCL_IB_HCA", "NCCL_IB_GID_INDEX")
