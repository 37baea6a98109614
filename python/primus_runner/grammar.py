"""The one value grammar: host names, host:port, loopback, NCCL's list syntax,
and index lists (devices, cores, CPUs), shared by the rules, detection and the
derivations, so a value the launcher derives is judged by the same words as a
value the user typed.

Bottom-level on purpose: pure functions on strings, no I/O, and no import from
the package except the generated ``facts`` (loopback names). It must not hold
a rule's verdict or message (those live in ``rules/``) nor read the machine.

Facts and their sources:
- host names: labels of letters, digits and '-' (RFC 1123 section 2.1), not
  starting or ending with '-', at most 63 characters each and 253 in all; '_'
  is accepted as well (Slurm node names and /etc/hosts entries may hold it); a
  trailing dot (an absolute name, RFC 1034 section 3.1: ``node1.``) is
  accepted by getaddrinfo, so it is accepted everywhere; or an IPv4/IPv6
  address, an IPv6 one also in brackets (``[fd00::10]``, RFC 3986 section 3.2.2).
- host:port: an IPv6 host must be in brackets (``[fd00::10]:1235``) or the port
  cannot be told from the address.
- loopback: the names /etc/hosts gives 127.0.0.1 and ::1 on Debian/Ubuntu
  (registry shared_facts loopback_names), 127.0.0.0/8 and ::1 (RFC 1122 section
  3.2.1.3, RFC 4291 section 2.5.3).
- NCCL lists (NCCL_SOCKET_IFNAME, NCCL_IB_HCA; NCCL docs, "Environment
  Variables": https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html):
  comma-separated name prefixes; a leading ``^`` excludes them; an item starting
  with ``=`` matches the exact name.
- index lists (NEURON_RT_VISIBLE_CORES "Range list (0-3, 0,2,4)" in the Neuron
  runtime reference; HIP/ROCR/CUDA_VISIBLE_DEVICES comma lists): a number or
  ``low-high`` per item; an index named twice is an error, not another core or GPU.
"""
from __future__ import annotations

import re

from primus_runner.facts import LOOPBACK_NAMES

_DIGITS = re.compile(r"[0-9]+\Z")
_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\Z")
_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
                   r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\Z")
_IPV6_CHARS = re.compile(r"[0-9A-Fa-f:.]+(%[A-Za-z0-9._-]+)?\Z")
_RANGE_ITEM = re.compile(r"([0-9]+)(?:-([0-9]+))?\Z")
_NEURON_FAMILY = re.compile(r"(trn|inf)([0-9]+)")


# --------------------------------------------------------------------------- numbers
def is_uint(value: str) -> bool:
    """``value`` is a whole number written in ASCII digits (no sign, no space)."""
    return bool(_DIGITS.match(value))


# --------------------------------------------------------------------------- addresses
def is_ipv4(value: str) -> bool:
    return bool(_IPV4.match(value))


def bare_host(value: str) -> str:
    """``[fd00::10]`` -> ``fd00::10``; anything else unchanged."""
    return value[1:-1] if value.startswith("[") and value.endswith("]") else value


def is_ipv6(value: str) -> bool:
    """An IPv6 address, bare or in brackets (a ``%zone`` suffix allowed)."""
    text = bare_host(value)
    if ":" not in text or not _IPV6_CHARS.match(text):
        return False
    import ipaddress

    try:
        ipaddress.IPv6Address(text.split("%", 1)[0])
    except ValueError:
        return False
    return True


def is_ip_literal(value: str) -> bool:
    return is_ipv4(value) or is_ipv6(value)


def is_valid_host(value: str) -> bool:
    """A host name, an IPv4 address or an IPv6 address (bare or bracketed)."""
    if not value or len(value) > 253:
        return False
    if is_ip_literal(value):
        return True
    labels = value[:-1].split(".") if value.endswith(".") else value.split(".")
    return all(_LABEL.match(label) for label in labels)


def host_for_port(host: str) -> str:
    """The host as the left side of ``host:port``: an IPv6 address in brackets."""
    host = host.strip()
    if ":" in host and not host.startswith("["):
        return f"[{host}]"
    return host


