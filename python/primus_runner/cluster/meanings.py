"""What the per-node network values mean on this node, for the cluster check.

Nodes name their NICs differently (``eno1`` vs ``eth0``, ``mlx5_0`` vs
``mlx5_2``) and containers see RoCE GIDs at different indexes (3 vs 7), so the
cluster check (clustercheck.py) compares what each value means, never its text:

- NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME / IP_INTERFACE: the IPv4 subnet(s) of
  the usable interfaces the value selects, and their class (ethernet, bond,
  IPoIB: ``sys/class/net/<if>/type`` and ``bonding/``). NCCL_SOCKET_IFNAME is
  NCCL's prefix list, the other two plain names.
- NCCL_IB_HCA: how many ACTIVE ports it selects (NCCL skips ports that are not
  ACTIVE: one node with a port down gets a shorter list, and NCCL then pairs
  different rails) and their link layer(s).
- NCCL_IB_GID_INDEX: the GID type and family it points at on the selected RoCE
  ports (``-1``: the family and RoCE version NCCL then picks).

``why`` lists, per variable, what this node left out (an RDMA port that is not
ACTIVE or has no routable GID, with the reason), so a mismatch names the odd node
and the cause (what it left out that the other nodes did not).
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from primus_runner.network.common import MEANING_VARS, SOCKET_VARS, read

TYPE_CHECKING = False
if TYPE_CHECKING:
    from primus_runner.network.detect import NicResult
    from primus_runner.network.routes import Route

_CLASSES = {"1": "ethernet", "32": "IPoIB", "772": "loopback"}


def interface_class(root: str, name: str) -> str:
    """'bond', 'bridge', 'ethernet', 'IPoIB', ... from ``<root>/sys/class/net/<name>``."""
    base = os.path.join(root, "sys/class/net", name)
    if os.path.isdir(os.path.join(base, "bonding")):
        return "bond"
    if os.path.isdir(os.path.join(base, "bridge")):
        return "bridge"
    kind = read(os.path.join(base, "type")) or ""
    return _CLASSES.get(kind, f"type {kind}" if kind else "unknown")


def _subnets(result: NicResult, names: list[str], routes: list[Route]) -> list[str]:
    from primus_runner.network.common import int_to_ip, ip_to_int

    out: set[str] = set()
    by_name = {i.name: i for i in result.interfaces}
    for name in names:
        iface = by_name.get(name)
        if iface is None or not iface.usable:
            continue
        for ip in iface.addresses:
            value = ip_to_int(ip)
            for route in routes:
                if (route.iface == name and route.gateway == 0 and route.mask and value is not None
                        and value & route.mask == route.dest):
                    out.add(f"{int_to_ip(route.dest)}/{route.prefix}")
    return sorted(out)


def meanings(env: Mapping[str, str], root: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(what each per-node network value means here, why: what this node left out)."""
    from primus_runner.network import detect_nics, read_routes
    from primus_runner.network.gids import AUTO_GID_INDEX, describe
    from primus_runner.network.hca import select_ports
    from primus_runner.network.interfaces import select_interfaces

    wanted = [n for n in MEANING_VARS if env.get(n)]
    if not wanted:
        return {}, {}
    result = detect_nics(root, env)
    routes = read_routes(root)
    names = [i.name for i in result.interfaces]
    usable = {i.name for i in result.interfaces if i.usable}
    out: dict[str, str] = {}
    why: dict[str, list[str]] = {}
    for var in SOCKET_VARS:
        value = env.get(var)
        if not value:
            continue
        picked = select_interfaces(value, names) if var == "NCCL_SOCKET_IFNAME" else \
            [n.strip() for n in value.split(",")]
        subnets = _subnets(result, picked, routes)
        classes = sorted({interface_class(root, n) for n in picked if n in usable})
        out[var] = (f"IPv4 subnet {', '.join(subnets)} ({', '.join(classes)})" if subnets
                    else "no usable IPv4 interface")
    ports = result.chosen_ports()
    if env.get("NCCL_IB_HCA"):
        selected, _ = select_ports(env["NCCL_IB_HCA"], result.ports)
        ports = [p for p in selected if p.state == "ACTIVE"]
        layers = sorted({p.link_layer for p in ports})
        out["NCCL_IB_HCA"] = (f"{len(ports)} ACTIVE port(s), link layer {', '.join(layers)}"
                              if layers else "no ACTIVE RDMA port")
        left = [f"{p.name} {p.reason or 'state ' + p.state}" for p in result.ports
                if p not in ports and p.link_layer in ("InfiniBand", "Ethernet") and p.reason]
        if left:
            why["NCCL_IB_HCA"] = left
    gid = env.get("NCCL_IB_GID_INDEX", "")
    if gid:
        roce = [p for p in ports if p.link_layer == "Ethernet"]
        if not roce:
            out["NCCL_IB_GID_INDEX"] = "not used (no RoCE port)"
        elif gid.lstrip("-").isdigit() and int(gid) == AUTO_GID_INDEX:
            family = "IPv6" if env.get("NCCL_IB_ADDR_FAMILY") == "AF_INET6" else "IPv4"
            out["NCCL_IB_GID_INDEX"] = f"RoCE v{env.get('NCCL_IB_ROCE_VERSION_NUM') or '2'} {family}"
        elif gid.isdigit():
            out["NCCL_IB_GID_INDEX"] = ", ".join(sorted({describe(p.gids, int(gid)) for p in roce}))
    return out, why
