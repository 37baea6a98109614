"""The user's network values checked against this host (rules ``nic_values_on_host``).

A value that names nothing on this node is an error on this node: a typo on one
node of 1,000 is the hang the launcher exists to prevent. Checked (only values
the user set: names in PRIMUS_DETECTED_VARS were detected here, right by
construction):

- NCCL_SOCKET_IFNAME (NCCL's list syntax): every item names an interface; the
  selection holds a usable non-loopback interface (an exclusion list such as
  ``^docker0`` that leaves only ``lo`` is an error).
- GLOO_SOCKET_IFNAME: plain interface names (Gloo has no ``^``/``=`` syntax),
  each an interface here.
- IP_INTERFACE: an interface here.
- NCCL_IB_HCA (``^``, ``=``, ``dev:port``): every item names a device (and
  port) here; the selection is not empty; an item that names a port by its
  device's own name (``mlx5_4:1``) whose port is not ACTIVE is an error (NCCL
  skips a port that is not IBV_PORT_ACTIVE, NVIDIA/nccl
  src/transport/net_ib/init.cc ``ncclIbInitDevices``, so this node pairs other
  rails than the rest); a port
  that is not ACTIVE and only reached by a prefix or a ``^`` list warns.
- NCCL_IB_GID_INDEX on the RoCE ports NCCL uses (the user's NCCL_IB_HCA, else
  the detected list, else every ACTIVE port: an unset list means every device):
  an absent, link-local or RoCE v1 GID, or one whose address is not on the
  port's own netdev (a neighbour's GID in a shared table: macvlan containers),
  cannot route and is an error naming the detected routable index (RoCE v2,
  IPv4 or global IPv6) as the fix. ``-1`` is an error when a port lacks a GID
  of the family NCCL then picks (``NCCL_IB_ADDR_FAMILY``, default AF_INET).
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from primus_runner.grammar import nccl_name_matches, parse_nccl_names
from primus_runner.network.gids import AUTO_GID_INDEX, describe, find
from primus_runner.network.hca import HcaPort, parse_hca_list, select_ports
from primus_runner.network.interfaces import select_interfaces
from primus_runner.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from primus_runner.network.detect import NicResult

CHECKED = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "IP_INTERFACE", "NCCL_IB_HCA",
           "NCCL_IB_GID_INDEX")


@dataclass
class Problem:
    severity: str
    variable: str
    value: str
    message: str
    fix: str


def user_values(env: Mapping[str, str]) -> dict[str, str]:
    detected = set((env.get("PRIMUS_DETECTED_VARS") or "").split())
    return {n: env[n] for n in CHECKED if env.get(n) and n not in detected}


def _ifnames(result: NicResult) -> str:
    return ", ".join(i.name for i in result.interfaces) or "(none)"


def host_problems(env: Mapping[str, str], root: str, result: NicResult | None = None) -> list[Problem]:
    values = user_values(env)
    if not values:
        return []
    if not os.path.isdir(os.path.join(root, "sys/class/net")):
        return []                                   # nothing to compare with (not Linux?)
    if result is None:
        from primus_runner.network.detect import detect_nics

        result = detect_nics(root, env)
    out: list[Problem] = []
    names = [i.name for i in result.interfaces]
    by_name = {i.name: i for i in result.interfaces}
    detected_iface = result.interface
    hint = f"=<interface>, e.g. ={detected_iface}" if detected_iface else "=<interface>"

    value = values.get("NCCL_SOCKET_IFNAME")
    if value is not None:
        exclude, items = parse_nccl_names(value)
        unknown = [("=" if exact else "") + pat for exact, pat in items
                   if not any(nccl_name_matches(n, exact, pat) for n in names)]
        picked = select_interfaces(value, names)
        usable = [n for n in picked if by_name[n].usable]
        real = [n for n in picked if not by_name[n].loopback]
        if unknown and not exclude:
            out.append(Problem("error", "NCCL_SOCKET_IFNAME", value,
                               f"names no interface of this host for {', '.join(unknown)} "
                               f"(NCCL matches name prefixes; interfaces here: {_ifnames(result)})",
                               f"export NCCL_SOCKET_IFNAME{hint} (or unset it to detect)"))
        elif not real:
            what = "leaves only loopback" if picked else "selects no interface"
            out.append(Problem("error", "NCCL_SOCKET_IFNAME", value,
                               f"{what} on this host (interfaces: {_ifnames(result)}); NCCL would "
                               "bootstrap over lo and the other nodes could never connect",
                               f"export NCCL_SOCKET_IFNAME{hint}, or exclude less"))
        elif not usable:
            out.append(Problem("error", "NCCL_SOCKET_IFNAME", value,
                               f"selects only {', '.join(picked)}, none of them up with an IPv4 "
                               f"address ({'; '.join(f'{n}: {by_name[n].reason}' for n in picked)})",
                               f"export NCCL_SOCKET_IFNAME{hint}"))

    value = values.get("GLOO_SOCKET_IFNAME")
    if value is not None:
        if value.startswith(("^", "=")):
            out.append(Problem("error", "GLOO_SOCKET_IFNAME", value,
                               "uses NCCL's ^/= syntax, which Gloo does not parse (it takes plain "
                               "interface names, comma-separated); the job dies at start-up",
                               f"export GLOO_SOCKET_IFNAME={detected_iface or '<interface>'} "
                               "(or unset it: the launcher derives it from the chosen interface)"))
        else:
            missing = [n for n in value.split(",") if n.strip() and n.strip() not in by_name]
            if missing:
                out.append(Problem("error", "GLOO_SOCKET_IFNAME", value,
                                   f"names {', '.join(missing)}, not an interface of this host "
                                   f"(Gloo needs exact names; interfaces here: {_ifnames(result)})",
                                   f"export GLOO_SOCKET_IFNAME={detected_iface or '<interface>'}"))

    value = values.get("IP_INTERFACE")
    if value is not None and value not in by_name:
        out.append(Problem("error", "IP_INTERFACE", value,
                           f"is not an interface of this host (interfaces: {_ifnames(result)})",
                           f"export IP_INTERFACE={detected_iface or '<interface>'} on this node, "
                           "or unset it to detect"))

    hca_value = values.get("NCCL_IB_HCA")
    if hca_value is not None:
        out += _hca_problems(hca_value, result)
        ports, _ = select_ports(hca_value, result.ports)
    else:
        ports = nccl_ports(result)
    gid_value = values.get("NCCL_IB_GID_INDEX")
    if gid_value is not None and gid_value.lstrip("-").isdigit():
        out += _gid_problems(gid_value, env, ports)
    return out


def nccl_ports(result: NicResult) -> list[HcaPort]:
    """The ports NCCL uses when the user did not set NCCL_IB_HCA: the detected list,
    else (nothing exported: NCCL reads an unset list as "every device") every ACTIVE
    InfiniBand or RoCE port of the host."""
    return result.chosen_ports() or [p for p in result.ports if p.state == "ACTIVE"
                                     and p.link_layer in ("InfiniBand", "Ethernet")]


def _named(value: str, selected: list[HcaPort]) -> set[str]:
    """The selected ports an item names by their exact device name (``mlx5_4``,
    ``mlx5_4:1``), as opposed to ports a prefix (``mlx5``) or ``^`` list reaches."""
    exclude, _, items = parse_hca_list(value)
    if exclude:
        return set()
    return {p.name for p in selected for dev, port in items
            if p.device == dev and (port is None or p.port == port)}


def _hca_problems(value: str, result: NicResult) -> list[Problem]:
    selected, unknown = select_ports(value, result.ports)
    here = ", ".join(p.name for p in result.ports) or "(no RDMA device)"
    fix = (f"export NCCL_IB_HCA={result.nccl_ib_hca}" if result.nccl_ib_hca
           else "unset NCCL_IB_HCA (this host has no usable RDMA port)")
    if unknown:
        return [Problem("error", "NCCL_IB_HCA", value,
                        f"names {', '.join(unknown)}, which matches no RDMA device/port "
                        f"of this host (ports here: {here})", fix)]
    if not selected:
        return [Problem("error", "NCCL_IB_HCA", value,
                        f"selects no RDMA port of this host (ports here: {here})", fix)]
    named = _named(value, selected)
    down = [p for p in selected if p.state != "ACTIVE"]
    named_down = [f"{p.name} ({p.state}, {p.phys_state})" for p in down if p.name in named]
    other_down = [p.name for p in down if p.name not in named]
    out = []
    if named_down:
        out.append(Problem("error", "NCCL_IB_HCA", value,
                           f"names port(s) that are not ACTIVE: {', '.join(named_down)}; NCCL "
                           "leaves out a port that is not ACTIVE, so this node would run with "
                           "other rails than the nodes whose port is up",
                           f"{fix} (the ACTIVE ports here), or bring the port up (ibstat)"))
    if other_down:
        out.append(Problem("warning", "NCCL_IB_HCA", value,
                           f"selects port(s) that are not ACTIVE: {', '.join(other_down)}", fix))
    return out


def _gid_problems(value: str, env: Mapping[str, str], ports: list[HcaPort]) -> list[Problem]:
    """NCCL_IB_GID_INDEX against the RoCE ports NCCL uses: the GID it names must be
    routable (RoCE v2, IPv4 or global IPv6, of the port's own netdev)."""
    roce = [p for p in ports if p.link_layer == "Ethernet"]
    index = int(value)
    families = sorted({p.gid_family for p in roce if p.gid_family})
    detected = sorted({p.gid_index for p in roce if p.gid_index is not None})
    what = f"RoCE v2 {'/'.join(families) or 'IPv4'} GID"
    fix = (f"export NCCL_IB_GID_INDEX={detected[0]} (the {what} here)" if len(detected) == 1 else
           f"export NCCL_IB_GID_INDEX={AUTO_GID_INDEX} (NCCL >= 2.21 picks each port's {what}), "
           "or unset it to detect")
    if index == AUTO_GID_INDEX:
        family = "IPv6" if (env.get("NCCL_IB_ADDR_FAMILY") or "AF_INET") == "AF_INET6" else "IPv4"
        lacking = [p.name for p in roce if p.gid_family is not None and p.gid_family != family
                   and not any(g.routable and g.family == family for g in p.gids)]
        if not lacking:
            return []
        other = "AF_INET6" if family == "IPv4" else "AF_INET"
        return [Problem("error", "NCCL_IB_GID_INDEX", value,
                        f"makes NCCL pick each port's RoCE v2 {family} GID (NCCL_IB_ADDR_FAMILY="
                        f"{env.get('NCCL_IB_ADDR_FAMILY') or 'AF_INET, its default'}), which "
                        f"{', '.join(lacking)} lack(s): NCCL then keeps GID 0 (on RoCE the "
                        "link-local default GID), which cannot route",
                        f"export NCCL_IB_ADDR_FAMILY={other}, or {fix}")]
    bad, v1, meanings = [], [], {}
    for port in roce:
        meaning = describe(port.gids, index)
        meanings[port.name] = meaning
        gid = find(port.gids, index)
        if meaning == "absent" or meaning.endswith("link-local") or (gid and gid.foreign):
            bad.append(f"{port.name}: {meaning}")
        elif "v1" in meaning:
            v1.append(f"{port.name}: {meaning}")
    if bad:
        return [Problem("error", "NCCL_IB_GID_INDEX", value,
                        "points at no routable GID on this host's RoCE ports (" + "; ".join(bad)
                        + "): the queue pairs cannot connect across nodes", fix)]
    if v1:
        return [Problem("error", "NCCL_IB_GID_INDEX", value,
                        "points at RoCE v1 GIDs (" + "; ".join(v1) + "): RoCE v1 is an Ethernet "
                        "link-layer protocol, not routable across IP subnets", fix)]
    if len(set(meanings.values())) > 1:
        return [Problem("warning", "NCCL_IB_GID_INDEX", value,
                        "means different GID types on this host's RoCE ports ("
                        + "; ".join(f"{n}: {m}" for n, m in meanings.items())
                        + "): NCCL would mix address families", fix)]
    return []
