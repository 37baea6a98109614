"""Socket interfaces: which one the job uses, and NCCL's interface-list syntax.

Choice (``choose_interface``): the interface holding MASTER_ADDR's IPv4
exactly, else the one the longest-prefix route to MASTER_ADDR uses, else the
one holding the host's primary IPv4 (its host name's address) exactly, else
the default route's, else the first usable one. Never loopback, bridges, or
names matching ``PRIMUS_SOCKET_IFNAME_EXCLUDE``; interfaces that are down are
skipped.

Equal-cost duplicates: when the best route to MASTER_ADDR (same prefix, same
metric) exists on several usable interfaces, the kernel's choice depends on
route order, which differs per node. The launcher then takes the first of
them in natural name order (eth0 < eth1 < eth10) on every node and warns
naming all of them.

NCCL_SOCKET_IFNAME syntax (python/primus_runner/grammar.py, from the NCCL docs,
"Environment Variables", NCCL_SOCKET_IFNAME:
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html): a comma
list of name *prefixes*; a leading ``^`` excludes them; an item starting with
``=`` matches the exact name. A detected name is therefore
emitted as ``=name`` when another interface of the host starts with it
(``bond0`` would also select ``bond0.2093``).

GLOO_SOCKET_IFNAME is a plain interface name (PyTorch docs, "Common
environment variables": a single name, or several separated by commas for
round robin; no ``^``/``=`` syntax: https://pytorch.org/docs/stable/distributed.html),
so it is always derived from the chosen interface, never copied from NCCL's value.
"""
from __future__ import annotations

import os
import re

from primus_runner.grammar import nccl_name_matches, parse_nccl_names
from primus_runner.network.common import ip_to_int, listdir, natural_key, read
from primus_runner.network.routes import Route, best_routes, host_name, resolve_ipv4
from primus_runner.records import dataclass

ARPHRD_LOOPBACK = "772"
DEFAULT_SOCKET_EXCLUDE = (r"^(lo|docker.*|br-.*|virbr.*|veth.*|cni.*|flannel.*|cali.*|kube-.*|"
                          r"tunl.*|vxlan.*|weave.*|podman.*|lxcbr.*|lxdbr.*|ifb.*|dummy.*)$")


@dataclass
class Interface:
    name: str
    addresses: list[str]
    operstate: str
    usable: bool
    reason: str = ""
    loopback: bool = False


def read_interfaces(root: str, addresses: dict[str, list[str]], exclude: re.Pattern[str]) -> list[Interface]:
    base = os.path.join(root, "sys/class/net")
    names = set(listdir(base)) | set(addresses)
    out: list[Interface] = []
    for name in sorted(names, key=natural_key):
        idir = os.path.join(base, name)
        operstate = read(os.path.join(idir, "operstate")) or "unknown"
        reason = ""
        loopback = name == "lo" or read(os.path.join(idir, "type")) == ARPHRD_LOOPBACK
        if loopback:
            reason = "loopback"
        elif os.path.isdir(os.path.join(idir, "bridge")):
            reason = "bridge"
        elif exclude.search(name):
            reason = "excluded by PRIMUS_SOCKET_IFNAME_EXCLUDE"
        elif operstate not in ("up", "unknown"):
            reason = f"operstate {operstate}"
        elif not addresses.get(name):
            reason = "no IPv4 address"
        out.append(Interface(name, list(addresses.get(name, [])), operstate, not reason, reason,
                             loopback))
    return out


def _tie_note(what: str, tied: list[Route], chosen: str) -> str:
    names = sorted({r.iface for r in tied}, key=natural_key)
    from primus_runner.network.common import int_to_ip

    subnet = f"{int_to_ip(tied[0].dest)}/{tied[0].prefix}"
    return (f"equal-cost routes to {what} (subnet {subnet}, metric {tied[0].metric}) on "
            f"{' and '.join(names)}; the kernel's pick depends on route order, which can differ "
            f"per node: using {chosen} (first in natural name order). Fix: give the routes "
            f"different metrics, or export IP_INTERFACE=<interface> on every node")


def choose_interface(root: str, interfaces: list[Interface], routes: list[Route],
                     master_addr: str | None, notes: list[str]) -> tuple[str | None, str]:
    usable = {i.name: i for i in interfaces if i.usable}
    holder: dict[str, str] = {}
    for iface in interfaces:
        if iface.usable:
            for ip in iface.addresses:
                holder.setdefault(ip, iface.name)   # natural name order: the first wins
    from primus_runner.grammar import is_loopback

    if master_addr and not is_loopback(master_addr):
        master_ip = resolve_ipv4(root, master_addr)
        if master_ip is None:
            notes.append(f"MASTER_ADDR '{master_addr}' has no IPv4 address here; "
                         "using the host's primary interface")
        elif master_ip in holder:
            return holder[master_ip], f"holds MASTER_ADDR {master_ip}"
        else:
            ip = master_ip
            value = ip_to_int(ip)
            tied = best_routes(routes, value, set(usable)) if value is not None else []
            if tied:
                chosen = sorted((r.iface for r in tied), key=natural_key)[0]
                if len(tied) > 1:
                    notes.append(_tie_note(f"MASTER_ADDR {ip}", tied, chosen))
                return chosen, f"routes to MASTER_ADDR {ip}"
            notes.append(f"no usable interface routes to MASTER_ADDR {ip}")
    name = host_name(root)
    primary = resolve_ipv4(root, name) if name else None
    if primary and primary in holder:
        return holder[primary], f"holds the primary IPv4 {primary} of host {name}"
    defaults = sorted((r for r in routes if r.mask == 0 and r.iface in usable),
                      key=lambda r: (r.metric, natural_key(r.iface)))
    if defaults:
        tied = [r for r in defaults if r.metric == defaults[0].metric]
        if len({r.iface for r in tied}) > 1:
            notes.append(_tie_note("the default gateway", tied, defaults[0].iface))
        return defaults[0].iface, "default route"
    if usable:
        first = next(iter(usable))
        return first, "first usable interface"
    notes.append("no usable network interface (only loopback, bridges or excluded names)")
    return None, "none"


# -- NCCL_SOCKET_IFNAME syntax ----------------------------------------------------
def select_interfaces(value: str, names: list[str]) -> list[str]:
    """The interface names NCCL would consider for an NCCL_SOCKET_IFNAME value."""
    exclude, items = parse_nccl_names(value)
    hit = [n for n in names if any(nccl_name_matches(n, exact, pat) for exact, pat in items)]
    if exclude:
        return [n for n in names if n not in hit]
    return hit


def nccl_ifname_for(chosen: str, names: list[str]) -> str:
    """``=chosen`` when another interface name starts with ``chosen``, else ``chosen``."""
    if any(n != chosen and n.startswith(chosen) for n in names):
        return f"={chosen}"
    return chosen


def gloo_ifname_from(nccl_value: str, interfaces: list[Interface], preferred: str | None) -> str | None:
    """A plain interface name for Gloo from an NCCL_SOCKET_IFNAME value:
    ``preferred`` when the value selects it, else the first usable interface
    it selects (natural order), else None."""
    names = [i.name for i in interfaces]
    usable = {i.name for i in interfaces if i.usable}
    picked = [n for n in select_interfaces(nccl_value, names) if n in usable]
    if preferred and preferred in picked:
        return preferred
    return picked[0] if picked else None
