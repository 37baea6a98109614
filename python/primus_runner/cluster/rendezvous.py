"""Rendezvous pre-checks of a direct launch, run by the launch helper
after ``env check`` and before torchrun starts; ``PRIMUS_SKIP_VALIDATION=1``
skips them with the other checks, and a dry run does not run them (they probe
this host's live sockets, which a simulated node does not have).

On the node that hosts the rendezvous (NODE_RANK 0):

* MASTER_ADDR must resolve and be an address of this host: a name that resolves
  to another machine is the classic "node 0 waits for itself" hang. "An address
  of this host" is decided by binding a socket to it (the kernel refuses an
  address no local interface has, EADDRNOTAVAIL), so no interface list is parsed.
* MASTER_PORT must be bindable: a busy port is named with the process holding it
  when /proc shows it (``/proc/net/tcp{,6}`` LISTEN entries -> socket inode ->
  ``/proc/<pid>/fd``).

That MASTER_ADDR resolves on the other nodes is ``ranks.check_master_resolves``
(at prepare time). ``MASTER_PORT=auto`` (``auto_port``) is replaced by a free
port here, on a single node only; under Slurm by the job-derived port (ranks.py's).
A launch on one node with no scheduler and no MASTER_PORT from the user or their
config (``wants_free_port``) gets a free port too, not the reference's 1234, so
launches side by side on one host do not collide; multi-node launches keep 1234
(every node must know the port). Picked ports lie outside the kernel's ephemeral
range (rule master_port_ephemeral warns about a port inside it).
"""
from __future__ import annotations

import os
from collections.abc import Mapping

# ``socket`` is imported inside the functions that use it: the helper's
# prepare step of a single-node launch needs none of them (ms of every launch).
from primus_runner.env.rules import distributed
from primus_runner.errors import UsageError
from primus_runner.scheduler.variables import detect_source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from primus_runner.cluster.ranks import RankMap

LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp (include/net/tcp_states.h)


# Picked ports start here: below it lie the Slurm step ports of other jobs
# (scheduler/variables.py slurm_step_port, 10000-32766 even) and many services' own ports.
PICK_LOW = 20000
PICKED_NOTE = ("a free port for this single-node launch (no MASTER_PORT from the user or their "
               "config, no scheduler; launches with NNODES > 1 use 1234)")


def free_port(root: str = "/") -> int:
    """A TCP port nobody listens on right now, outside this host's ephemeral range
    (read under ``root``, PRIMUS_SYSFS_ROOT; Linux's default when unreadable), so no
    outgoing connection takes it before torchrun binds it; chosen at random, so
    launches started at the same moment do not pick the same one."""
    import socket

    low, high = distributed.ephemeral_range(root) or distributed.LINUX_EPHEMERAL
    below = max(0, min(low, 65536) - PICK_LOW)  # PICK_LOW .. low-1
    above = max(0, 65535 - max(high, PICK_LOW - 1))  # max(high+1, PICK_LOW) .. 65535
    for _ in range(64 if below + above else 0):
        n = int.from_bytes(os.urandom(4), "big") % (below + above)
        port = PICK_LOW + n if n < below else max(high + 1, PICK_LOW) + n - below
        if _bind_error(port) is None:
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))  # no free port outside the range: the kernel's pick
        return int(sock.getsockname()[1])


def auto_port(env: Mapping[str, str], root: str = "/") -> dict[str, str] | None:
    """With MASTER_PORT=auto ("choose for me", in every mode): a copy of env with
    the port chosen, else None. Under Slurm the copy has no MASTER_PORT, so the
    rank mapping derives the job's port (scheduler/variables.py slurm_step_port: the same on
    every node, whatever NNODES); elsewhere a free port of this node, which only a
    single node can use (check_auto_single_node)."""
    if env.get("MASTER_PORT", "").strip().lower() != "auto":
        return None
    if detect_source(env) == "slurm":
        return {k: v for k, v in env.items() if k != "MASTER_PORT"}
    return {**env, "MASTER_PORT": str(free_port(root))}


def wants_free_port(mapping: RankMap) -> bool:
    """True for a launch on one node, no scheduler, MASTER_PORT from nobody (the
    reference default): its port is picked (free_port) instead of 1234."""
    return (mapping.nnodes == 1 and mapping.source in ("single", "explicit")
            and mapping.origins.get("MASTER_PORT") == "default")


