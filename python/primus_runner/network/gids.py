"""RoCE GIDs: what each GID table entry is, and which index NCCL should use.

Sysfs: ``<dev>/ports/<n>/gids/<i>`` (the GID, all zeros or EINVAL when the
slot is empty) and ``gid_attrs/types/<i>`` ("IB/RoCE v1" or "RoCE v2").

Choice, per chosen RoCE port: the lowest index whose type is RoCE v2 and whose
GID is an IPv4-mapped address (``::ffff:a.b.c.d``) of the port's own netdev
(``gid_attrs/ndevs/<i>`` names it; its IPv4 must be one of that netdev's
addresses, see ``mark_foreign``): routable over IP and what NCCL itself looks
for by default. A port without one whose only routable GID is a global IPv6
address (RoCE v2, not link-local ``fe80::/10``) uses the lowest such index: an
IPv6-only RoCE fabric is routable too. NCCL's own rule is the same: a GID
counts as valid when it is configured and not link-local (NVIDIA/nccl
src/transport/net_ib/connect.cc, ``validGid``/``linkLocalGid``), and with
``NCCL_IB_GID_INDEX=-1`` it takes the GID of ``NCCL_IB_ADDR_FAMILY`` (AF_INET
by default: on an IPv6-only port it would find none and keep index 0, a
link-local GID) and ``NCCL_IB_ROCE_VERSION_NUM`` (``ncclIbGetGidIndex``).
A GID table shared with another network namespace (macvlan
containers on one port) also lists the neighbour's GIDs, which are never chosen
(IPv4 by the netdev's addresses; IPv6 by ``/proc/net/if_inet6`` when readable).
When every chosen port has it at the same index, that index is NCCL_IB_GID_INDEX. When the indexes differ between the
ports of one host (mixed mlx5/bnxt), no single index is right: the launcher
sets ``NCCL_IB_GID_INDEX=-1``, which since NCCL 2.21 makes NCCL select the GID
per device from ``NCCL_IB_ADDR_FAMILY`` (default AF_INET; AF_INET6 when the
chosen ports are IPv6-only) and ``NCCL_IB_ROCE_VERSION_NUM`` (default 2), and
sets both explicitly. Sources: NCCL src/transport/net_ib
(``NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", -1)``,
``NCCL_PARAM(IbRoceVersionNum, "IB_ROCE_VERSION_NUM", 2)``) and the NCCL
environment-variable docs (NCCL_IB_GID_INDEX, NCCL_IB_ADDR_FAMILY,
NCCL_IB_ROCE_VERSION_NUM). With an RCCL/NCCL older than 2.21 the fix is to
restrict NCCL_IB_HCA to ports that share one index (the note says which).
Across nodes the index may differ (containers: 3 on one node, 7 on another);
the cluster check compares what the index *means* (type and family), not its
number.
"""
from __future__ import annotations

from primus_runner.records import dataclass

DEFAULT_GID_INDEX = 3          # reference default (Primus base_env.sh)
AUTO_GID_INDEX = -1            # NCCL >= 2.21: select per device


@dataclass
class Gid:
    index: int
    gid: str
    type: str          # "RoCE v2", "IB/RoCE v1"
    family: str        # "IPv4", "IPv6", "link-local", "absent"
    ndev: str = ""     # gid_attrs/ndevs/<index>: the netdev the GID belongs to
    foreign: bool = False  # its IPv4 is not on this host's netdev (see mark_foreign)

    @property
    def routable_v2_ipv4(self) -> bool:
        return self.type.lower() == "roce v2" and self.family == "IPv4" and not self.foreign

    @property
    def routable_v2_ipv6(self) -> bool:
        """RoCE v2 on a global IPv6 address (link-local is family 'link-local')."""
        return self.type.lower() == "roce v2" and self.family == "IPv6" and not self.foreign

    @property
    def routable(self) -> bool:
        """A GID the queue pairs can use across IP subnets: RoCE v2, IPv4 or global IPv6,
        of this host's own netdev."""
        return self.routable_v2_ipv4 or self.routable_v2_ipv6

    def meaning(self) -> str:
        if self.foreign:
            owner = ipv4_from_gid(self.gid) or self.gid
            return f"{self.type} {self.family} of another netdev ({owner})"
        return f"{self.type} {self.family}"


