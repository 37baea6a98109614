"""``--probe``: measurements with the job's real collective backend.

In a multi-node job (one process per node, e.g. the ``slurm doctor`` step), with
torch.distributed: gloo on CPU, NCCL/RCCL when torch sees a GPU. Two rounds of
pairings, i with i+1 then i with i+N/2 (a node left over in an odd fleet pairs
with node 0 in an extra step), then a recheck of the slow pairs (round 3), a
confirmation round (4) that pairs each node of a slow pair with a node known to be
good, and a recheck of its slow pairs (5) (the plans are pairs.py's, computed on
every node from every node's figures),
each pair timing a ping-pong of
``PROBE_BYTES`` both ways (bandwidth) and of one element (latency), then one all_reduce over all
nodes (bus bandwidth = bytes x 2(N-1)/N / time, the nccl-tests convention,
https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md). On a GPU,
one bf16 GEMM per node (TFLOP/s). Neuron hosts: torch's gloo over the host NICs;
Neuron collectives (nccom-test) are not run by this version, and the report says so.
Must not run outside ``--probe``; every figure lands in the report, the verdict
on the figures is fleet.py's.
"""
from __future__ import annotations

import socket
import time
from collections.abc import Mapping

from primus_runner.doctor.pairs import PLANNED_ROUNDS, Limits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROBE_BYTES = 16 << 20
ITERATIONS = 20                 # bandwidth round trips per pair at most ...
BUDGET_S = 1.0                  # ... and none started after this long (two at least)


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


class _Comm:
    """send/recv/barrier/all_reduce over one process group: a gloo group built on the
    device of this node's own address (GLOO_SOCKET_IFNAME when set; else the address
    its hostname resolves to, as the other nodes reach it; torch's default would fall
    back to the loopback when that address is a 127.x one), or the default group (NCCL)."""

    def __init__(self, pg: Any, dist: Any) -> None:
        self.pg, self.dist = pg, dist

    def send(self, tensor: Any, peer: int) -> None:
        if self.pg is None:
            self.dist.send(tensor, peer)
        else:
            self.pg.send([tensor], peer, 0).wait()

    def recv(self, tensor: Any, peer: int) -> None:
        if self.pg is None:
            self.dist.recv(tensor, peer)
        else:
            self.pg.recv([tensor], peer, 0).wait()

    def barrier(self) -> None:
        if self.pg is None:
            self.dist.barrier()
        else:
            self.pg.barrier().wait()

    def all_reduce(self, tensor: Any) -> None:
        if self.pg is None:
            self.dist.all_reduce(tensor)
        else:
            self.pg.allreduce([tensor]).wait()


def _gloo_group(dist: Any, env: Mapping[str, str], master: str, port: int, me: int, n: int) -> Any:
    from datetime import timedelta

    from torch.distributed import ProcessGroupGloo

    store = dist.TCPStore(master, port, n, me == 0, timeout=timedelta(seconds=120))
    opts = ProcessGroupGloo._Options()  # type: ignore[attr-defined]
    opts._timeout = timedelta(seconds=120)
    iface = (env.get("GLOO_SOCKET_IFNAME") or "").split(",")[0].strip()
    if iface:
        opts._devices = [ProcessGroupGloo.create_device(interface=iface)]
    else:
        opts._devices = [ProcessGroupGloo.create_device(hostname=socket.gethostbyname(socket.gethostname()))]
    return ProcessGroupGloo(store, me, n, opts), store


def _ping_pong(comm: _Comm, tensor: Any, me: int, peer: int, iterations: int, budget: float = 0.0) -> float:
    """The fastest of up to ``iterations`` round trips (what the link can do; a busy CPU
    only ever makes a round trip slower); with ``budget`` (s), no new one after that
    long once two are done. The lower node decides and says so in the first element
    (1: another follows, 0: the last), which the other end reads and echoes."""
    times: list[float] = []
    while True:
        start = time.perf_counter()
        if me < peer:
            last = len(times) + 1 >= iterations or (budget > 0 and len(times) >= 2 and sum(times) >= budget)
            tensor[0] = 0.0 if last else 1.0
            comm.send(tensor, peer)
            comm.recv(tensor, peer)
        else:
            comm.recv(tensor, peer)
            last = float(tensor[0]) == 0.0
            comm.send(tensor, peer)
        times.append(time.perf_counter() - start)
        if last:
            return min(times)


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


