"""RDMA HCA, RoCE GID index and socket interface detection (SPEC section 6).

Everything is read under a root directory (``--sysfs-root``, env
``PRIMUS_SYSFS_ROOT``, default ``/``) so tests run on fake trees:

- HCAs: ``<root>/sys/class/infiniband/<dev>/ports/<n>/{state,phys_state,
  link_layer,gids/<i>,gid_attrs/types/<i>,gid_attrs/ndevs/<i>}``,
  ``<dev>/device/numa_node`` and ``<dev>/device/net/<netdev>``.
- Interfaces: ``<root>/sys/class/net/<if>/{operstate,type,bridge/,bonding/,master}``.
- Addresses: on the real root (``/``) psutil's ``net_if_addrs()``. Under any
  other root, the kernel's own text files: local IPv4 addresses are the
  ``/32 host LOCAL`` leaves of ``<root>/proc/net/fib_trie``, each assigned to the
  interface whose connected route (no gateway) in ``<root>/proc/net/route``
  holds it with the longest prefix. A fake tree is therefore made with
  ``cat /proc/net/fib_trie /proc/net/route`` from a real machine.
- Routes: ``<root>/proc/net/route`` (the main table); host names in
  ``<root>/etc/hosts`` (and DNS on the real root).

Rules:
- NCCL_IB_HCA lists ``dev:port`` for ports that are ACTIVE and LinkUp, with link
  layer InfiniBand (preferred when any) or Ethernet (RoCE); EFA and other link
  layers are left out. A device is excluded when the regular expression
  ``PRIMUS_IB_HCA_EXCLUDE`` (default ``bond``) matches its name, one of its
  netdevs or their bond master. Devices are in natural order; the list starts
  with ``=`` (NCCL's exact match) when a chosen name is a prefix of a device
  that is not chosen (``mlx5_1`` would otherwise also select ``mlx5_10``).
- NCCL_IB_GID_INDEX (RoCE): the lowest GID index whose type is ``RoCE v2`` and
  whose GID is an IPv4-mapped address (``::ffff:a.b.c.d``) on every chosen port;
  otherwise the reference default 3.
- Socket interface: the interface holding MASTER_ADDR's IPv4 exactly, else the
  one the longest-prefix route to MASTER_ADDR uses, else the one holding the
  host's primary IPv4 (its host name's address) exactly, else the default
  route's, else the first usable one. Never loopback, bridges, or names matching
  ``PRIMUS_SOCKET_IFNAME_EXCLUDE`` (default: lo, docker*, br-*, virbr*, veth*,
  cni*, flannel*, cali*, kube-*, tunl*, vxlan*, weave*, podman*, lxcbr*, ifb*,
  dummy*); interfaces that are down are skipped.
- A variable the user already set is never replaced: ``as_env()`` leaves it out,
  and NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME follow a user's IP_INTERFACE.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping

from primus_runner.errors import UsageError
from primus_runner.records import asdict, dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any

DEFAULT_GID_INDEX = 3
DEFAULT_HCA_EXCLUDE = r"bond"
DEFAULT_SOCKET_EXCLUDE = (r"^(lo|docker.*|br-.*|virbr.*|veth.*|cni.*|flannel.*|cali.*|kube-.*|"
                          r"tunl.*|vxlan.*|weave.*|podman.*|lxcbr.*|lxdbr.*|ifb.*|dummy.*)$")
ENV_VARS = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "IP_INTERFACE", "NCCL_SOCKET_IFNAME",
            "GLOO_SOCKET_IFNAME")
ARPHRD_LOOPBACK = "772"


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
    chosen: bool = False
    reason: str = ""


@dataclass
class Interface:
    name: str
    addresses: list[str]
    operstate: str
    usable: bool
    reason: str = ""


@dataclass
class NicResult:
    ports: list[HcaPort]
    interfaces: list[Interface]
    nccl_ib_hca: str | None
    gid_index: int
    gid_origin: str               # "detected" or "default"
    interface: str | None
    interface_reason: str
    user: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_env(self) -> dict[str, str]:
        """Detected values for the variables the user has not set."""
        out: dict[str, str] = {}
        if "NCCL_IB_HCA" not in self.user and self.nccl_ib_hca:
            out["NCCL_IB_HCA"] = self.nccl_ib_hca
        if "NCCL_IB_GID_INDEX" not in self.user:
            out["NCCL_IB_GID_INDEX"] = str(self.gid_index)
        iface = self.user.get("IP_INTERFACE") or self.interface
        if iface:
            if "IP_INTERFACE" not in self.user:
                out["IP_INTERFACE"] = iface
            nccl = self.user.get("NCCL_SOCKET_IFNAME") or iface
            if "NCCL_SOCKET_IFNAME" not in self.user:
                out["NCCL_SOCKET_IFNAME"] = nccl
            if "GLOO_SOCKET_IFNAME" not in self.user:
                out["GLOO_SOCKET_IFNAME"] = nccl
        return out

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)
        data["env"] = self.as_env()
        return data


# -- small readers -------------------------------------------------------------
def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:      # missing, or EINVAL for an empty GID slot
        return None


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def natural_key(name: str) -> list[int | str]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _state_word(text: str | None) -> str:
    """'4: ACTIVE' -> 'ACTIVE', '5: LinkUp' -> 'LinkUp'."""
    if not text:
        return "unknown"
    return text.split(":", 1)[1].strip() if ":" in text else text.strip()


def _compile(name: str, pattern: str) -> re.Pattern[str]:
    if pattern == "":
        return re.compile(r"(?!)")  # set but empty: exclude nothing (an empty regex matches all)
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"{name}='{pattern}' is not a valid regular expression ({exc}); "
                         f"accepted: a Python regular expression, e.g. '{DEFAULT_HCA_EXCLUDE}'") from None


def _ipv4_from_gid(gid: str) -> str | None:
    """'0000:0000:0000:0000:0000:ffff:0a00:000b' -> '10.0.0.11'."""
    parts = gid.lower().split(":")
    if len(parts) != 8 or parts[:6] != ["0000"] * 5 + ["ffff"]:
        return None
    try:
        hi, lo = int(parts[6], 16), int(parts[7], 16)
    except ValueError:
        return None
    return f"{hi >> 8}.{hi & 255}.{lo >> 8}.{lo & 255}"


# -- HCAs --------------------------------------------------------------------
def read_ports(root: str) -> list[HcaPort]:
    base = os.path.join(root, "sys/class/infiniband")
    ports: list[HcaPort] = []
    for dev in sorted(_listdir(base), key=natural_key):
        dev_dir = os.path.join(base, dev)
        numa_text = _read(os.path.join(dev_dir, "device/numa_node"))
        numa = int(numa_text) if numa_text and numa_text.lstrip("-").isdigit() else -1
        dev_netdevs = sorted(_listdir(os.path.join(dev_dir, "device/net")), key=natural_key)
        for port_name in sorted(_listdir(os.path.join(dev_dir, "ports")), key=natural_key):
            if not port_name.isdigit():
                continue
            pdir = os.path.join(dev_dir, "ports", port_name)
            state = _state_word(_read(os.path.join(pdir, "state")))
            link_layer = _read(os.path.join(pdir, "link_layer")) or "unknown"
            netdevs = list(dev_netdevs)
            gids: list[int] = []
            if link_layer == "Ethernet":
                # GID types first: only RoCE v2 entries have their GID read. Empty
                # slots fail with EINVAL on a real host and are skipped.
                indices = sorted((i for i in _listdir(os.path.join(pdir, "gids")) if i.isdigit()), key=int)
                for idx in indices if state == "ACTIVE" else []:
                    gtype = _read(os.path.join(pdir, "gid_attrs/types", idx))
                    if gtype and gtype.strip().lower() == "roce v2" and _ipv4_from_gid(
                            _read(os.path.join(pdir, "gids", idx)) or ""):
                        gids.append(int(idx))
                if not netdevs:
                    for idx in indices[:4]:
                        ndev = _read(os.path.join(pdir, "gid_attrs/ndevs", idx))
                        if ndev:
                            netdevs = [ndev]
                            break
            ports.append(HcaPort(
                device=dev, port=int(port_name), state=state,
                phys_state=_state_word(_read(os.path.join(pdir, "phys_state"))),
                link_layer=link_layer, netdevs=netdevs, numa_node=numa, roce_v2_ipv4_gids=gids))
    return ports


def _bond_master(root: str, netdev: str) -> str | None:
    link = os.path.join(root, "sys/class/net", netdev, "master")
    try:
        return os.path.basename(os.readlink(link))
    except OSError:
        return None


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
        else:
            port.chosen = True
    layers = {p.link_layer for p in ports if p.chosen}
    if layers == {"InfiniBand", "Ethernet"}:
        for port in ports:
            if port.chosen and port.link_layer == "Ethernet":
                port.chosen = False
                port.reason = "Ethernet port on a host with InfiniBand ports"
    chosen = [p for p in ports if p.chosen]
    if not chosen:
        return None
    chosen_names = {p.device for p in chosen}
    others = {p.device for p in ports} - chosen_names
    exact = any(o.startswith(n) for n in chosen_names for o in others)
    value = ",".join(f"{p.device}:{p.port}" for p in chosen)
    return f"={value}" if exact else value


def choose_gid_index(ports: list[HcaPort], notes: list[str]) -> tuple[int, str]:
    roce = [p for p in ports if p.chosen and p.link_layer == "Ethernet"]
    if not roce:
        return DEFAULT_GID_INDEX, "default"
    common = set(roce[0].roce_v2_ipv4_gids)
    for port in roce[1:]:
        common &= set(port.roce_v2_ipv4_gids)
    if common:
        return min(common), "detected"
    notes.append("no GID index holds a RoCE v2 IPv4 address on every chosen port "
                 + ", ".join(f"{p.device}:{p.port}={p.roce_v2_ipv4_gids}" for p in roce)
                 + f"; using the default {DEFAULT_GID_INDEX}")
    return DEFAULT_GID_INDEX, "default"


# -- addresses and routes -------------------------------------------------------
def _ip_to_int(ip: str) -> int | None:
    parts = ip.split(".")
    if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
        return None
    return (int(parts[0]) << 24) | (int(parts[1]) << 16) | (int(parts[2]) << 8) | int(parts[3])


def _hex_le(text: str) -> int:
    """/proc/net/route's little-endian hex ('010200C0' is 192.0.2.1) to an int."""
    value = int(text, 16)
    return int.from_bytes(value.to_bytes(4, "little"), "big")


