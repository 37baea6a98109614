"""RDMA ports (``<root>/sys/class/infiniband``) and NCCL_IB_HCA.

NCCL_IB_HCA lists ``dev:port`` for ports that are ACTIVE and LinkUp, with link
layer InfiniBand (preferred when any) or Ethernet (RoCE); EFA and other link
layers are left out. A RoCE port needs a routable GID (gids.py): RoCE v2 on
an IPv4 address, or else on a global IPv6 address. One with only link-local
``fe80::`` GIDs (no address on its netdev) is left out, with the reason: NCCL
could only use it within one L2 segment, or not at all. An IPv6-only port is
left out, with the reason, when other chosen RoCE ports use IPv4 (one
``NCCL_IB_ADDR_FAMILY`` for every port of the host).
A device is excluded when the regular expression ``PRIMUS_IB_HCA_EXCLUDE``
(default ``bond``) matches its name, one of its netdevs or their bond master.
Devices are in natural order; the list starts with ``=`` (NCCL's exact match)
when a chosen name is a prefix of a device that is not chosen (``mlx5_1``
would otherwise also select ``mlx5_10``).

NCCL_IB_HCA syntax (NCCL docs, "Environment Variables", NCCL_IB_HCA:
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html; NVIDIA/nccl
src/transport/net_ib/init.cc, ``ncclIbInitDevices``): comma list of
``name[:port]`` prefixes; a leading ``^`` excludes, a leading ``=`` (after
``^`` when both) makes every name exact; an empty or unset list selects every
device, and a port that is not ACTIVE is skipped whatever the list says.
"""
from __future__ import annotations

import os
import re

from primus_runner.network.common import listdir, natural_key, read, state_word
from primus_runner.network.gids import Gid, gid_family, mark_foreign, read_if_inet6, routable_index
from primus_runner.records import dataclass, field


@dataclass
class HcaPort:
    device: str
    port: int
    state: str
    phys_state: str
    link_layer: str
    netdevs: list[str]
    numa_node: int
    roce_v2_ipv4_gids: list[int]
    gids: list[Gid] = field(default_factory=list)
    chosen: bool = False
    reason: str = ""

    @property
    def name(self) -> str:
        return f"{self.device}:{self.port}"

    @property
    def gid_index(self) -> int | None:
        """The routable RoCE v2 GID detection would use (IPv4, else global IPv6)."""
        found = routable_index(self.gids)
        return found[0] if found else None

    @property
    def gid_family(self) -> str | None:
        """'IPv4' or 'IPv6': the family of ``gid_index``'s GID."""
        found = routable_index(self.gids)
        return found[1] if found else None


def read_ports(root: str) -> list[HcaPort]:
    base = os.path.join(root, "sys/class/infiniband")
    ports: list[HcaPort] = []
    for dev in sorted(listdir(base), key=natural_key):
        dev_dir = os.path.join(base, dev)
        numa_text = read(os.path.join(dev_dir, "device/numa_node"))
        numa = int(numa_text) if numa_text and numa_text.lstrip("-").isdigit() else -1
        dev_netdevs = sorted(listdir(os.path.join(dev_dir, "device/net")), key=natural_key)
        for port_name in sorted(listdir(os.path.join(dev_dir, "ports")), key=natural_key):
            if not port_name.isdigit():
                continue
            pdir = os.path.join(dev_dir, "ports", port_name)
            state = state_word(read(os.path.join(pdir, "state")))
            link_layer = read(os.path.join(pdir, "link_layer")) or "unknown"
            netdevs = list(dev_netdevs)
            gids: list[Gid] = []
            if link_layer == "Ethernet":
                # GID types first: a slot without a type is empty (EINVAL on a real host).
                indices = sorted((i for i in listdir(os.path.join(pdir, "gids")) if i.isdigit()), key=int)
                for idx in indices:
                    gtype = read(os.path.join(pdir, "gid_attrs/types", idx))
                    if not gtype:
                        continue
                    value = read(os.path.join(pdir, "gids", idx)) or ""
                    family = gid_family(value)
                    if family != "absent":
                        owner = read(os.path.join(pdir, "gid_attrs/ndevs", idx)) or ""
                        gids.append(Gid(int(idx), value, gtype.strip(), family, owner.strip()))
                if not netdevs:
                    for idx in indices[:4]:
                        ndev = read(os.path.join(pdir, "gid_attrs/ndevs", idx))
                        if ndev:
                            netdevs = [ndev]
                            break
            ports.append(HcaPort(
                device=dev, port=int(port_name), state=state,
                phys_state=state_word(read(os.path.join(pdir, "phys_state"))),
                link_layer=link_layer, netdevs=netdevs, numa_node=numa,
                roce_v2_ipv4_gids=[g.index for g in gids if g.routable_v2_ipv4], gids=gids))
    return ports


