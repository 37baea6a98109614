"""The preflight checks, as pure functions over gathered rank reports."""
from __future__ import annotations

from primus_runner.workload.preflight import comm_vars, find_problems, mismatch_table


def report(rank: int, local: int, world: int = 4, per_node: int = 2, meaning: dict | None = None,
           versions: dict | None = None, **env: str) -> dict:
    uniform = {"NNODES": str(world // per_node), "MASTER_ADDR": "n0", **env}
    return {"host": f"h{rank // per_node}", "rank": rank, "local_rank": local, "world_size": world,
            "local_world_size": per_node, "backend": "gloo", "vars": uniform,
            "cluster": {"node": rank, "host": f"h{rank // per_node}", "uniform": uniform,
                        "meaning": meaning or {}, "raw": {}, "versions": versions or {}}}


def test_consistent_job_has_no_problems() -> None:
    reports = [report(r, r % 2, NCCL_ALGO="Ring") for r in range(4)]
    assert find_problems(reports) == []


def test_differing_uniform_variable_names_both_sides() -> None:
    reports = [report(r, r % 2, NCCL_ALGO="Ring" if r < 2 else "Tree") for r in range(4)]
    assert mismatch_table(reports) == [
        "NCCL_ALGO differs between ranks: 'Ring' on ranks 0-1 (h0); 'Tree' on ranks 2-3 (h1). "
        "Needed: the same value on every node"]


def test_variable_set_on_some_ranks_only() -> None:
    reports = [report(0, 0, world=2, per_node=1, RCCL_MSCCL_ENABLE="0"), report(1, 0, world=2, per_node=1)]
    assert mismatch_table(reports) == [
        "RCCL_MSCCL_ENABLE differs between ranks: '0' on rank 0 (h0); <unset> on rank 1 (h1). "
        "Needed: the same value on every node"]


def test_per_node_values_that_mean_the_same_pass() -> None:
    same = {"NCCL_SOCKET_IFNAME": "IPv4 subnet 10.0.0.0/24", "NCCL_IB_GID_INDEX": "RoCE v2 IPv4"}
    reports = [report(r, r % 2, meaning=same) for r in range(4)]
    assert find_problems(reports) == []
    other = {**same, "NCCL_IB_GID_INDEX": "RoCE v2 IPv6"}
    reports = [report(r, r % 2, meaning=same if r < 2 else other) for r in range(4)]
    assert mismatch_table(reports) == [
        "NCCL_IB_GID_INDEX means different things on different ranks: 'RoCE v2 IPv4' on ranks 0-1 "
        "(h0); 'RoCE v2 IPv6' on ranks 2-3 (h1). Needed: values that mean the same on every node"]


def test_library_version_mismatch_is_a_problem() -> None:
    reports = [report(r, r % 2, versions={"ROCm": "6.3.0" if r < 2 else "6.1.2", "torch": "2.13.0"})
               for r in range(4)]
    assert mismatch_table(reports) == [
        "ROCm version differs between ranks: '6.3.0' on ranks 0-1 (h0); '6.1.2' on ranks 2-3 (h1). "
        "Needed: the same software on every node"]


def test_world_size_must_equal_nnodes_times_per_node() -> None:
    reports = [report(r, r % 2) for r in range(4)]
    for r in reports:
        r["vars"]["NNODES"] = "3"
    problems = find_problems(reports)
    assert any("world size 4 != NNODES (3) x processes per node (2)" in p for p in problems)


def test_duplicate_ranks_are_reported() -> None:
    reports = [report(0, 0), report(0, 1), report(2, 0), report(3, 1)]
    assert any("duplicates [0]" in p for p in find_problems(reports))


def test_comm_vars_selects_the_cluster_uniform_variables() -> None:
    env = {"NCCL_DEBUG": "INFO", "RCCL_X": "1", "HSA_Y": "2", "NEURON_RT_Z": "3", "MASTER_PORT": "1",
           "NNODES": "2", "GPUS_PER_NODE": "8", "HOME": "/root", "RANK": "0", "HIP_VISIBLE_DEVICES": "0",
           "NCCL_SOCKET_IFNAME": "eno1", "HF_TOKEN": "secret"}
    # NCCL_DEBUG is local, NCCL_SOCKET_IFNAME and HIP_VISIBLE_DEVICES per-node, RANK per-process
    assert set(comm_vars(env)) == {"RCCL_X", "HSA_Y", "NEURON_RT_Z", "MASTER_PORT", "NNODES",
                                   "GPUS_PER_NODE"}
