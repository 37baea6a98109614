"""The distributed-launch rules, once: host names, the rendezvous port range, the
node counts, the rank bound and loopback (docs/configuration.md "Detection and rank mapping"; Primus docs,
environment variables, section 1).

``env check`` (rules/engine.py's type rule and the ``rank_bounds`` and
``master_addr_multinode`` rules) and the launcher's rank mapping (ranks.py, run
by ``direct``, ``slurm-entry`` and ``detect``/base_env.sh) both ask these
functions, so every entry point gives the same verdict and the same message:
``NAME='value': <message>. Fix: <fix>``. No registry load: this module is on
the launch path.

Facts and their sources:
- MASTER_PORT 1024-65535: Primus docs, environment variables, section 1 ("validation.sh enforces 1024-65535").
- host names and loopback: python/primus_runner/grammar.py (the one grammar,
  with its sources), so MASTER_ADDR and the values derived from it
  (JAX_COORDINATOR_IP, NEURON_RT_ROOT_COMM_ID) are judged alike.
"""
from __future__ import annotations

import re

from primus_runner.grammar import is_loopback, is_valid_host

# name -> (lowest accepted value, what it is); the upper bound of MASTER_PORT below.
COUNTS = {
    "NNODES": (1, "the number of nodes in the job"),
    "NODE_RANK": (0, "this node's zero-based index"),
    "GPUS_PER_NODE": (1, "the number of processes to start on each node"),
}
PORT_RANGE = (1024, 65535)
CHECKED = ("MASTER_ADDR", "MASTER_PORT", *COUNTS)

_DIGITS = re.compile(r"[0-9]+\Z")


def as_count(value: str) -> int | None:
    """A decimal integer (leading zeros allowed: ``08`` is 8), nothing around it."""
    return int(value, 10) if _DIGITS.match(value) else None


def problem(name: str, value: str) -> tuple[str, str] | None:
    """(message, fix) when ``value`` is not valid for ``name`` (one of CHECKED)."""
    if name == "MASTER_ADDR":
        if is_valid_host(value):
            return None
        return ("is not a host name or IP address; accepted: a host name (letters, digits, '-', "
                "'_', dot-separated labels, e.g. node001.cluster) or an IPv4/IPv6 address",
                "export MASTER_ADDR=<host name or IP of the node with NODE_RANK 0>")
    if name == "MASTER_PORT":
        low, high = PORT_RANGE
        port = as_count(value)
        if port is not None and low <= port <= high:
            return None
        return (f"is not a rendezvous port; accepted: a whole number in {low}-{high}",
                f"export MASTER_PORT=<a free TCP port in {low}-{high}>, e.g. 29500")
    low, what = COUNTS[name]
    number = as_count(value)
    if number is not None and number >= low:
        return None
    return (f"is not {what}; accepted: a whole number >= {low} (digits only)",
            f"export {name}=<a whole number >= {low}>")


def rank_problem(rank_name: str, rank: int, size_name: str, size: int) -> tuple[str, str] | None:
    """(message, fix) when a zero-based index is not below its count."""
    if rank < size:
        return None
    return (f"must be below {size_name}={size} (indices start at 0); the rendezvous would wait "
            "forever for the missing rank", f"set {rank_name} to 0..{size - 1} or raise {size_name}")


def loopback_problem(addr: str, nnodes: int, users: bool) -> tuple[str, str, str] | None:
    """(severity, message, fix) for a loopback MASTER_ADDR with NNODES > 1: an
    error when the launcher defaulted it (every node would wait on itself), a
    warning when the user exported it (several "nodes" on one machine work)."""
    if nnodes <= 1 or not is_loopback(addr):
        return None
    fix = ("export MASTER_ADDR=<host name or IP of node 0 reachable from every node> "
           "(Slurm launches fill it in)")
    if users:
        return ("warning", f"is a loopback address with NNODES={nnodes}: that only works when every "
                "node runs on this one machine; nodes on other hosts would try their own loopback "
                "and the rendezvous never completes", fix)
    return ("error", f"is the default, a loopback address, with NNODES={nnodes}: every node would "
            "wait for a rendezvous on itself", fix)


def describe(name: str, value: str, message: str, fix: str) -> str:
    """The one wording of a finding: ``NAME='value': message. Fix: fix``."""
    return f"{name}='{value}': {message}. Fix: {fix}"


# Linux's default net.ipv4.ip_local_port_range (Documentation/networking/ip-sysctl.rst),
# assumed by the port picker when the file cannot be read (a fixture tree without it).
LINUX_EPHEMERAL = (32768, 60999)
_SYSCTL = "proc/sys/net/ipv4"


def _sysctl_text(root: str, name: str) -> str | None:
    import os

    try:
        with open(os.path.join(root or "/", _SYSCTL, name), encoding="ascii") as handle:
            return handle.read()
    except (OSError, ValueError):
        return None


def ephemeral_range(root: str) -> tuple[int, int] | None:
    """The kernel's ephemeral port range, read under ``root`` (PRIMUS_SYSFS_ROOT
    moves /proc for fixtures, as detection does); None when unreadable."""
    words = (_sysctl_text(root, "ip_local_port_range") or "").split()
    if len(words) != 2 or not all(_DIGITS.match(w) for w in words):
        return None
    low, high = int(words[0]), int(words[1])
    return (low, high) if low <= high else None


def reserved_ports(root: str) -> set[int] | None:
    """net.ipv4.ip_local_reserved_ports under ``root`` (ports the kernel never hands
    out as ephemeral): None when unreadable or not understood."""
    text = _sysctl_text(root, "ip_local_reserved_ports")
    if text is None:
        return None
    ports: set[int] = set()
    for item in text.replace("\n", ",").split(","):
        low, _, high = item.strip().partition("-")
        if not low:
            continue
        if not _DIGITS.match(low) or (high and not _DIGITS.match(high)):
            return None
        first, last = int(low), int(high or low)
        if last < first or last - first > 65535:
            return None
        ports.update(range(first, last + 1))
    return ports


def port_outside(low: int, high: int) -> int:
    """A port to suggest outside the ephemeral range LOW-HIGH: 29500 (torch's
    own default) when it is outside, else just below or above the range."""
    for port in (29500, low - 500, high + 500):
        if PORT_RANGE[0] <= port <= PORT_RANGE[1] and not low <= port <= high:
            return port
    return PORT_RANGE[0]


def ephemeral_problem(port: int, root: str) -> tuple[str, str] | None:
    """(message, fix) when ``port`` lies in this host's ephemeral range and is not
    reserved: any outgoing connection may hold it when node 0's store binds it."""
    found = ephemeral_range(root)
    if found is None or not found[0] <= port <= found[1]:
        return None
    reserved = reserved_ports(root)
    if reserved is not None and port in reserved:
        return None
    low, high = found
    return (f"lies in this host's ephemeral port range {low}-{high} "
            "(net.ipv4.ip_local_port_range): any outgoing connection on node 0 may already hold "
            "it, and the rendezvous store then fails to bind",
            f"export MASTER_PORT={port_outside(low, high)} (any free port outside {low}-{high}), "
            f"or reserve it on every node (sudo sysctl -w net.ipv4.ip_local_reserved_ports={port})")
