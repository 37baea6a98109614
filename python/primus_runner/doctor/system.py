"""Host checks of the doctor that need no accelerator and no network: CPU, software
versions, /dev/shm, ``ulimit -l``/``-n``, free space in the workspace, the rendezvous port.

Owns the readings (pure parsers over file text, so tests feed recorded text) and
the thresholds below, which are this project's choices, not vendor figures:
/dev/shm >= 1 GiB, open files >= 65536 (the container mode itself sets
``nofile=1048576``, upstream AMD-AGI/Primus@fd1eeabb runner/.primus.yaml), workspace >= 10 GiB
free, memlock unlimited where RDMA ports exist (registered memory is pinned).
Versions and CPU facts are python/primus_runner/hardware/versions.py's (the cluster
check compares the same). Must not import torch.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from primus_runner.doctor.record import FAIL, PASS, WARN, Check
from primus_runner.hardware.versions import cpu_facts

GIB = 1 << 30
SHM_MIN = 1 * GIB
NOFILE_MIN = 65536
WORKSPACE_MIN = 10 * GIB


# -- CPU --------------------------------------------------------------------------------
def cpu_check(root: str) -> Check:
    vendor, model = cpu_facts(root)
    status = PASS if vendor != "unknown" else WARN
    return Check("cpu", status, f"{vendor}, {model}, {os.cpu_count()} CPUs",
                 "a readable CPU vendor (compared across nodes by slurm doctor)",
                 "" if status == PASS else f"check that {os.path.join(root, 'proc/cpuinfo')} is readable")


# -- versions ---------------------------------------------------------------------------
def versions_check(root: str, env: Mapping[str, str]) -> tuple[Check, dict[str, str]]:
    from primus_runner.hardware.versions import versions

    found = versions(root, env)
    shown = ", ".join(f"{k} {v}" for k, v in found.items())
    if "torch" not in found:
        return (Check("versions", WARN, shown or "nothing readable", "torch importable by the launcher's "
                      "Python", "install torch in the Python the launcher uses (PRIMUS_PYTHON or .venv)"),
                found)
    return Check("versions", PASS, shown, "readable; the same on every node (slurm doctor compares)"), found


# -- limits and space ---------------------------------------------------------------------
def _human(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} TiB"


def _free(path: str) -> tuple[int, int] | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def shm_check(path: str = "/dev/shm") -> Check:
    """The host's /dev/shm (a tmpfs, not a device node: PRIMUS_DEV_ROOT does not move it)."""
    sizes = _free(path)
    if sizes is None:
        return Check("/dev/shm", FAIL, f"{path} missing", f">= {_human(SHM_MIN)}",
                     "mount a tmpfs on /dev/shm (containers: --ipc=host or --shm-size=16g)")
    total, _ = sizes
    status = PASS if total >= SHM_MIN else WARN
    return Check("/dev/shm", status, f"{_human(total)}", f">= {_human(SHM_MIN)}",
                 "" if status == PASS else "enlarge /dev/shm (containers: --ipc=host or --shm-size=16g); "
                 "PyTorch data loaders and RCCL/NCCL intra-node transport use it")


def ulimit_checks(rdma_ports: int) -> list[Check]:
    import resource

    out: list[Check] = []
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    unlimited = soft == resource.RLIM_INFINITY
    shown = "unlimited" if unlimited else f"{soft // 1024} KiB"
    if unlimited:
        out.append(Check("ulimit -l", PASS, shown, "unlimited"))
    else:
        status = WARN if rdma_ports else PASS
        out.append(Check("ulimit -l", status, shown, "unlimited where RDMA ports exist"
                         + ("" if rdma_ports else " (none here)"),
                         "ulimit -l unlimited (limits.conf 'memlock unlimited'; Slurm: "
                         "PropagateResourceLimits)" if rdma_ports else ""))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    ok = soft == resource.RLIM_INFINITY or soft >= NOFILE_MIN
    out.append(Check("ulimit -n", PASS if ok else WARN, "unlimited" if soft == resource.RLIM_INFINITY
                     else str(soft), f">= {NOFILE_MIN}",
                     "" if ok else f"ulimit -n {NOFILE_MIN} or more (limits.conf 'nofile')"))
    return out


def workspace_check(env: Mapping[str, str]) -> Check:
    path = env.get("PRIMUS_WORKSPACE") or "."
    probe = path
    while probe and not os.path.exists(probe):       # not created yet: its first existing parent
        parent = os.path.dirname(probe.rstrip("/"))
        probe = parent if parent != probe else ""
    sizes = _free(probe or ".")
    if sizes is None:
        return Check("workspace space", FAIL, f"{path}: unreadable", f">= {_human(WORKSPACE_MIN)} free",
                     "set PRIMUS_WORKSPACE to a writable directory")
    _, free = sizes
    status = PASS if free >= WORKSPACE_MIN else WARN
    return Check("workspace space", status, f"{_human(free)} free at {os.path.abspath(probe or '.')}",
                 f">= {_human(WORKSPACE_MIN)} free",
                 "" if status == PASS else "free space there, or set PRIMUS_WORKSPACE elsewhere")


def port_check(port: int, node_rank: int, master: str = "", picked: bool = False) -> Check:
    """Can MASTER_PORT be bound on node 0 (which listens on it)? Other nodes do not try:
    only node 0 binds it in a launch (and nodes may share a host in tests). ``picked``:
    one node and nobody gave a port, so a launch picks a free one (rendezvous.wants_free_port)."""
    if picked:
        return Check("rendezvous port", PASS, "MASTER_PORT not set on one node: a launch picks a free "
                     f"port, not {port}", "bindable on node 0")
    if node_rank != 0:
        return Check("rendezvous port", PASS, f"MASTER_PORT={port}: node 0 binds it, not this node "
                     f"(node {node_rank})", "bindable on node 0")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    address = ""
    if master not in ("", "localhost"):
        try:
            address = socket.gethostbyname(master)
        except OSError:
            address = ""
    try:
        sock.bind((address, port))
    except OSError as exc:
        return Check("rendezvous port", FAIL, f"MASTER_PORT={port} on {address or 'any address'}: "
                     f"{exc.strerror or exc}", "bindable on node 0",
                     "export MASTER_PORT=<a free port 1024-65535, the same on every node>, or end the "
                     "process holding it (ss -ltnp)")
    finally:
        sock.close()
    return Check("rendezvous port", PASS, f"MASTER_PORT={port} bindable", "bindable on node 0")
