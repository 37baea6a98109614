"""``preflight``: check the distributed environment across all ranks.

Run under torchrun (``primus-cli direct -- preflight``). Every rank reports its
host, RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE and backend plus the cluster
check's fingerprint (python/primus_runner/cluster/clustercheck.py) and the versions torch
itself reports; the job all-gathers the reports and checks:

- WORLD_SIZE = NNODES x processes per node (LOCAL_WORLD_SIZE);
- every rank is unique and 0..WORLD_SIZE-1 are all present;
- every ``cluster-uniform`` variable (registry scope) is identical on every rank;
- the ``per-node`` network values mean the same on every rank (interface subnet,
  HCA link layer, GID type and family), whatever their names and indexes;
- the versions agree: torch, HIP/CUDA and NCCL/RCCL as torch loads them, ROCm,
  the RCCL library file, the amdgpu/Neuron drivers and the Neuron runtime.

The launcher runs the same comparison on every multi-node launch before the
workload starts; preflight repeats it per rank, with torch's own versions.

A failure fails every rank (exit 2) and rank 0 prints a table naming each
differing variable and the ranks on each side. Secret values are masked.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from primus_runner.facts import EXIT_INVALID


def comm_vars(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that must agree on every rank: the registry's cluster-uniform ones
    (secret values as a digest)."""
    from primus_runner.cluster.clustercheck import uniform_values

    return uniform_values(env)


def torch_versions() -> dict[str, str]:
    """The versions torch reports for itself and the libraries it loaded."""
    out: dict[str, str] = {}
    try:
        import torch
    except ImportError:
        return out
    out["torch"] = str(torch.__version__)
    for name, value in (("HIP (torch)", getattr(torch.version, "hip", None)),
                        ("CUDA (torch)", getattr(torch.version, "cuda", None))):
        if value:
            out[name] = str(value)
    try:
        if torch.cuda.is_available():
            nccl = torch.cuda.nccl.version()  # type: ignore[no-untyped-call]
            out["NCCL/RCCL (torch)"] = ".".join(str(p) for p in nccl) if isinstance(nccl, tuple) else str(nccl)
    except Exception:  # noqa: BLE001 - a build without NCCL: nothing to report
        pass
    return out


def rank_report(env: Mapping[str, str], backend: str) -> dict[str, Any]:
    from primus_runner.cluster.clustercheck import fingerprint

    rank = int(env.get("RANK", "0"))
    cluster = fingerprint(env, env.get("PRIMUS_SYSFS_ROOT") or "/", rank)
    cluster["versions"].update(torch_versions())
    ignore = {n.strip() for n in (env.get("PRIMUS_CLUSTER_CHECK_IGNORE") or "").split(",") if n.strip()}
    for key in ("uniform", "meaning", "raw", "versions"):
        cluster[key] = {k: v for k, v in cluster[key].items() if k not in ignore}
    return {
        "host": socket.gethostname(),
        "rank": rank,
        "local_rank": int(env.get("LOCAL_RANK", "0")),
        "world_size": int(env.get("WORLD_SIZE", "1")),
        "local_world_size": int(env.get("LOCAL_WORLD_SIZE", "1")),
        "backend": backend,
        "vars": cluster["uniform"],
        "cluster": cluster,
    }


def find_problems(reports: Sequence[Mapping[str, Any]]) -> list[str]:
    """Pure check of the gathered reports; returns human-readable problems."""
    problems: list[str] = []
    world = len(reports)
    ranks = sorted(r["rank"] for r in reports)
    if ranks != list(range(world)):
        dupes = sorted({r for r in ranks if ranks.count(r) > 1})
        problems.append(f"ranks are not unique 0..{world - 1}: seen {ranks}"
                        + (f" (duplicates {dupes})" if dupes else ""))
    for r in reports:
        if r["world_size"] != world:
            problems.append(f"rank {r['rank']} reports WORLD_SIZE={r['world_size']}, but {world} ranks joined")
            break
    nnodes_values = {r["vars"].get("NNODES", "1") for r in reports}
    local_sizes = {r["local_world_size"] for r in reports}
    if len(nnodes_values) == 1 and len(local_sizes) == 1:
        nnodes = int(next(iter(nnodes_values)) or "1")
        per_node = next(iter(local_sizes))
        if nnodes * per_node != world:
            problems.append(f"world size {world} != NNODES ({nnodes}) x processes per node ({per_node})")
    problems.extend(mismatch_table(reports))
    return problems


def mismatch_table(reports: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per cluster-uniform variable, per-node meaning or version that differs
    between ranks (the cluster check's comparison, per rank)."""
    from primus_runner.cluster.clustercheck import compare

    fps = [dict(r.get("cluster") or {"node": r["rank"], "host": r["host"], "uniform": r["vars"]},
                node=r["rank"], host=r["host"]) for r in reports]
    return compare(fps, word="ranks")


def format_table(reports: Sequence[Mapping[str, Any]]) -> str:
    header = f"{'RANK':>5} {'LOCAL_RANK':>10} {'WORLD_SIZE':>10}  {'BACKEND':8} HOST"
    rows = [header]
    for r in sorted(reports, key=lambda x: x["rank"]):
        rows.append(f"{r['rank']:>5} {r['local_rank']:>10} {r['world_size']:>10}  {r['backend']:8} {r['host']}")
    return "\n".join(rows)


def _backend() -> str:
    chosen = os.environ.get("PRIMUS_PREFLIGHT_BACKEND")
    if chosen:
        return chosen
    import torch

    return "nccl" if torch.cuda.is_available() else "gloo"


def run(env: Mapping[str, str]) -> int:
    import datetime

    import torch.distributed as dist

    backend = _backend()
    timeout = datetime.timedelta(seconds=float(env.get("PRIMUS_PREFLIGHT_TIMEOUT", "300")))
    distributed = "WORLD_SIZE" in env
    if distributed:
        dist.init_process_group(backend=backend, timeout=timeout)
    mine = rank_report(env, backend if distributed else "none")
    if distributed:
        reports: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(reports, mine)
    else:
        reports = [mine]
    problems = find_problems(reports)
    rank = mine["rank"]
    if rank == 0:
        print("[preflight] ranks:\n" + format_table(reports), flush=True)
    if problems:
        text = "\n".join(f"  - {p}" for p in problems)
        print(f"[preflight] FAILED on rank {rank} ({len(problems)} problem(s)):\n{text}\n"
              "  Fix: export the same values on every node (compare your per-node env files, "
              "hooks and images) and make WORLD_SIZE match NNODES x GPUS_PER_NODE.", file=sys.stderr, flush=True)
    elif rank == 0:
        print(f"[preflight] OK: world size {len(reports)}, {len(reports[0]['vars'])} cluster-uniform "
              f"variables identical, {len(reports[0]['cluster']['meaning'])} per-node network values "
              f"mean the same and {len(reports[0]['cluster']['versions'])} versions agree on every rank",
              flush=True)
    if distributed:
        dist.barrier()      # every rank has printed its verdict before any exits
        dist.destroy_process_group()
    return EXIT_INVALID if problems else 0  # the ranks disagree: a configuration error


def main(argv: list[str]) -> int:
    from primus_runner.usertext import plain

    parser = argparse.ArgumentParser(prog="python3 -m primus_runner preflight", description=plain(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    return run(dict(os.environ))
