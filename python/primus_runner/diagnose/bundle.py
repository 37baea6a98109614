"""Dump every live rank of a run into a bundle directory and summarise it.

Owns the bundle: ``<log without .log>.<kind>-<n>/`` with ``rank-<R>.txt`` (how the
stack was read, then every thread), ``summary.txt`` and ``summary.json`` (the
places, for the Slurm merge), and the list of flight-recorder files found. It must
not decide when to dump (the watchdog, the worker wrapper, ``primus-cli stacks``).
"""
from __future__ import annotations

import glob
import json
import os
import socket
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from primus_runner.diagnose.frames import render
from primus_runner.diagnose.pyspy import read_stacks
from primus_runner.diagnose.runs import LiveRank, Run, ranks_of
from primus_runner.diagnose.summary import RankPlace, place_of, summary_lines, to_json


def new_bundle(log: str, kind: str) -> str:
    """Create ``<log without .log>.<kind>-<n>`` (first free n from 1), mode 0700: it holds
    stacks, command lines and environment names, for the user alone; its path."""
    # A launch without PRIMUS_RUN_LOG (started by an older launcher): the temporary directory.
    base = (log[:-4] if log.endswith(".log") else log) or os.path.join(tempfile.gettempdir(), "primus")
    parent = os.path.dirname(base)
    if parent:
        os.makedirs(parent, exist_ok=True)
    n = 1
    while True:
        path = f"{base}.{kind}-{n}"
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            n += 1
            continue
        os.chmod(path, 0o700)  # whatever the umask
        return path


def private_text(path: str, text: str) -> None:
    """Write TEXT to a new file PATH, mode 0600 (a bundle's files are the user's alone)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def flight_recorder_files(run: Run) -> list[str]:
    """Files PyTorch's flight recorder (TORCH_FR_DUMP_TEMP_FILE<rank>, or its older name
    TORCH_NCCL_DEBUG_INFO_TEMP_FILE) or the Neuron runtime (NEURON_RT_INSPECT_OUTPUT_DIR)
    left for this run."""
    found: set[str] = set()
    for _, env in run.processes.values():
        for name in ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"):
            prefix = env.get(name, "")
            if prefix:
                found.update(p for p in glob.glob(glob.escape(prefix) + "*") if os.path.isfile(p))
        neuron = env.get("NEURON_RT_INSPECT_OUTPUT_DIR", "")
        if neuron and os.path.isdir(neuron):
            found.update(str(p) for p in Path(neuron).rglob("*") if p.is_file())
    return sorted(found)


def _dump_one(rank: LiveRank, node: int, host: str, bundle: str, native: bool) -> tuple[RankPlace, str]:
    threads, how, problems = read_stacks(rank.pid, rank.faulthandler_file, native)
    path = os.path.join(bundle, f"rank-{rank.rank}.txt")
    head = [f"rank {rank.rank} (local rank {rank.local_rank}) pid {rank.pid} on {host} (node {node})",
            f"read with: {how or 'nothing worked'}"]
    if problems:
        head.append(f"problems: {problems}")
    text = "\n".join(head) + "\n\n" + render(threads)
    private_text(path, text)
    if not threads:
        return RankPlace(rank.rank, node, host, error=problems or "no stack", stack_file=path), text
    return place_of(rank.rank, node, host, threads, path), text


def dump_run(run: Run, bundle: str, skip_ranks: frozenset[int] = frozenset(),
             native: bool = True) -> tuple[list[RankPlace], list[str], dict[int, str]]:
    """Dump RUN's live ranks into BUNDLE: (places, summary lines, {rank: stack text})."""
    host = socket.gethostname().split(".")[0]
    live, ended = ranks_of(run)
    live = [r for r in live if r.rank not in skip_ranks]
    places: list[RankPlace] = []
    texts: dict[int, str] = {}
    if live:
        with ThreadPoolExecutor(max_workers=min(8, len(live))) as pool:
            for rank, (place, text) in zip(live, pool.map(lambda r: _dump_one(r, run.node, host, bundle, native), live),
                                           strict=True):
                places.append(place)
                texts[rank.rank] = text
    places.extend(RankPlace(rank, run.node, host, exit_code=code) for rank, code in sorted(ended.items())
                  if rank not in skip_ranks)
    recorder = flight_recorder_files(run)
    extra = [f"flight recorder: {', '.join(recorder)}"] if recorder else []
    lines = summary_lines(places, bundle, extra)
    private_text(os.path.join(bundle, "summary.txt"), "\n".join(lines) + "\n")
    private_text(os.path.join(bundle, "summary.json"),
                 json.dumps({"node": run.node, "host": host, "places": to_json(places), "flight_recorder": recorder},
                            indent=1))
    return places, lines, texts