@dataclass
class Route:
    iface: str
    dest: int
    mask: int
    gateway: int
    metric: int


def read_routes(root: str) -> list[Route]:
    text = _read(os.path.join(root, "proc/net/route")) or ""
    routes: list[Route] = []
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 8:
            continue
        try:
            flags = int(cols[3], 16)
            if not flags & 1:           # RTF_UP
                continue
            routes.append(Route(cols[0], _hex_le(cols[1]), _hex_le(cols[7]), _hex_le(cols[2]),
                                int(cols[6])))
        except ValueError:
            continue
    return routes


def local_addresses_from_proc(root: str, routes: list[Route],
                              ambiguous: list[str] | None = None) -> dict[str, list[str]]:
    """Interface -> IPv4 addresses from fib_trie's '/32 host LOCAL' leaves and route.

    An address whose best connected route exists on two interfaces cannot be
    placed this way; it is appended to ``ambiguous`` when a list is given."""
    text = _read(os.path.join(root, "proc/net/fib_trie")) or ""
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
        value = _ip_to_int(ip)
        if value is None:
            continue
        if (value >> 24) == 127:
            out.setdefault("lo", []).append(ip)
            continue
        best = None
        tied: set[str] = set()
        for route in routes:
            if route.gateway == 0 and route.mask and value & route.mask == route.dest:
                key = (bin(route.mask).count("1"), -route.metric)
                if best is None or key > best[0]:
                    best, tied = (key, route.iface), {route.iface}
                elif key == best[0]:
                    tied.add(route.iface)
        if best is not None:
            out.setdefault(best[1], []).append(ip)
            if len(tied) > 1 and ambiguous is not None:
                ambiguous.append(ip)
    return out


