"""Find the launches running on this node and the processes that are their ranks.

Owns the discovery: a launch's processes carry ``PRIMUS_RUN_ID`` (and
``PRIMUS_RC_DIR``, ``PRIMUS_RUN_LOG``) in their environment (runner/lib/supervise.sh);
in run mode torchrun a rank is the child of a ``run_worker.sh`` whose pid is in
``$PRIMUS_RC_DIR/worker.<RANK>``; in run mode single it is the top process of the
run. A rank that ended is told by its wrapper being gone, its code by the
``failed-<RANK>`` record (none: 0). It must not read stacks nor signal anything.
Everything is read from /proc with the standard library alone: the run monitor
runs on whatever Python a container holds, which may lack psutil.
"""
from __future__ import annotations

import os
from pathlib import Path

from primus_runner.procstat import alive as _alive
from primus_runner.procstat import read_environ, read_parent
from primus_runner.records import dataclass, field


@dataclass(frozen=True)
class LiveRank:
    rank: int
    local_rank: int
    pid: int
    faulthandler_file: str


@dataclass
class Run:
    """One launch on this node, as seen from its processes."""

    run_id: str
    rc_dir: str
    log: str
    node: int
    launcher_pid: int = 0
    processes: dict[int, tuple[int, dict[str, str]]] = field(default_factory=dict)  # pid -> (ppid, env)


_KEYS = ("PRIMUS_RUN_ID", "PRIMUS_RC_DIR", "PRIMUS_RUN_LOG", "RANK", "LOCAL_RANK", "NODE_RANK",
         "PRIMUS_FAULTHANDLER_FILE", "GROUP_RANK",
         "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE", "NEURON_RT_INSPECT_OUTPUT_DIR",
         # the flight-recorder dump on demand and the runtime's timeouts (monitor/flightrec.py)
         "TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "PRIMUS_FR_TRIGGER", "PRIMUS_ACCELERATOR")
_PREFIXES = ("NEURON_RT_",)


def _uts(pid: int | str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/uts")
    except OSError:
        return ""


def scan(proc: str = "/proc") -> dict[str, Run]:
    """Every launch with a live process on this node, by run id. Inside a Slurm step
    only processes of this host name's namespace count (nodes of a test cluster
    that share one machine)."""
    runs: dict[str, Run] = {}
    own_uts = _uts("self") if os.environ.get("SLURM_JOB_ID") else ""
    me = os.getpid()
    for entry in os.listdir(proc):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        if own_uts and _uts(pid) != own_uts:
            continue
        env = read_environ(pid, proc)
        run_id = env.get("PRIMUS_RUN_ID") if env else None
        if not env or not run_id:
            continue
        ppid = read_parent(pid, proc)
        if not ppid:
            continue
        kept = {k: v for k, v in env.items() if k in _KEYS or k.startswith(_PREFIXES)}
        node = kept.get("NODE_RANK", kept.get("GROUP_RANK", "0"))
        run = runs.setdefault(run_id, Run(run_id, kept.get("PRIMUS_RC_DIR", ""), kept.get("PRIMUS_RUN_LOG", ""),
                                          int(node) if node.isdigit() else 0))
        run.processes[pid] = (ppid, kept)
    for run in runs.values():
        tops = [pid for pid, (ppid, _) in run.processes.items() if ppid not in run.processes]
        if tops:
            run.launcher_pid = run.processes[tops[0]][0]
    return runs


def _wrappers(rc_dir: str) -> dict[int, int]:
    """wrapper pid -> RANK, from $PRIMUS_RC_DIR/worker.<RANK>."""
    found: dict[int, int] = {}
    if not rc_dir:
        return found
    for path in Path(rc_dir).glob("worker.*"):
        rank = path.name.split(".", 1)[1]
        try:
            pid = path.read_text().strip()
        except OSError:
            continue
        if pid.isdigit() and rank.isdigit():
            found[int(pid)] = int(rank)
    return found


def _failed_code(rc_dir: str, rank: int) -> int:
    try:
        data = (Path(rc_dir) / f"failed-{rank}").read_bytes()
    except OSError:
        return 0
    head = data.split(b"\0", 1)[0]
    return int(head) if head.isdigit() else 0


def ranks_of(run: Run) -> tuple[list[LiveRank], dict[int, int]]:
    """(the live ranks, {rank: exit code} of the ranks that ended)."""
    wrappers = _wrappers(run.rc_dir)
    live: list[LiveRank] = []
    if wrappers:
        for pid, (ppid, env) in run.processes.items():
            if ppid in wrappers and _alive(pid):
                local = env.get("LOCAL_RANK", "0")
                live.append(LiveRank(wrappers[ppid], int(local) if local.isdigit() else 0, pid,
                                     env.get("PRIMUS_FAULTHANDLER_FILE", "")))
        seen = {r.rank for r in live}
        ended = {rank: _failed_code(run.rc_dir, rank) for pid, rank in wrappers.items()
                 if rank not in seen and not _alive(pid)}
        return sorted(live, key=lambda r: r.rank), ended
    for pid, (ppid, env) in run.processes.items():
        if ppid not in run.processes and _alive(pid):
            rank = env.get("RANK", env.get("NODE_RANK", "0"))
            live.append(LiveRank(int(rank) if rank.isdigit() else 0, 0, pid, env.get("PRIMUS_FAULTHANDLER_FILE", "")))
    return live, {}