def ipv4_from_gid(gid: str) -> str | None:
    """'0000:0000:0000:0000:0000:ffff:0a00:000b' -> '10.0.0.11'."""
    parts = gid.lower().split(":")
    if len(parts) != 8 or parts[:6] != ["0000"] * 5 + ["ffff"]:
        return None
    try:
        hi, lo = int(parts[6], 16), int(parts[7], 16)
    except ValueError:
        return None
    return f"{hi >> 8}.{hi & 255}.{lo >> 8}.{lo & 255}"


def gid_family(gid: str | None) -> str:
    """'IPv4' (IPv4-mapped), 'link-local' (fe80::/10), 'IPv6', or 'absent' (empty slot)."""
    digits = (gid or "").replace(":", "").lower()
    if len(digits) != 32 or any(c not in "0123456789abcdef" for c in digits) or int(digits, 16) == 0:
        return "absent"
    if ipv4_from_gid(gid or "") is not None:
        return "IPv4"
    if int(digits[:4], 16) & 0xFFC0 == 0xFE80:
        return "link-local"
    return "IPv6"


def mark_foreign(gids: list[Gid], netdevs: list[str], addresses: dict[str, list[str]],
                 ipv6: dict[str, set[str]] | None = None) -> None:
    """Mark the IPv4 (and global IPv6) GIDs whose address is not on the port's own netdev.

    A device shared between network namespaces (a macvlan or SR-IOV container
    next to another one on the same port) lists the neighbour's GIDs too; their
    IPv4 address belongs to a netdev of the other namespace. A GID counts as this
    host's when its IPv4 address is one of the addresses of its netdev
    (``gid_attrs/ndevs/<index>``, else the port's netdev), or its IPv6 address
    one of that netdev's in ``ipv6`` (``read_if_inet6``). When that netdev's
    addresses are unknown here, nothing is marked."""
    for gid in gids:
        dev = gid.ndev or (netdevs[0] if netdevs else "")
        if gid.family == "IPv6":
            owned6 = (ipv6 or {}).get(dev) if dev else None
            if owned6 and gid_digits(gid.gid) not in owned6:
                gid.foreign = True
            continue
        ip = ipv4_from_gid(gid.gid) if gid.family == "IPv4" else None
        owned = addresses.get(dev) if dev else None
        if ip is not None and owned and ip not in owned:
            gid.foreign = True


def gid_digits(gid: str) -> str:
    """'fd00:0030:...' -> the 32 lower-case hex digits (as /proc/net/if_inet6 prints them)."""
    return gid.replace(":", "").lower()


def read_if_inet6(text: str | None) -> dict[str, set[str]]:
    """``/proc/net/if_inet6`` (address, ifindex, prefix, scope, flags, name per line) to
    netdev -> its IPv6 addresses as 32 hex digits; {} when unreadable."""
    out: dict[str, set[str]] = {}
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) >= 6 and len(words[0]) == 32:
            out.setdefault(words[5], set()).add(words[0].lower())
    return out


def find(gids: list[Gid], index: int) -> Gid | None:
    return next((g for g in gids if g.index == index), None)


def describe(gids: list[Gid], index: int) -> str:
    """What index ``index`` means on a port: 'RoCE v2 IPv4', 'absent', ..."""
    for gid in gids:
        if gid.index == index:
            return gid.meaning()
    return "absent"


def v2_ipv4_index(gids: list[Gid]) -> int | None:
    found = [g.index for g in gids if g.routable_v2_ipv4]
    return min(found) if found else None


def v2_ipv6_index(gids: list[Gid]) -> int | None:
    found = [g.index for g in gids if g.routable_v2_ipv6]
    return min(found) if found else None


def routable_index(gids: list[Gid]) -> tuple[int, str] | None:
    """(index, 'IPv4' or 'IPv6') of the GID detection chooses on one port: the RoCE v2
    IPv4 GID, else the RoCE v2 global IPv6 GID, else None."""
    index = v2_ipv4_index(gids)
    if index is not None:
        return index, "IPv4"
    index = v2_ipv6_index(gids)
    return (index, "IPv6") if index is not None else None