def local_addresses(root: str, routes: list[Route]) -> dict[str, list[str]]:
    """On the real root the kernel's own tables answer unless two interfaces
    share a subnet; only then psutil (whose import alone costs ~50 ms of the
    launch budget) is asked."""
    if os.path.realpath(root) != "/":
        return local_addresses_from_proc(root, routes)
    ambiguous: list[str] = []
    found = local_addresses_from_proc(root, routes, ambiguous)
    if found and not ambiguous:
        return found
    import socket

    try:
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
    if _ip_to_int(host) is not None:
        return host
    wanted = host.lower()
    for line in (_read(os.path.join(root, "etc/hosts")) or "").splitlines():
        cols = line.split("#", 1)[0].split()
        if len(cols) >= 2 and _ip_to_int(cols[0]) is not None and wanted in (c.lower() for c in cols[1:]):
            return cols[0]
    if os.path.realpath(root) == "/":
        import socket

        try:
            infos = socket.getaddrinfo(host, None, socket.AF_INET)
        except OSError:
            return None
        return str(infos[0][4][0]) if infos else None
    return None


def host_name(root: str) -> str | None:
    if os.path.realpath(root) == "/":
        return os.uname().nodename
    return _read(os.path.join(root, "etc/hostname"))


def read_interfaces(root: str, addresses: dict[str, list[str]], exclude: re.Pattern[str]) -> list[Interface]:
    base = os.path.join(root, "sys/class/net")
    names = set(_listdir(base)) | set(addresses)
    out: list[Interface] = []
    for name in sorted(names, key=natural_key):
        idir = os.path.join(base, name)
        operstate = _read(os.path.join(idir, "operstate")) or "unknown"
        reason = ""
        if name == "lo" or _read(os.path.join(idir, "type")) == ARPHRD_LOOPBACK:
            reason = "loopback"
        elif os.path.isdir(os.path.join(idir, "bridge")):
            reason = "bridge"
        elif exclude.search(name):
            reason = "excluded by PRIMUS_SOCKET_IFNAME_EXCLUDE"
        elif operstate not in ("up", "unknown"):
            reason = f"operstate {operstate}"
        elif not addresses.get(name):
            reason = "no IPv4 address"
        out.append(Interface(name, list(addresses.get(name, [])), operstate, not reason, reason))
    return out


