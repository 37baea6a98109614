"""``preflight``: check the distributed environment across all ranks.

Run under torchrun (``primus-cli direct -- preflight``). Every rank reports its
host, RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE and backend plus the
communication-relevant variables; the job all-gathers the reports and checks:

- WORLD_SIZE = NNODES x processes per node (LOCAL_WORLD_SIZE);
- every rank is unique and 0..WORLD_SIZE-1 are all present;
- every rank sees identical values for NCCL_*, RCCL_*, HSA_*, NEURON_RT_*,
  MASTER_*, NNODES and GPUS_PER_NODE.

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

from primus_runner.masking import mask

COMM_PREFIXES = ("NCCL_", "RCCL_", "HSA_", "NEURON_RT_", "MASTER_")
COMM_NAMES = ("NNODES", "GPUS_PER_NODE")
EXIT_MISMATCH = 2


def comm_vars(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that must agree on every rank."""
    return {k: v for k, v in env.items() if k.startswith(COMM_PREFIXES) or k in COMM_NAMES}


def rank_report(env: Mapping[str, str], backend: str) -> dict[str, Any]:
    return {
        "host": socket.gethostname(),
        "rank": int(env.get("RANK", "0")),
        "local_rank": int(env.get("LOCAL_RANK", "0")),
        "world_size": int(env.get("WORLD_SIZE", "1")),
        "local_world_size": int(env.get("LOCAL_WORLD_SIZE", "1")),
        "backend": backend,
        "vars": comm_vars(env),
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
    """One block per variable whose value differs between ranks."""
    names = sorted({name for r in reports for name in r["vars"]})
    blocks = []
    for name in names:
        by_value: dict[str, list[int]] = {}
        for r in reports:
            value = r["vars"].get(name)
            shown = "<unset>" if value is None else repr(mask(name, value))
            by_value.setdefault(shown, []).append(r["rank"])
        if len(by_value) > 1:
            sides = "; ".join(f"{value} on ranks {_ranges(sorted(rs))}" for value, rs in by_value.items())
            blocks.append(f"{name} differs between ranks: {sides}")
    return blocks


def _ranges(ranks: list[int]) -> str:
    out, start, prev = [], None, None
    for r in [*ranks, None]:
        if start is None:
            start = prev = r
        elif r is not None and prev is not None and r == prev + 1:
            prev = r
        else:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = r
    return ",".join(out)


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
              "  Fix: export the same values on every node (compare your per-node env files or "
              "hooks) and make WORLD_SIZE match NNODES x GPUS_PER_NODE.", file=sys.stderr, flush=True)
    elif rank == 0:
        print(f"[preflight] OK: world size {len(reports)}, {len(reports[0]['vars'])} communication "
              "variables identical on every rank", flush=True)
    if distributed:
        dist.destroy_process_group()
    return EXIT_MISMATCH if problems else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m primus_runner preflight", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    return run(dict(os.environ))
