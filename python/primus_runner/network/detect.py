"""``detect_nics``: every network value of one host in one pass (the CLI is cli.py).

Everything is read under a root directory (``--sysfs-root``, env
``PRIMUS_SYSFS_ROOT``, default ``/``) so tests run on fake trees (see
routes.py, interfaces.py, hca.py and gids.py for each rule). A variable the
user already set is never replaced: ``as_env()`` leaves it out, and
NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME follow a user's IP_INTERFACE.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from primus_runner.network.common import DEFAULT_HCA_EXCLUDE, compile_pattern
from primus_runner.network.gids import AUTO_GID_INDEX, DEFAULT_GID_INDEX
from primus_runner.network.hca import HcaPort, choose_hcas, mark_own_gids, read_ports
from primus_runner.network.interfaces import (
    DEFAULT_SOCKET_EXCLUDE,
    Interface,
    choose_interface,
    gloo_ifname_from,
    nccl_ifname_for,
    read_interfaces,
)
from primus_runner.network.routes import local_addresses, read_routes
from primus_runner.records import asdict, dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any

ENV_VARS = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "IP_INTERFACE", "NCCL_SOCKET_IFNAME",
            "GLOO_SOCKET_IFNAME", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ROCE_VERSION_NUM")
GET_VARS = ENV_VARS[:5]


@dataclass
class NicResult:
    ports: list[HcaPort]
    interfaces: list[Interface]
    nccl_ib_hca: str | None
    gid_index: int
    gid_origin: str               # "detected", "auto" (per port, NCCL >= 2.21) or "default"
    interface: str | None
    interface_reason: str
    user: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    gid_extra: dict[str, str] = field(default_factory=dict)

    def as_env(self) -> dict[str, str]:
        """Detected values for the variables the user has not set."""
        out: dict[str, str] = {}
        if "NCCL_IB_HCA" not in self.user and self.nccl_ib_hca:
            out["NCCL_IB_HCA"] = self.nccl_ib_hca
        if "NCCL_IB_GID_INDEX" not in self.user:
            out["NCCL_IB_GID_INDEX"] = str(self.gid_index)
            for name, value in self.gid_extra.items():
                if name not in self.user:
                    out[name] = value
        names = [i.name for i in self.interfaces]
        iface = self.user.get("IP_INTERFACE") or self.interface
        user_nccl = self.user.get("NCCL_SOCKET_IFNAME")
        if iface and "IP_INTERFACE" not in self.user:
            out["IP_INTERFACE"] = iface
        if iface and user_nccl is None:
            out["NCCL_SOCKET_IFNAME"] = nccl_ifname_for(iface, names)
        if "GLOO_SOCKET_IFNAME" not in self.user:
            # Gloo takes plain names: derived from the chosen interface, never
            # a copy of NCCL's ^/=/prefix-list value.
            gloo = iface
            if user_nccl is not None and "IP_INTERFACE" not in self.user:
                gloo = gloo_ifname_from(user_nccl, self.interfaces, iface)
            if gloo:
                out["GLOO_SOCKET_IFNAME"] = gloo
        return out

    def chosen_ports(self) -> list[HcaPort]:
        return [p for p in self.ports if p.chosen]

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)
        data["env"] = self.as_env()
        return data


def choose_gid_index(ports: list[HcaPort], notes: list[str]) -> tuple[int, str, dict[str, str]]:
    """(NCCL_IB_GID_INDEX, origin, extra variables) for the chosen RoCE ports."""
    roce = [p for p in ports if p.chosen and p.link_layer == "Ethernet"]
    if not roce:
        return DEFAULT_GID_INDEX, "default", {}
    indexes = {p.name: p.gid_index for p in roce}
    distinct = sorted({i for i in indexes.values() if i is not None})
    if len(distinct) == 1:
        return distinct[0], "detected", {}
    # choose_hcas keeps one family on the chosen RoCE ports: IPv4, else IPv6.
    family = "IPv6" if all(p.gid_family == "IPv6" for p in roce) else "IPv4"
    af = "AF_INET6" if family == "IPv6" else "AF_INET"
    notes.append(f"the RoCE v2 {family} GID sits at different indexes on this host's chosen ports ("
                 + ", ".join(f"{name}={index}" for name, index in indexes.items())
                 + f"): NCCL_IB_GID_INDEX={AUTO_GID_INDEX} lets NCCL >= 2.21 pick each port's GID "
                 f"by NCCL_IB_ADDR_FAMILY={af} and NCCL_IB_ROCE_VERSION_NUM=2. With an older "
                 "RCCL/NCCL, restrict NCCL_IB_HCA to ports that share one index")
    return AUTO_GID_INDEX, "auto", {"NCCL_IB_ADDR_FAMILY": af, "NCCL_IB_ROCE_VERSION_NUM": "2"}


def detect_nics(sysfs_root: str = "/", env: Mapping[str, str] | None = None,
                master_addr: str | None = None) -> NicResult:
    env = os.environ if env is None else env
    hca_exclude = compile_pattern("PRIMUS_IB_HCA_EXCLUDE", env.get("PRIMUS_IB_HCA_EXCLUDE", DEFAULT_HCA_EXCLUDE))
    sock_exclude = compile_pattern("PRIMUS_SOCKET_IFNAME_EXCLUDE",
                                   env.get("PRIMUS_SOCKET_IFNAME_EXCLUDE", DEFAULT_SOCKET_EXCLUDE))
    notes: list[str] = []
    routes = read_routes(sysfs_root)
    addresses = local_addresses(sysfs_root, routes)
    ports = read_ports(sysfs_root)
    mark_own_gids(ports, addresses, sysfs_root)
    hca = choose_hcas(sysfs_root, ports, hca_exclude)
    for port in ports:
        if port.reason.startswith("RoCE port with"):
            notes.append(f"RDMA port {port.name} left out of NCCL_IB_HCA: {port.reason}")
    rdma = [p for p in ports if p.link_layer in ("InfiniBand", "Ethernet")]
    if rdma and hca is None and not env.get("NCCL_IB_HCA"):
        # Never exported empty: NCCL reads an empty or unset NCCL_IB_HCA as "every device"
        # (NVIDIA/nccl src/transport/net_ib/init.cc, ncclIbInitDevices: matchIfList with an
        # empty list matches every device; a port not IBV_PORT_ACTIVE is skipped).
        notes.append("no RDMA port here is usable (" + "; ".join(f"{p.name}: {p.reason}" for p in rdma)
                     + "): NCCL_IB_HCA stays unset, and NCCL then tries every device. Export "
                     "NCCL_IB_DISABLE=1 to use sockets, or bring a port up with a routable GID")
    gid, gid_origin, gid_extra = choose_gid_index(ports, notes)
    interfaces = read_interfaces(sysfs_root, addresses, sock_exclude)
    if master_addr is None:
        master_addr = (env.get("MASTER_ADDR") or "").strip() or None
    iface, why = choose_interface(sysfs_root, interfaces, routes, master_addr, notes)
    user = {name: env[name] for name in ENV_VARS if env.get(name)}
    return NicResult(ports=ports, interfaces=interfaces, nccl_ib_hca=hca, gid_index=gid,
                     gid_origin=gid_origin, interface=iface, interface_reason=why, user=user,
                     notes=notes, gid_extra=gid_extra)