def _exchange(dist: Any, store: Any, me: int, n: int, key: str, value: str) -> list[str]:
    """Every node's ``value`` (a string), in node order."""
    if store is None:
        values: list[Any] = [None] * n
        dist.all_gather_object(values, value)
        return [str(v) for v in values]
    store.set(f"primus-doctor-{key}-{me}", value)
    return [store.get(f"primus-doctor-{key}-{i}").decode() for i in range(n)]


def _measure(comm: _Comm, tensors: tuple[Any, Any], me: int, peer: int, host: str, rnd: int) -> dict[str, Any]:
    big, small = tensors
    _ping_pong(comm, small, me, peer, 1)              # connect and warm up
    latency = _ping_pong(comm, small, me, peer, 10) / 2
    seconds = _ping_pong(comm, big, me, peer, ITERATIONS, BUDGET_S)
    return {"round": rnd, "peer": host, "gbps": round(2 * PROBE_BYTES / seconds / 1e9, 4),
            "latency_us": round(latency * 1e6, 1)}


def _run_step(comm: _Comm, tensors: tuple[Any, Any], me: int, hosts: list[str], rnd: int,
              step: list[tuple[int, int]], pairs: list[dict[str, Any]]) -> None:
    for a, b in step:
        if me in (a, b):
            peer = b if me == a else a
            pairs.append(_measure(comm, tensors, me, peer, hosts[peer], rnd))
    comm.barrier()


def _planned(dist: Any, store: Any, me: int, hosts: list[str], pairs: list[dict[str, Any]],
             limits: Limits, rnd: int) -> list[list[tuple[int, int]]]:
    """Round ``rnd``'s steps (node indexes), the same on every node."""
    import json

    from primus_runner.doctor.pairs import measured, plan

    everyone = _exchange(dist, store, me, len(hosts), f"pairs{rnd}", json.dumps(pairs))
    reports = [{"host": h, "probe": {"pairs": json.loads(p)}} for h, p in zip(hosts, everyone, strict=True)]
    index = {h: i for i, h in enumerate(hosts)}
    return [[(index[a], index[b]) for a, b in step] for step in plan(measured(reports), limits, rnd)]


def run_probe(env: Mapping[str, str], rep: Mapping[str, Any], limits: Limits | None = None) -> dict[str, Any]:
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
    master, port = str(rep["master"]), int(rep["port"])
    store: Any = None
    if gpu:
        dist.init_process_group("nccl", init_method=f"tcp://{master}:{port}", rank=me, world_size=n,
                                timeout=timedelta(seconds=120))
        comm = _Comm(None, dist)
    else:
        pg, store = _gloo_group(dist, env, master, port, me, n)
        comm = _Comm(pg, dist)
    try:
        device = "cuda" if gpu else "cpu"
        hosts = _exchange(dist, store, me, n, "host", socket.gethostname().split(".")[0])
        big = torch.zeros(PROBE_BYTES // 4, dtype=torch.float32, device=device)
        small = torch.zeros(1, dtype=torch.float32, device=device)
        survey = [(round_of(i, n), step) for i, step in enumerate(pairings(n))]
        for rnd, step in survey:
            _run_step(comm, (big, small), me, hosts, rnd, step, out["pairs"])
        for rnd in PLANNED_ROUNDS if len(set(hosts)) == n else ():    # pairs are judged by host name
            for step in _planned(dist, store, me, hosts, out["pairs"], limits or Limits(), rnd):
                _run_step(comm, (big, small), me, hosts, rnd, step, out["pairs"])
        comm.all_reduce(big)                                          # warm up
        t0 = time.perf_counter()
        comm.all_reduce(big)
        if gpu:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
        out["allreduce_busbw_gbps"] = round(PROBE_BYTES * 2 * (n - 1) / n / elapsed / 1e9, 4)
        comm.barrier()
    finally:
        if gpu:
            dist.destroy_process_group()
    best = max((p["gbps"] for p in out["pairs"]), default=0.0)
    out["checks"].append({"name": "probe", "status": "pass",
                          "value": f"{out['backend']}: best pair {best:.3g} GB/s, all_reduce bus "
                          f"{out['allreduce_busbw_gbps']:.3g} GB/s, {time.monotonic() - start:.1f} s",
                          "wanted": "judged against the other nodes by slurm doctor", "fix": ""})
    return out
