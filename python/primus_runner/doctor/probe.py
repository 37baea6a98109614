"""``--probe``: measurements with the job's real collective backend.

In a multi-node job (one process per node, e.g. the ``slurm doctor`` step), with
torch.distributed: gloo on CPU, NCCL/RCCL when torch sees a GPU. Two rounds of
pairings, i with i+1 then i with i+N/2 (a node left over in an odd fleet pairs
with node 0 in an extra step), each pair timing a ping-pong of ``PROBE_BYTES``
both ways (bandwidth) and of one element (latency), then one all_reduce over all
nodes (bus bandwidth = bytes x 2(N-1)/N / time, the nccl-tests convention,
https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md). On a GPU,
one bf16 GEMM per node (TFLOP/s). Neuron hosts: torch's gloo over the host NICs;
Neuron collectives (nccom-test) are not run by this version, and the report says so.
Must not run outside ``--probe``; every figure lands in the report, the verdict
on the figures is fleet.py's.
"""
from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROBE_BYTES = 16 << 20
ITERATIONS = 3


def pairings(n: int) -> list[list[tuple[int, int]]]:
    """Steps of disjoint pairs: round 1 (i, i+1), round 2 (i, i+N/2), odd leftovers with 0."""
    steps: list[list[tuple[int, int]]] = []
    if n < 2:
        return steps
    for pairs in ([(i, i + 1) for i in range(0, n - 1, 2)], [(i, i + n // 2) for i in range(n // 2)]):
        steps.append(pairs)
        paired = {x for p in pairs for x in p}
        left = [i for i in range(n) if i not in paired]
        steps += [[(i, 0)] for i in left]
    return steps


def round_of(step_index: int, n: int) -> int:
    """1 or 2: which pairing round a step of ``pairings(n)`` belongs to."""
    first_round = 1 + (n % 2)
    return 1 if step_index < first_round else 2


def _ping_pong(dist: Any, tensor: Any, me: int, peer: int, iterations: int) -> float:
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        if me < peer:
            dist.send(tensor, peer)
            dist.recv(tensor, peer)
        else:
            dist.recv(tensor, peer)
            dist.send(tensor, peer)
        times.append(time.perf_counter() - start)
    return float(statistics.median(times))


def _gemm_tflops(torch: Any) -> float:
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.matmul(a, b)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    return 10 * 2 * 4096 ** 3 / (time.perf_counter() - start) / 1e12


def run_probe(env: Mapping[str, str], rep: Mapping[str, Any]) -> dict[str, Any]:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    gpu = bool(torch.cuda.is_available())
    out: dict[str, Any] = {"backend": "nccl" if gpu else "gloo", "bytes": PROBE_BYTES, "pairs": [],
                           "checks": []}
    if gpu:
        out["gemm_tflops"] = round(_gemm_tflops(torch), 1)
    if env.get("PRIMUS_ACCELERATOR") == "neuron" or rep.get("facts", {}).get("accelerator") == "neuron":
        out["note"] = "Neuron collectives (nccom-test) not run by this version: gloo over the host NICs"
    n, me = int(rep["nnodes"]), int(rep["node_rank"])
    if n < 2:
        out["checks"].append({"name": "probe", "status": "pass", "value": "one node: no pair to measure"
                              + (f"; GEMM {out['gemm_tflops']} TFLOP/s" if gpu else ""),
                              "wanted": "node pairs in a multi-node job (primus-cli slurm doctor --probe)",
                              "fix": ""})
        return out
    start = time.monotonic()
    dist.init_process_group(out["backend"], init_method=f"tcp://{rep['master']}:{rep['port']}",
                            rank=me, world_size=n, timeout=timedelta(seconds=120))
    try:
        device = "cuda" if gpu else "cpu"
        hosts: list[Any] = [None] * n
        dist.all_gather_object(hosts, socket.gethostname().split(".")[0])
        big = torch.zeros(PROBE_BYTES // 4, dtype=torch.float32, device=device)
        small = torch.zeros(1, dtype=torch.float32, device=device)
        for index, step in enumerate(pairings(n)):
            for a, b in step:
                if me in (a, b):
                    peer = b if me == a else a
                    _ping_pong(dist, small, me, peer, 1)              # connect and warm up
                    latency = _ping_pong(dist, small, me, peer, 10) / 2
                    seconds = _ping_pong(dist, big, me, peer, ITERATIONS)
                    out["pairs"].append({"round": round_of(index, n), "peer": hosts[peer],
                                         "gbps": round(2 * PROBE_BYTES / seconds / 1e9, 4),
                                         "latency_us": round(latency * 1e6, 1)})
            dist.barrier()
        dist.all_reduce(big)                                          # warm up
        t0 = time.perf_counter()
        dist.all_reduce(big)
        if gpu:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
        out["allreduce_busbw_gbps"] = round(PROBE_BYTES * 2 * (n - 1) / n / elapsed / 1e9, 4)
    finally:
        dist.destroy_process_group()
    best = max((p["gbps"] for p in out["pairs"]), default=0.0)
    out["checks"].append({"name": "probe", "status": "pass",
                          "value": f"{out['backend']}: best pair {best:.3g} GB/s, all_reduce bus "
                          f"{out['allreduce_busbw_gbps']:.3g} GB/s, {time.monotonic() - start:.1f} s",
                          "wanted": "judged against the fleet median by slurm doctor", "fix": ""})
    return out