def check_auto_single_node(nnodes: int) -> None:
    if nnodes > 1:
        raise UsageError(
            f"MASTER_PORT=auto with NNODES={nnodes}: a port picked on this node cannot be known to "
            "the other nodes; accepted: auto on a single node (NNODES=1) only. Fix: export the same "
            "free port on every node (e.g. MASTER_PORT=29500); under Slurm leave MASTER_PORT unset.")


def _resolve(host: str) -> list[str]:
    import socket

    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _is_local(ip: str) -> bool:
    import socket

    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((ip, 0))
        return True
    except OSError:
        return False


def _bind_error(port: int) -> OSError | None:
    """None when a listener could bind ``port`` on every IPv4 address (as torchrun's store does)."""
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            # TIME_WAIT leftovers of an earlier run do not block a listener that sets
            # SO_REUSEADDR (as c10d's TCPStore does); a live listener still does.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("", port))
            sock.listen(1)
    except OSError as exc:
        return exc
    return None


def port_holder(port: int, proc: str = "/proc") -> str | None:
    """'pid N (command)' of a process listening on TCP ``port``, when /proc shows it."""
    inodes = set()
    for table in ("net/tcp", "net/tcp6"):
        try:
            with open(os.path.join(proc, table), encoding="ascii") as handle:
                next(handle, None)
                for line in handle:
                    fields = line.split()
                    if len(fields) > 9 and fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(f"socket:[{fields[9]}]")
        except (OSError, ValueError, IndexError):
            continue
    if not inodes:
        return None
    for pid in (p for p in os.listdir(proc) if p.isdigit()):
        fd_dir = os.path.join(proc, pid, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) in inodes:
                    return f"pid {pid} ({_command(proc, pid)})"
            except OSError:
                continue
    return "a process this user cannot see in /proc"


def _command(proc: str, pid: str) -> str:
    try:
        with open(os.path.join(proc, pid, "cmdline"), "rb") as handle:
            words = handle.read().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(w.decode("utf-8", "replace") for w in words if w)
    return text[:120] or "?"


def _uint(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(name, "")
    return int(value, 10) if value.isdigit() else default


def check(env: Mapping[str, str]) -> list[str]:
    """Error messages for the launch environment (empty: fine, or not node 0)."""
    nnodes = _uint(env, "NNODES", 1)
    node_rank = _uint(env, "NODE_RANK", 0)
    single = env.get("RUN_MODE") == "single"
    if node_rank != 0 or (single and nnodes <= 1):
        return []  # single mode on one node: no rendezvous at all
    errors = []
    addr = env.get("MASTER_ADDR", "") or "localhost"
    ips = _resolve(addr)
    if not ips:
        errors.append(
            f"MASTER_ADDR='{addr}' does not resolve on node 0, which hosts the rendezvous; accepted: "
            "a name or IP address of this host. Fix: export MASTER_ADDR=<this host's IP "
            "(hostname -I) or a name /etc/hosts or DNS maps to it>, the same on every node.")
    elif not any(_is_local(ip) for ip in ips):
        errors.append(
            f"MASTER_ADDR='{addr}' resolves to {', '.join(ips)}, none of them an address of this host, "
            f"but this is node 0 (NODE_RANK=0), which hosts the rendezvous: node 0 would wait for itself "
            f"until the rendezvous times out. Fix: export MASTER_ADDR=<this host's IP (hostname -I) or "
            f"name> on every node, or run this launcher with NODE_RANK=0 on {addr}.")
    port_text = env.get("MASTER_PORT", "")
    if port_text.isdigit():
        port = int(port_text, 10)
        error = _bind_error(port)
        if error is not None:
            holder = port_holder(port) if error.errno in (98, 13) else None  # EADDRINUSE, EACCES
            held = f", held by {holder}" if holder else ""
            errors.append(
                f"MASTER_PORT={port} cannot be bound on node 0 ({error.strerror}{held}): the rendezvous "
                f"store would fail to start. Fix: export MASTER_PORT=<a free port, 1024-65535>, or "
                f"MASTER_PORT=auto on a single node, or stop that process.")
    return errors