def choose_interface(root: str, interfaces: list[Interface], routes: list[Route],
                     master_addr: str | None, notes: list[str]) -> tuple[str | None, str]:
    usable = {i.name: i for i in interfaces if i.usable}
    holder = {ip: i.name for i in interfaces if i.usable for ip in i.addresses}
    from primus_runner.ranks import is_loopback

    if master_addr and not is_loopback(master_addr):
        ip = resolve_ipv4(root, master_addr)
        if ip is None:
            notes.append(f"MASTER_ADDR '{master_addr}' has no IPv4 address here; "
                         "using the host's primary interface")
        elif ip in holder:
            return holder[ip], f"holds MASTER_ADDR {ip}"
        else:
            value = _ip_to_int(ip)
            best = None
            for route in routes:
                if value is not None and value & route.mask == route.dest and route.iface in usable:
                    key = (bin(route.mask).count("1"), -route.metric)
                    if best is None or key > best[0]:
                        best = (key, route.iface)
            if best is not None:
                return best[1], f"routes to MASTER_ADDR {ip}"
            notes.append(f"no usable interface routes to MASTER_ADDR {ip}")
    name = host_name(root)
    primary = resolve_ipv4(root, name) if name else None
    if primary and primary in holder:
        return holder[primary], f"holds the primary IPv4 {primary} of host {name}"
    defaults = sorted((r for r in routes if r.mask == 0 and r.iface in usable), key=lambda r: r.metric)
    if defaults:
        return defaults[0].iface, "default route"
    if usable:
        first = next(iter(usable))
        return first, "first usable interface"
    notes.append("no usable network interface (only loopback, bridges or excluded names)")
    return None, "none"


