"""The doctor's launch verdict and network checks: NICs, RDMA ports (state, GID).

``launch_verdict`` is the ONE place the doctor asks the rules engine, through its
public entry (``primus_runner.env.rules.check`` with the launch's CheckContext, the code
path of ``env check``): errors fail, warnings warn, with each finding's variable,
value and fix. The NIC/RDMA rows only show what is there, except one stricter
health rule of the doctor's own: a port the user selected with NCCL_IB_HCA that
is not ACTIVE fails here (a launch only warns: the job may still run on the
other ports; a fleet check wants every selected port up). Must not re-implement
any engine rule.
"""
from __future__ import annotations

from collections.abc import Mapping

from primus_runner.doctor.record import FAIL, PASS, WARN, Check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from primus_runner.network.detect import NicResult


def launch_verdict(env: Mapping[str, str]) -> Check:
    from primus_runner.env.rules import CheckContext, check

    findings = check(env, context=CheckContext.from_env(env))
    errors = [f for f in findings if f.severity == "error"]
    warnings = [f for f in findings if f.severity == "warning"]
    if not errors and not warnings:
        return Check("launch verdict", PASS, "env check: no problems", "no error (the launch would start)")
    shown = errors or warnings
    value = "; ".join(f"{f.variable}={f.value!r}: {f.message}" for f in shown[:3])
    if len(shown) > 3:
        value += f" (+{len(shown) - 3} more: primus-cli env check)"
    fix = "; ".join(f"{f.variable}: {f.fix}" for f in shown[:3])
    return Check("launch verdict", FAIL if errors else WARN, value,
                 "no error (the launch would start)", fix)


def nic_checks(env: Mapping[str, str], root: str) -> tuple[list[Check], NicResult | None]:
    from primus_runner.network.detect import detect_nics

    try:
        result = detect_nics(root, env)
    except OSError as exc:
        return [Check("network interfaces", FAIL, str(exc), "readable sysfs", "check PRIMUS_SYSFS_ROOT")], None
    usable = [i for i in result.interfaces if i.usable and not i.loopback]
    shown = ", ".join(f"{i.name} {i.operstate} {','.join(i.addresses) or 'no IPv4'}"
                      for i in result.interfaces if not i.loopback) or "loopback only"
    socket_var = env.get("NCCL_SOCKET_IFNAME")
    if socket_var:
        from primus_runner.network.interfaces import select_interfaces

        picked = select_interfaces(socket_var, [i.name for i in result.interfaces])
        ok = any(i.name in picked for i in usable)
        checks = [Check("network interfaces", PASS if ok else FAIL,
                        f"NCCL_SOCKET_IFNAME={socket_var!r} selects {', '.join(picked) or 'nothing'} "
                        f"(interfaces: {shown})", "a usable interface selected",
                        "" if ok else f"export NCCL_SOCKET_IFNAME={result.interface or '<interface>'} "
                        "(or unset it to detect)")]
    else:
        checks = [Check("network interfaces", PASS if usable else WARN,
                        f"{shown}; chosen: {result.interface or 'none'}",
                        "an up interface with IPv4 (multi-node)",
                        "" if usable else "bring up an interface with an IPv4 address for multi-node jobs")]
    checks.append(rdma_check(env, result))
    return checks, result


def _port_text(port: object) -> str:
    from primus_runner.network.hca import HcaPort

    assert isinstance(port, HcaPort)
    gid = port.gid_index
    gid_text = f"GID {gid} RoCE v2 IPv4" if gid is not None else \
        ("IB" if port.link_layer == "InfiniBand" else "no RoCE v2 IPv4 GID")
    return f"{port.name} {port.state} {port.link_layer} {gid_text}"


def rdma_check(env: Mapping[str, str], result: NicResult) -> Check:
    ports = result.ports
    if not ports:
        return Check("RDMA ports", PASS, "none (sockets only)", "ACTIVE ports when the fabric is RDMA")
    shown = "; ".join(_port_text(p) for p in ports)
    value = env.get("NCCL_IB_HCA")
    if value:
        from primus_runner.network.hca import select_ports

        selected, unknown = select_ports(value, ports)
        down = [p.name for p in selected if p.state != "ACTIVE"]
        fix = (f"export NCCL_IB_HCA={result.nccl_ib_hca} (the ACTIVE ports here)" if result.nccl_ib_hca
               else "unset NCCL_IB_HCA")
        if down or unknown or not selected:
            what = (f"selects port(s) not ACTIVE: {', '.join(down)}" if down else
                    f"names {', '.join(unknown)}, not a port here" if unknown else "selects no port")
            return Check("RDMA ports", FAIL, f"NCCL_IB_HCA={value!r} {what} ({shown})",
                         "every selected port ACTIVE", fix + ", or bring the port up (ibstat)")
        return Check("RDMA ports", PASS, f"NCCL_IB_HCA={value!r}: {shown}", "every selected port ACTIVE")
    down = [p.name for p in ports if p.state != "ACTIVE"]
    if down:
        return Check("RDMA ports", WARN, shown, "every port ACTIVE",
                     f"bring up {', '.join(down)} (ibstat) or leave them out (detection skips them)")
    return Check("RDMA ports", PASS, shown, "every port ACTIVE")
