"""Routes (``<root>/proc/net/route``), local IPv4 addresses and name resolution.

Local addresses: on the real root (``/``) the kernel's tables, or psutil when
two interfaces share a subnet. Under any other root only the kernel's text
files: local IPv4 addresses are the ``/32 host LOCAL`` leaves of
``<root>/proc/net/fib_trie``, each assigned to the interface whose connected
route (no gateway) holds it with the longest prefix. When that route exists
with the same prefix and metric on several interfaces (equal-cost duplicates)
the text files cannot tell which one holds the address: under a fake root it
is given to each of them (so each counts as carrying that subnet).
"""
from __future__ import annotations

import os

from primus_runner.network.common import hex_le, ip_to_int, is_real_root, read
from primus_runner.records import dataclass


@dataclass
class Route:
    iface: str
    dest: int
    mask: int
    gateway: int
    metric: int

    @property
    def prefix(self) -> int:
        return bin(self.mask).count("1")


def read_routes(root: str) -> list[Route]:
    text = read(os.path.join(root, "proc/net/route")) or ""
    routes: list[Route] = []
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 8:
            continue
        try:
            flags = int(cols[3], 16)
            if not flags & 1:           # RTF_UP
                continue
            routes.append(Route(cols[0], hex_le(cols[1]), hex_le(cols[7]), hex_le(cols[2]),
                                int(cols[6])))
        except ValueError:
            continue
    return routes


def best_routes(routes: list[Route], value: int, allowed: set[str] | None = None,
                connected_only: bool = False) -> list[Route]:
    """The longest-prefix, lowest-metric routes to ``value`` (several when tied)."""
    best: list[Route] = []
    key = None
    for route in routes:
        if value & route.mask != route.dest:
            continue
        if connected_only and (route.gateway != 0 or not route.mask):
            continue
        if allowed is not None and route.iface not in allowed:
            continue
        this = (route.prefix, -route.metric)
        if key is None or this > key:
            key, best = this, [route]
        elif this == key and route.iface not in {r.iface for r in best}:
            best.append(route)
    return best


def local_addresses_from_proc(root: str, routes: list[Route],
                              ambiguous: list[str] | None = None) -> dict[str, list[str]]:
    """Interface -> IPv4 addresses from fib_trie's '/32 host LOCAL' leaves and route.

    An address whose best connected route exists on two interfaces cannot be
    placed this way; it is appended to ``ambiguous`` when a list is given,
    and given to every tied interface."""
    text = read(os.path.join(root, "proc/net/fib_trie")) or ""
    local: list[str] = []
    leaf = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|--"):
            leaf = stripped[3:].strip()
        elif leaf and stripped.startswith("/32 host LOCAL") and leaf not in local:
            local.append(leaf)
    out: dict[str, list[str]] = {}
    for ip in local:
        value = ip_to_int(ip)
        if value is None:
            continue
        if (value >> 24) == 127:
            out.setdefault("lo", []).append(ip)
            continue
        tied = best_routes(routes, value, connected_only=True)
        for route in tied:
            out.setdefault(route.iface, []).append(ip)
        if len(tied) > 1 and ambiguous is not None:
            ambiguous.append(ip)
    return out


def local_addresses(root: str, routes: list[Route]) -> dict[str, list[str]]:
    """On the real root the kernel's own tables answer unless two interfaces
    share a subnet; only then psutil (whose import alone costs ~50 ms of the
    launch budget) is asked."""
    if not is_real_root(root):
        return local_addresses_from_proc(root, routes)
    ambiguous: list[str] = []
    found = local_addresses_from_proc(root, routes, ambiguous)
    if found and not ambiguous:
        return found
    import socket

    try:
        from primus_runner.sitepaths import ensure_site

        ensure_site()  # the launch helper starts without site-packages (sitepaths.py)
        import psutil
    except ImportError:
        return found
    out: dict[str, list[str]] = {}
    for name, addrs in psutil.net_if_addrs().items():
        for addr in addrs:
            if addr.family == socket.AF_INET:
                out.setdefault(name, []).append(addr.address)
    return out


def resolve_ipv4(root: str, host: str) -> str | None:
    """IPv4 of ``host``: literal, ``<root>/etc/hosts``, then DNS on the real root."""
    if ip_to_int(host) is not None:
        return host
    wanted = host.lower()
    for line in (read(os.path.join(root, "etc/hosts")) or "").splitlines():
        cols = line.split("#", 1)[0].split()
        if len(cols) >= 2 and ip_to_int(cols[0]) is not None and wanted in (c.lower() for c in cols[1:]):
            return cols[0]
    if is_real_root(root):
        import socket

        try:
            infos = socket.getaddrinfo(host, None, socket.AF_INET)
        except OSError:
            return None
        return str(infos[0][4][0]) if infos else None
    return None


def resolves(root: str, host: str) -> bool:
    """True when ``host`` is an IP literal or resolves here (any family on the real root)."""
    from primus_runner.grammar import is_ip_literal

    if is_ip_literal(host) or resolve_ipv4(root, host) is not None:
        return True
    if not is_real_root(root) and os.path.exists(os.path.join(root, "etc/hosts")):
        return False          # a fake tree with its own hosts file decides alone
    return _any_family("/", host)   # else this machine's resolver (hosts file, DNS)


def _any_family(root: str, host: str) -> bool:
    import socket

    try:
        return bool(socket.getaddrinfo(host, None))
    except (OSError, UnicodeError):
        return False


def host_name(root: str) -> str | None:
    if is_real_root(root):
        return os.uname().nodename
    return read(os.path.join(root, "etc/hostname"))