def detect_nics(sysfs_root: str = "/", env: Mapping[str, str] | None = None,
                master_addr: str | None = None) -> NicResult:
    env = os.environ if env is None else env
    hca_exclude = _compile("PRIMUS_IB_HCA_EXCLUDE", env.get("PRIMUS_IB_HCA_EXCLUDE", DEFAULT_HCA_EXCLUDE))
    sock_exclude = _compile("PRIMUS_SOCKET_IFNAME_EXCLUDE",
                            env.get("PRIMUS_SOCKET_IFNAME_EXCLUDE", DEFAULT_SOCKET_EXCLUDE))
    notes: list[str] = []
    ports = read_ports(sysfs_root)
    hca = choose_hcas(sysfs_root, ports, hca_exclude)
    gid, gid_origin = choose_gid_index(ports, notes)
    routes = read_routes(sysfs_root)
    interfaces = read_interfaces(sysfs_root, local_addresses(sysfs_root, routes), sock_exclude)
    if master_addr is None:
        master_addr = (env.get("MASTER_ADDR") or "").strip() or None
    iface, why = choose_interface(sysfs_root, interfaces, routes, master_addr, notes)
    user = {name: env[name] for name in ENV_VARS if env.get(name)}
    if "IP_INTERFACE" in user and user["IP_INTERFACE"] not in {i.name for i in interfaces}:
        notes.append(f"IP_INTERFACE={user['IP_INTERFACE']} (set by user) is not an interface "
                     f"of this host; interfaces: {', '.join(i.name for i in interfaces)}")
    return NicResult(ports=ports, interfaces=interfaces, nccl_ib_hca=hca, gid_index=gid,
                     gid_origin=gid_origin, interface=iface, interface_reason=why, user=user,
                     notes=notes)


def _table(result: NicResult) -> str:
    lines = ["RDMA ports:"]
    if not result.ports:
        lines.append("  (none)")
    for p in result.ports:
        mark = "use " if p.chosen else "skip"
        lines.append(f"  {mark} {p.device + ':' + str(p.port):<15} {p.state:<7} {p.phys_state:<9} "
                     f"{p.link_layer:<11} numa {p.numa_node:<3} netdev {','.join(p.netdevs) or '-':<14} "
                     f"roce-v2-ipv4-gids {p.roce_v2_ipv4_gids} {p.reason}")
    lines.append("interfaces:")
    for i in result.interfaces:
        mark = "ok  " if i.usable else "skip"
        lines.append(f"  {mark} {i.name:<16} {i.operstate:<8} {','.join(i.addresses) or '-':<32} {i.reason}")
    lines.append(f"socket interface: {result.interface or '-'} ({result.interface_reason})")
    lines.append(f"GID index: {result.gid_index} ({result.gid_origin})")
    for name, value in result.user.items():
        lines.append(f"kept (set by user): {name}={value}")
    for name, value in result.as_env().items():
        lines.append(f"export {name}={value}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(
        prog="python3 -m primus_runner nics",
        description="Detect RDMA HCAs (NCCL_IB_HCA), the RoCE v2 GID index (NCCL_IB_GID_INDEX) "
                    "and the socket interface (IP_INTERFACE, NCCL_SOCKET_IFNAME, "
                    "GLOO_SOCKET_IFNAME). Values the user already set are kept.")
    parser.add_argument("--sysfs-root", default=os.environ.get("PRIMUS_SYSFS_ROOT") or "/",
                        help="root holding sys/, proc/ and etc/ (default: $PRIMUS_SYSFS_ROOT or /)")
    parser.add_argument("--master-addr", default=None,
                        help="rendezvous host to route to (default: $MASTER_ADDR)")
    parser.add_argument("--format", choices=("shell", "json", "table", "nul"), default="table")
    parser.add_argument("--get", choices=ENV_VARS, default=None,
                        help="print only this variable's value (the user's if set, else detected)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.sysfs_root):
        raise UsageError(f"--sysfs-root '{args.sysfs_root}' is not a directory; accepted: a "
                         "directory holding sys/class/... (default /)")
    result = detect_nics(args.sysfs_root, os.environ, args.master_addr)
    for note in result.notes:
        print(f"primus-runner: nics: {note}", file=sys.stderr)
    if args.get:
        value = result.user.get(args.get) or result.as_env().get(args.get, "")
        print(value)
        return 0
    if args.format == "json":
        print(json.dumps(result.as_dict(), indent=2))
    elif args.format == "shell":
        from primus_runner.shellfmt import export_lines

        sys.stdout.write(export_lines(result.as_env()))
    elif args.format == "nul":
        from primus_runner.shellfmt import nul_records

        sys.stdout.flush()
        sys.stdout.buffer.write(nul_records(result.as_env().items()))
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(_table(result))
    return 0
