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


# -- the launcher's exchange through node 0 (clustercheck) -------------------------------
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fp(node: int, algo: str) -> dict:
    from primus_runner.cluster.clustercheck import PROTOCOL

    return {"protocol": PROTOCOL, "node": node, "host": f"n{node}", "uniform": {"NCCL_ALGO": algo},
            "meaning": {}, "raw": {}, "versions": {}}


def test_exchange_gives_every_node_the_same_verdict() -> None:
    import threading

    from primus_runner.cluster.clustercheck import join, serve

    port = _free_port()
    results: dict[str, list[str]] = {}
    server = threading.Thread(target=lambda: results.setdefault("0", serve(_fp(0, "Ring"), 3, port, 20)))
    server.start()
    peers = [threading.Thread(target=lambda n=n: results.setdefault(str(n), join(_fp(n, "Tree" if n == 2 else "Ring"),
                                                                                  "127.0.0.1", port, 20)))
             for n in (1, 2)]
    for t in peers:
        t.start()
    for t in [server, *peers]:
        t.join(30)
    expected = ["NCCL_ALGO differs between nodes: 'Ring' on nodes 0-1 (n0, n1); 'Tree' on node 2 (n2). "
                "Needed: the same value on every node"]
    assert results == {"0": expected, "1": expected, "2": expected}


def test_a_node_that_never_hears_from_node_0_fails_with_exit_3_naming_the_endpoint() -> None:
    import pytest

    from primus_runner.cluster.clustercheck import CheckFailed, join

    port = _free_port()
    with pytest.raises(CheckFailed) as err:
        join(_fp(1, "Ring"), "127.0.0.1", port, 0.5)
    assert err.value.code == 3
    assert str(err.value).startswith(f"cluster check: node 0 did not answer at 127.0.0.1:{port} within 0.5 s")


def test_node_0_names_the_missing_nodes_after_its_timeout() -> None:
    import pytest

    from primus_runner.cluster.clustercheck import CheckFailed, serve

    with pytest.raises(CheckFailed) as err:
        serve(_fp(0, "Ring"), 3, _free_port(), 0.5)
    assert err.value.code == 3
    assert "1 of 3 nodes reported within 0.5 s; missing 1-2" in str(err.value)


def test_the_check_is_skipped_for_one_node_dry_runs_and_when_switched_off() -> None:
    from primus_runner.cluster.clustercheck import wanted

    assert wanted({"NNODES": "2", "NODE_RANK": "1"})
    assert not wanted({"NNODES": "1"})
    assert not wanted({"NNODES": "2", "PRIMUS_DRY_RUN": "1"})
    assert not wanted({"NNODES": "2", "PRIMUS_CLUSTER_CHECK": "0"})
    assert wanted({"NNODES": "1", "PRIMUS_SRUN_NATIVE": "1", "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"})
