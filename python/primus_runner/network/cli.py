"""``python3 -m primus_runner nics``: the command line of NIC detection.

Owns the options and the output (a table, JSON or ``export`` lines, and the user's
values checked against this host with ``--check``); detection itself is
network.detect and the check network.check. Must not decide anything itself.
"""
from __future__ import annotations

import os

from primus_runner.errors import UsageError
from primus_runner.network.detect import GET_VARS, NicResult, detect_nics
from primus_runner.network.hca import HcaPort
from primus_runner.shellfmt import print_report, report_notes, report_parser, report_table


def _gid_text(port: HcaPort) -> str:
    """'3 (RoCE v2 IPv6)' for a RoCE port's routable GID; '-' when it has none or is IB."""
    if port.link_layer != "Ethernet" or port.gid_index is None:
        return "-"
    return f"{port.gid_index} (RoCE v2 {port.gid_family})"


def _table(result: NicResult) -> str:
    lines = ["RDMA ports:"]
    if not result.ports:
        lines.append("  (none)")
    for p in result.ports:
        mark = "use " if p.chosen else "skip"
        lines.append(f"  {mark} {p.name:<15} {p.state:<7} {p.phys_state:<9} "
                     f"{p.link_layer:<11} numa {p.numa_node:<3} netdev {','.join(p.netdevs) or '-':<14} "
                     f"gid {_gid_text(p)} {p.reason}")
    lines.append("interfaces:")
    for i in result.interfaces:
        mark = "ok  " if i.usable else "skip"
        lines.append(f"  {mark} {i.name:<16} {i.operstate:<8} {','.join(i.addresses) or '-':<32} {i.reason}")
    lines.append(f"socket interface: {result.interface or '-'} ({result.interface_reason})")
    lines.append(f"GID index: {result.gid_index} ({result.gid_origin})")
    return report_table(lines, "kept (set by user):", result.user, result.as_env())


def main(argv: list[str]) -> int:
    import sys

    parser = report_parser(
        "nics", "Detect RDMA HCAs (NCCL_IB_HCA), the RoCE v2 GID index (NCCL_IB_GID_INDEX) "
                "and the socket interface (IP_INTERFACE, NCCL_SOCKET_IFNAME, "
                "GLOO_SOCKET_IFNAME). Values the user already set are kept; --check "
                "reports the user's values that name nothing usable on this host (a port "
                "that is not ACTIVE, a GID index that cannot route).", "sys/, proc/ and etc/")
    parser.add_argument("--master-addr", default=None,
                        help="rendezvous host to route to (default: $MASTER_ADDR)")
    parser.add_argument("--get", choices=GET_VARS, default=None,
                        help="print only this variable's value (the user's if set, else detected)")
    parser.add_argument("--check", action="store_true",
                        help="check the user's NIC variables against this host; exit 2 on an error")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.sysfs_root):
        raise UsageError(f"--sysfs-root '{args.sysfs_root}' is not a directory; accepted: a "
                         "directory holding sys/class/... (default /)")
    result = detect_nics(args.sysfs_root, os.environ, args.master_addr)
    report_notes("nics", result.notes)
    if args.check:
        from primus_runner.network.check import host_problems

        problems = host_problems(os.environ, args.sysfs_root, result)
        for problem in problems:
            print(f"primus-runner: nics: {problem.severity}: {problem.variable}='{problem.value}' "
                  f"{problem.message}. Fix: {problem.fix}", file=sys.stderr)
        return 2 if any(p.severity == "error" for p in problems) else 0
    if args.get:
        value = result.user.get(args.get) or result.as_env().get(args.get, "")
        print(value)
        return 0
    print_report(args.format, result.as_dict(), result.as_env(), lambda: _table(result))
    return 0