def mark_own_gids(ports: list[HcaPort], addresses: dict[str, list[str]], root: str = "") -> None:
    """Leave out of each port's routable GIDs those of another netdev
    (gids.mark_foreign; IPv6 by ``<root>/proc/net/if_inet6`` when ``root`` is
    given and the file is readable); run before ``choose_hcas``."""
    ipv6 = read_if_inet6(read(os.path.join(root, "proc/net/if_inet6"))) if root else {}
    for port in ports:
        mark_foreign(port.gids, port.netdevs, addresses, ipv6)
        port.roce_v2_ipv4_gids = [g.index for g in port.gids if g.routable_v2_ipv4]


def _bond_master(root: str, netdev: str) -> str | None:
    link = os.path.join(root, "sys/class/net", netdev, "master")
    try:
        return os.path.basename(os.readlink(link))
    except OSError:
        return None


def _no_routable_gid(port: HcaPort) -> str:
    kinds = sorted({g.family for g in port.gids})
    if not port.gids:
        return "no GID at all (no address on its netdev)"
    if kinds == ["link-local"]:
        return "only link-local fe80:: GIDs (no IPv4 or global IPv6 address on its netdev)"
    return f"no routable RoCE v2 GID (GIDs: {', '.join(g.meaning() for g in port.gids)})"


def choose_hcas(root: str, ports: list[HcaPort], exclude: re.Pattern[str]) -> str | None:
    """Mark chosen ports and return the NCCL_IB_HCA value (or None)."""
    for port in ports:
        names = [port.device, *port.netdevs]
        names += [m for m in (_bond_master(root, n) for n in port.netdevs) if m]
        hit = next((n for n in names if exclude.search(n)), None)
        if port.state != "ACTIVE":
            port.reason = f"state {port.state}"
        elif port.phys_state != "LinkUp":
            port.reason = f"phys_state {port.phys_state}"
        elif port.link_layer not in ("InfiniBand", "Ethernet"):
            port.reason = f"link layer {port.link_layer} (not IB/RoCE)"
        elif hit is not None:
            port.reason = f"excluded by PRIMUS_IB_HCA_EXCLUDE ('{hit}')"
        elif port.link_layer == "Ethernet" and port.gid_index is None:
            port.reason = f"RoCE port with {_no_routable_gid(port)}"
        else:
            port.chosen = True
    layers = {p.link_layer for p in ports if p.chosen}
    if layers == {"InfiniBand", "Ethernet"}:
        for port in ports:
            if port.chosen and port.link_layer == "Ethernet":
                port.chosen = False
                port.reason = "Ethernet port on a host with InfiniBand ports"
    families = {p.gid_family for p in ports if p.chosen and p.link_layer == "Ethernet"}
    if families == {"IPv4", "IPv6"}:
        for port in ports:
            if port.chosen and port.gid_family == "IPv6":
                port.chosen = False
                port.reason = ("RoCE port with only a RoCE v2 IPv6 GID on a host whose other RoCE "
                               "ports use IPv4 (NCCL picks GIDs of one address family)")
    chosen = [p for p in ports if p.chosen]
    if not chosen:
        return None
    chosen_names = {p.device for p in chosen}
    others = {p.device for p in ports} - chosen_names
    exact = any(o.startswith(n) for n in chosen_names for o in others)
    value = ",".join(p.name for p in chosen)
    return f"={value}" if exact else value


# -- NCCL_IB_HCA syntax ----------------------------------------------------------
def parse_hca_list(value: str) -> tuple[bool, bool, list[tuple[str, int | None]]]:
    """(exclude, exact, [(device, port or None)]) for '^=mlx5_0:1,mlx5_1'."""
    body = value.strip()
    exclude = body.startswith("^")
    if exclude:
        body = body[1:]
    exact = body.startswith("=")
    if exact:
        body = body[1:]
    items: list[tuple[str, int | None]] = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        dev, sep, port = item.partition(":")
        items.append((dev, int(port) if sep and port.isdigit() else (-1 if sep else None)))
    return exclude, exact, items


def _item_hits(ports: list[HcaPort], exact: bool, dev: str, port: int | None) -> list[HcaPort]:
    return [p for p in ports
            if (p.device == dev if exact else p.device.startswith(dev))
            and (port is None or p.port == port)]


def select_ports(value: str, ports: list[HcaPort]) -> tuple[list[HcaPort], list[str]]:
    """Ports an NCCL_IB_HCA value selects, and the items that name nothing here."""
    exclude, exact, items = parse_hca_list(value)
    hit: list[HcaPort] = []
    unknown: list[str] = []
    for dev, port in items:
        found = _item_hits(ports, exact, dev, port)
        if not found:
            unknown.append(f"{dev}:{port}" if port is not None and port >= 0 else
                           (f"{dev}:?" if port == -1 else dev))
        hit.extend(p for p in found if p not in hit)
    if exclude:
        return [p for p in ports if p not in hit], unknown
    return hit, unknown
