"""The doctor's launch verdict and network checks: NICs, RDMA ports (state, GID).

``launch_verdict`` is the ONE place the doctor asks the rules engine, through its
public entry (``primus_runner.env.rules.check`` with the launch's CheckContext, the code
path of ``env check``): errors fail, warnings warn, with each finding's variable,
value and fix. The NIC/RDMA rows show what is there; their verdict on a user
value is the launch's: the same function as rule ``nic_values_on_host``
(network/check.py ``host_problems``; a user NCCL_IB_HCA that names a port that
is not ACTIVE is an error there, so the doctor, ``env check`` and the launch
agree). Must not re-implement any engine rule.
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
        fix = "" if ok else (f"export NCCL_SOCKET_IFNAME={result.interface or '<interface>'} "
                             "(or unset it to detect)")
        if ok and not socket_var.strip().startswith("^"):
            # Rule nccl_ifname_prefix_overlap's own functions: 'bond0' also selects bond0.2093.
            from primus_runner.env.rules.network import fixed_value, prefix_overlaps

            overlaps = prefix_overlaps(socket_var, [i.name for i in result.interfaces])
            if overlaps:
                ok = False
                fix = ("match the exact name with '=': export NCCL_SOCKET_IFNAME="
                       + fixed_value(socket_var, {item for item, _ in overlaps}))
        checks = [Check("network interfaces", PASS if ok else FAIL,
                        f"NCCL_SOCKET_IFNAME={socket_var!r} selects {', '.join(picked) or 'nothing'} "
                        f"(interfaces: {shown})", "a usable interface selected, by its exact name",
                        fix)]
    else:
        checks = [Check("network interfaces", PASS if usable else WARN,
                        f"{shown}; chosen: {result.interface or 'none'}",
                        "an up interface with IPv4 (multi-node)",
                        "" if usable else "bring up an interface with an IPv4 address for multi-node jobs")]
    checks.append(rdma_check(env, result, root))
    return checks, result


def _port_text(port: object) -> str:
    from primus_runner.network.hca import HcaPort

    assert isinstance(port, HcaPort)
    gid = port.gid_index
    gid_text = f"GID {gid} RoCE v2 {port.gid_family}" if gid is not None else \
        ("IB" if port.link_layer == "InfiniBand" else "no routable RoCE v2 GID")
    return f"{port.name} {port.state} {port.link_layer} {gid_text}"


def rdma_check(env: Mapping[str, str], result: NicResult, root: str = "/") -> Check:
    ports = result.ports
    if not ports:
        return Check("RDMA ports", PASS, "none (sockets only)", "ACTIVE ports when the fabric is RDMA")
    shown = "; ".join(_port_text(p) for p in ports)
    value = env.get("NCCL_IB_HCA")
    if value:
        from primus_runner.network.check import host_problems

        # The launch's own check (rule nic_values_on_host), on the user's value only.
        problems = [p for p in host_problems({"NCCL_IB_HCA": value}, root, result)
                    if p.variable == "NCCL_IB_HCA"]
        if problems:
            worst = next((p for p in problems if p.severity == "error"), problems[0])
            return Check("RDMA ports", FAIL if worst.severity == "error" else WARN,
                         f"NCCL_IB_HCA={value!r} {worst.message} ({shown})",
                         "every port NCCL_IB_HCA names ACTIVE", worst.fix)
        return Check("RDMA ports", PASS, f"NCCL_IB_HCA={value!r}: {shown}",
                     "every port NCCL_IB_HCA names ACTIVE")
    down = [p.name for p in ports if p.state != "ACTIVE"]
    if down:
        return Check("RDMA ports", WARN, shown, "every port ACTIVE",
                     f"bring up {', '.join(down)} (ibstat) or leave them out (detection skips them)")
    return Check("RDMA ports", PASS, shown, "every port ACTIVE")
