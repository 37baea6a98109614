"""The distributed-launch rules, once: host names, the rendezvous port range, the
node counts, the rank bound and loopback (SPEC section 5; reference section 1).

``env check`` (rules/engine.py's type rule and the ``rank_bounds`` and
``master_addr_multinode`` rules) and the launcher's rank mapping (ranks.py, run
by ``direct``, ``slurm-entry`` and ``detect``/base_env.sh) both ask these
functions, so every entry point gives the same verdict and the same message:
``NAME='value': <message>. Fix: <fix>``. No registry load: this module is on
the launch path.

Facts and their sources:
- MASTER_PORT 1024-65535: reference section 1 ("validation.sh enforces 1024-65535").
- host names: labels of letters, digits and '-' (RFC 1123 section 2.1), not
  starting or ending with '-', at most 63 characters each and 253 in all; '_' is
  accepted as well because Slurm node names and /etc/hosts entries may hold it
  (the hostlist syntax accepts it too); or an IPv4/IPv6 address.
- loopback: the names /etc/hosts gives 127.0.0.1 and ::1 on Debian/Ubuntu
  (localhost, localhost.localdomain, ip6-localhost, ip6-loopback), 127.0.0.0/8
  and ::1 (RFC 1122 section 3.2.1.3, RFC 4291 section 2.5.3).
"""
from __future__ import annotations

import re

from primus_runner.facts import LOOPBACK_NAMES

# name -> (lowest accepted value, what it is); the upper bound of MASTER_PORT below.
COUNTS = {
    "NNODES": (1, "the number of nodes in the job"),
    "NODE_RANK": (0, "this node's zero-based index"),
    "GPUS_PER_NODE": (1, "the number of processes to start on each node"),
}
PORT_RANGE = (1024, 65535)
CHECKED = ("MASTER_ADDR", "MASTER_PORT", *COUNTS)

_DIGITS = re.compile(r"[0-9]+\Z")
_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\Z")
_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
                   r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\Z")


def is_ipv4(value: str) -> bool:
    return bool(_IPV4.match(value))


def is_ip_literal(value: str) -> bool:
    if _IPV4.match(value):
        return True
    if ":" in value:
        import ipaddress

        try:
            ipaddress.IPv6Address(value[1:-1] if value.startswith("[") and value.endswith("]") else value)
            return True
        except ValueError:
            return False
    return False


def is_valid_host(value: str) -> bool:
    """A host name (see the module docstring) or an IP address."""
    if not value or len(value) > 253:
        return False
    if is_ip_literal(value):
        return True
    labels = value[:-1].split(".") if value.endswith(".") else value.split(".")
    return all(_LABEL.match(label) for label in labels)


def is_loopback(value: str) -> bool:
    lowered = value.lower().rstrip(".")
    if lowered.startswith("[") and lowered.endswith("]"):
        lowered = lowered[1:-1]
    return (lowered in LOOPBACK_NAMES or lowered in ("::1", "0:0:0:0:0:0:0:1")
            or (lowered.startswith("127.") and bool(_IPV4.match(lowered))))


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
