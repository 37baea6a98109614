"""One node's doctor run: every tier-1 check in order, and the report the fleet compares.

Owns the order of the checks and the report's shape (``primus-doctor/1``: host,
node rank, checks, facts). Must not print (cli.py does) nor compare nodes (fleet.py).
"""
from __future__ import annotations

import os
import time
from collections.abc import Mapping

from primus_runner.doctor.record import FAIL, PASS, WARN, Check
from primus_runner.facts import DISTRIBUTED_DEFAULTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = "primus-doctor/1"


def job_of(env: Mapping[str, str]) -> tuple[str, int, int, int]:
    """(MASTER_ADDR, MASTER_PORT, NODE_RANK, NNODES) as a launch would map them."""
    from primus_runner.cluster.ranks import resolve
    from primus_runner.errors import PrimusError

    try:
        mapping = resolve(env)
    except (PrimusError, ValueError):
        fallback = DISTRIBUTED_DEFAULTS
        return (fallback["MASTER_ADDR"], int(env.get("MASTER_PORT") or fallback["MASTER_PORT"]), 0, 1)
    return mapping.master_addr, mapping.master_port, mapping.node_rank, mapping.nnodes


def picks_free_port(env: Mapping[str, str]) -> bool:
    """A launch here would pick a free MASTER_PORT (one node, no scheduler, no port given)."""
    from primus_runner.cluster import rendezvous
    from primus_runner.cluster.ranks import resolve
    from primus_runner.errors import PrimusError

    try:
        return rendezvous.wants_free_port(resolve(env))
    except (PrimusError, ValueError):
        return False


def run_checks(env: Mapping[str, str]) -> tuple[list[Check], dict[str, Any]]:
    from primus_runner.cluster.clustercheck import uniform_values
    from primus_runner.doctor import accel, network, system
    from primus_runner.hardware.versions import cpu_facts

    root = env.get("PRIMUS_SYSFS_ROOT") or "/"
    dev_root = env.get("PRIMUS_DEV_ROOT") or "/"
    master, port, rank, nnodes = job_of(env)
    checks = [network.launch_verdict(env)]
    accel_checks, accel_facts = accel.accelerator_checks(root, dev_root, env)
    checks += accel_checks
    checks.append(accel.holders_check(root, dev_root))
    version_check, versions = system.versions_check(root, env)
    checks.append(version_check)
    checks.append(system.cpu_check(root))
    nic_checks, nics = network.nic_checks(env, root)
    checks += nic_checks
    checks.append(system.shm_check())
    checks += system.ulimit_checks(len(nics.ports) if nics else 0)
    checks.append(system.workspace_check(env))
    checks.append(system.port_check(port, rank, master, picks_free_port(env)))
    checks.append(clock_check(env, master, port, rank, nnodes))
    vendor, model = cpu_facts(root)
    facts: dict[str, Any] = {"cpu vendor": vendor, "cpu model": model, **accel_facts,
                             **{f"version {k}": v for k, v in versions.items() if k != "CPU vendor"}}
    return checks, {"facts": facts, "uniform": uniform_values(env), "node_rank": rank,
                    "nnodes": nnodes, "master": master, "port": port}


def clock_check(env: Mapping[str, str], master: str, port: int, rank: int, nnodes: int) -> Check:
    if nnodes <= 1:
        return Check("clock offset", PASS, "not in a multi-node job (nothing to compare)",
                     f"|offset| <= {CLOCK_MAX_MS} ms from node 0 in a job")
    from primus_runner.doctor.clock import measure_offset

    try:
        offset = measure_offset(master, clock_port(port), rank, nnodes)
    except OSError as exc:
        return Check("clock offset", WARN, f"node 0 at {master} did not answer ({exc})",
                     f"|offset| <= {CLOCK_MAX_MS} ms from node 0", "check that node 0 is reachable")
    if offset is None:
        return Check("clock offset", PASS, "this is node 0 (the reference clock)",
                     f"|offset| <= {CLOCK_MAX_MS} ms from node 0")
    ok = abs(offset) * 1000 <= CLOCK_MAX_MS
    return Check("clock offset", PASS if ok else FAIL, f"{offset * 1000:+.1f} ms from node 0 ({master})",
                 f"|offset| <= {CLOCK_MAX_MS} ms", "" if ok else "sync the clock (chronyc tracking; "
                 "systemctl restart chronyd): timeouts and logs disagree across nodes")


CLOCK_MAX_MS = 100           # this project's threshold (timeouts and log order), not a vendor figure


def clock_port(master_port: int) -> int:
    """MASTER_PORT + 3 (+1 is the cluster check's, +2 left for the Neuron root comm)."""
    return master_port + 3 if master_port <= 65532 else master_port - 3


def report(env: Mapping[str, str]) -> dict[str, Any]:
    started = time.monotonic()
    checks, extra = run_checks(env)
    return {"protocol": PROTOCOL, "host": os.uname().nodename.split(".")[0], **extra,
            "checks": [c.as_dict() for c in checks], "seconds": round(time.monotonic() - started, 2)}


def checks_of(rep: Mapping[str, Any]) -> list[Check]:
    return [Check(**c) for c in rep.get("checks", [])]


__all__ = ["FAIL", "PASS", "PROTOCOL", "WARN", "report", "run_checks"]
