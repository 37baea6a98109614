"""Rules on the user's NCCL_SOCKET_IFNAME against this host's interface names:
an item that prefix-matches more than the interface it names (``bond0`` also
takes ``bond0.2093``: an error, the fix is ``=bond0``; in a ``^`` list a
warning), and a multi-node ``^`` exclusion list that leaves loopback selectable.

Source (NCCL docs, "Environment Variables", NCCL_SOCKET_IFNAME,
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html): "Define to
a list of prefixes ... To match (or not) an exact interface name, begin the
prefix string with the = character." and "By default, the loopback interface
(lo) and docker interfaces (docker*) would not be selected unless there are no
other interfaces available ... Setting NCCL_SOCKET_IFNAME will bypass the
automatic interface selection algorithm and may use all interfaces matching the
manual selection."

Only values the user set are judged (detected ones are written with ``=`` when
needed by nics/interfaces.py). The list syntax comes from grammar.py; this
module reads interface names under PRIMUS_SYSFS_ROOT and nothing else.
"""
from __future__ import annotations

import os
from collections.abc import Iterator

from primus_runner.env.rules.engine import _State, rule
from primus_runner.env.rules.primus import _host_root
from primus_runner.env.rules.types import Finding
from primus_runner.grammar import nccl_name_matches, parse_nccl_names

_ARPHRD_LOOPBACK = "772"


def host_interfaces(root: str) -> dict[str, bool]:
    """Interface name -> is loopback, from ``<root>/sys/class/net``."""
    base = os.path.join(root, "sys/class/net")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return {}
    out: dict[str, bool] = {}
    for name in names:
        try:
            with open(os.path.join(base, name, "type"), encoding="ascii") as handle:
                kind = handle.read().strip()
        except OSError:
            kind = ""
        out[name] = name == "lo" or kind == _ARPHRD_LOOPBACK
    return out


def prefix_overlaps(value: str, names: list[str]) -> list[tuple[str, list[str]]]:
    """(item, the other names it also matches) for each non-``=`` item that is
    the exact name of an interface and a prefix of others."""
    _, items = parse_nccl_names(value)
    out = []
    for exact, pattern in items:
        if exact or pattern not in names:
            continue
        others = [n for n in names if n != pattern and n.startswith(pattern)]
        if others:
            out.append((pattern, others))
    return out


def _user_ifname(s: _State) -> tuple[str, dict[str, bool]] | None:
    from primus_runner.network.check import user_values

    value = user_values(s.env).get("NCCL_SOCKET_IFNAME")
    root = _host_root(s)
    if value is None or root is None:
        return None
    interfaces = host_interfaces(root)
    return (value, interfaces) if interfaces else None


def fixed_value(value: str, patterns: set[str]) -> str:
    """``value`` with ``=`` before each item in ``patterns`` (the exact-match form)."""
    exclude, items = parse_nccl_names(value)
    words = [("=" if exact or pat in patterns else "") + pat for exact, pat in items]
    return ("^" if exclude else "") + ",".join(words)


@rule("nccl_ifname_prefix_overlap")
def _prefix_overlap(s: _State) -> Iterator[Finding]:
    found = _user_ifname(s)
    if found is None:
        return
    value, interfaces = found
    overlaps = prefix_overlaps(value, list(interfaces))
    if not overlaps:
        return
    exclude = value.strip().startswith("^")
    what = "; ".join(f"{item!r} also {'excludes' if exclude else 'selects'} {', '.join(others)}"
                     for item, others in overlaps)
    # Selecting: NCCL may bootstrap or carry traffic over a VLAN or alias the other nodes
    # cannot reach from the named interface: an error. Excluding more than meant only
    # narrows the choice: a warning.
    yield s.found("warning" if exclude else "error", "NCCL_SOCKET_IFNAME",
                  f"matches interface-name prefixes, not names: {what} on this host, so NCCL "
                  f"{'leaves out' if exclude else 'may use'} those too",
                  f"match the exact name with '=': export NCCL_SOCKET_IFNAME="
                  f"{fixed_value(value, {item for item, _ in overlaps})}")


@rule("nccl_ifname_exclude_keeps_lo")
def _exclude_keeps_lo(s: _State) -> Iterator[Finding]:
    nnodes = s.uint("NNODES")
    if nnodes is None or nnodes <= 1:
        return
    found = _user_ifname(s)
    if found is None:
        return
    value, interfaces = found
    exclude, items = parse_nccl_names(value)
    if not exclude:
        return
    kept = [n for n in interfaces if not any(nccl_name_matches(n, e, p) for e, p in items)]
    loopback = [n for n in kept if interfaces[n]]
    if not loopback or all(interfaces[n] for n in kept):
        return  # lo excluded; or only loopback left (rule nic_values_on_host reports that)
    yield s.found("error", "NCCL_SOCKET_IFNAME",
                  f"is an exclusion list that keeps the loopback interface {', '.join(loopback)} "
                  f"selectable with NNODES={nnodes}: with the variable set NCCL may use every "
                  "interface the list leaves, so a node may bootstrap over loopback and the other "
                  "nodes never connect",
                  f"exclude loopback too: export NCCL_SOCKET_IFNAME={value.strip()},"
                  f"{','.join(loopback)}")