def split_hostport(value: str) -> tuple[str, str, bool] | None:
    """(host, port text, bracketed) of ``host:port``; None when there is no port."""
    if value.startswith("["):
        end = value.find("]:")
        return (value[1:end], value[end + 2:], True) if end > 0 else None
    if ":" not in value:
        return None
    host, port = value.rsplit(":", 1)
    return host, port, False


def hostport_problem(value: str) -> str | None:
    """Why ``value`` is not ``host:port`` (port 1-65535), or None."""
    parts = split_hostport(value)
    if parts is None:
        return "has no :port"
    host, port, bracketed = parts
    if ":" in host and not bracketed:
        return "has an IPv6 host without brackets ([addr]:port)"
    if not is_valid_host(host):
        return f"has {host!r}, not a host name or IP address, before the port"
    if not _DIGITS.match(port) or not 1 <= int(port) <= 65535:
        return f"has port {port!r}; accepted: 1-65535"
    return None


def is_loopback(value: str) -> bool:
    lowered = bare_host(value.lower().rstrip("."))
    return (lowered in LOOPBACK_NAMES or lowered in ("::1", "0:0:0:0:0:0:0:1")
            or (lowered.startswith("127.") and bool(_IPV4.match(lowered))))


# --------------------------------------------------------------------------- NCCL lists
def parse_nccl_names(value: str) -> tuple[bool, list[tuple[bool, str]]]:
    """NCCL's name-list syntax: (exclude, [(exact, name), ...]) for ``^=a,b``."""
    body = value.strip()
    exclude = body.startswith("^")
    if exclude:
        body = body[1:]
    items = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        exact = item.startswith("=")
        items.append((exact, item[1:] if exact else item))
    return exclude, items


def nccl_name_matches(name: str, exact: bool, pattern: str) -> bool:
    return name == pattern if exact else name.startswith(pattern)


# --------------------------------------------------------------------------- index lists
def parse_range_list(value: str) -> list[tuple[int, int]] | None:
    """'0-3,8' -> [(0, 3), (8, 8)]; None when malformed or a range runs backwards."""
    ranges = []
    for item in value.split(","):
        match = _RANGE_ITEM.match(item)
        if not match:
            return None
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low:
            return None
        ranges.append((low, high))
    return ranges


def repeated_index(ranges: list[tuple[int, int]]) -> int | None:
    """The first index two items of a range list both name (``0-3,2`` -> 2)."""
    seen: set[int] = set()
    for low, high in ranges:
        for index in range(low, high + 1):
            if index in seen:
                return index
            seen.add(index)
    return None


def index_list(value: str) -> tuple[list[int] | None, str | None]:
    """(indices in order, None) for a valid index list, else (None, why)."""
    ranges = parse_range_list(value)
    if ranges is None:
        return None, "is not a list of indices or low-high ranges (0-3,8), without blanks or empty items"
    twice = repeated_index(ranges)
    if twice is not None:
        return None, f"names index {twice} twice; each core or device may be listed once"
    return [i for low, high in ranges for i in range(low, high + 1)], None


def compact_index_list(indices: list[int]) -> str:
    """The index list of ``indices`` in their order, ascending runs as ranges:
    [8, 9, 10, 11] -> '8-11', [20, 22] -> '20,22' (index_list reads it back)."""
    items: list[str] = []
    start = prev = None
    for index in [*indices, None]:
        if start is not None and prev is not None and index == prev + 1:
            prev = index
            continue
        if start is not None:
            items.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = index
    return ",".join(items)


# --------------------------------------------------------------------------- instance names
def neuron_family(instance_type: str | None) -> str | None:
    """The Neuron family of an EC2 instance type (the key of the registry's
    neuron.families): trn1.32xlarge -> trn1, trn1n.32xlarge -> trn1, trn2u.48xlarge -> trn2."""
    if not instance_type:
        return None
    match = _NEURON_FAMILY.match(instance_type.strip().lower())
    return f"{match.group(1)}{match.group(2)}" if match else None
