"""The preflight checks, as pure functions over gathered rank reports."""
from __future__ import annotations

from primus_runner.workload.preflight import comm_vars, find_problems, mismatch_table


def report(rank: int, local: int, world: int = 4, per_node: int = 2, **env: str) -> dict:
    return {"host": f"h{rank // per_node}", "rank": rank, "local_rank": local, "world_size": world,
            "local_world_size": per_node, "backend": "gloo",
            "vars": {"NNODES": str(world // per_node), "MASTER_ADDR": "n0", **env}}


def test_consistent_job_has_no_problems() -> None:
    reports = [report(r, r % 2, NCCL_IB_GID_INDEX="3") for r in range(4)]
    assert find_problems(reports) == []


def test_differing_variable_names_both_sides() -> None:
    reports = [report(r, r % 2, NCCL_IB_GID_INDEX="3" if r < 2 else "1") for r in range(4)]
    assert mismatch_table(reports) == [
        "NCCL_IB_GID_INDEX differs between ranks: '3' on ranks 0-1; '1' on ranks 2-3"]


def test_variable_set_on_some_ranks_only() -> None:
    reports = [report(0, 0, world=2, per_node=1, RCCL_MSCCL_ENABLE="0"), report(1, 0, world=2, per_node=1)]
    assert mismatch_table(reports) == [
        "RCCL_MSCCL_ENABLE differs between ranks: '0' on ranks 0; <unset> on ranks 1"]


def test_world_size_must_equal_nnodes_times_per_node() -> None:
    reports = [report(r, r % 2) for r in range(4)]
    for r in reports:
        r["vars"]["NNODES"] = "3"
    problems = find_problems(reports)
    assert any("world size 4 != NNODES (3) x processes per node (2)" in p for p in problems)


def test_duplicate_ranks_are_reported() -> None:
    reports = [report(0, 0), report(0, 1), report(2, 0), report(3, 1)]
    assert any("duplicates [0]" in p for p in find_problems(reports))


def test_comm_vars_selects_only_communication_variables() -> None:
    env = {"NCCL_DEBUG": "INFO", "RCCL_X": "1", "HSA_Y": "2", "NEURON_RT_Z": "3", "MASTER_PORT": "1",
           "NNODES": "2", "GPUS_PER_NODE": "8", "HOME": "/root", "RANK": "0", "HIP_VISIBLE_DEVICES": "0"}
    assert set(comm_vars(env)) == {"NCCL_DEBUG", "RCCL_X", "HSA_Y", "NEURON_RT_Z", "MASTER_PORT",
                                   "NNODES", "GPUS_PER_NODE"}
