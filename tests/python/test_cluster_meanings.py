"""The cluster check compares each node's chosen HCA list, GID index and socket interface
class (python/primus_runner/cluster/meanings.py) and names the odd node and why.

Each "node" is a copy of the IPv6-only RoCE tree tests/fixtures/sysfs/roce-ipv6 with the
values its own detection chose, as a launch exports them.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from primus_runner.cluster.clustercheck import compare, fingerprint
from primus_runner.network.detect import detect_nics

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"


def _node(tmp_path: Path, name: str, down: str | None = None) -> tuple[dict[str, str], str]:
    root = tmp_path / name
    shutil.copytree(FIX / "roce-ipv6", root, symlinks=True)
    if down:
        (root / f"sys/class/infiniband/{down}/ports/1/state").write_text("1: DOWN\n")
    env = detect_nics(str(root), {}).as_env()
    return env, str(root)


def _reports(tmp_path: Path, downs: list[str | None]) -> list[dict[str, object]]:
    out = []
    for i, down in enumerate(downs):
        env, root = _node(tmp_path, f"n{i}", down)
        report = fingerprint(env, root, i)
        report["host"] = f"h{i}"
        out.append(report)
    return out


def test_a_node_with_a_port_down_is_named_with_the_cause(tmp_path: Path) -> None:
    reports = _reports(tmp_path, [None, "mlx5_1"])
    assert reports[0]["meaning"]["NCCL_IB_HCA"] == "2 ACTIVE port(s), link layer Ethernet"
    assert reports[1]["meaning"]["NCCL_IB_HCA"] == "1 ACTIVE port(s), link layer Ethernet"
    (problem,) = compare(reports)
    assert problem.startswith("NCCL_IB_HCA means different things on different nodes: "
                              "'2 ACTIVE port(s), link layer Ethernet' on node 0 (h0); "
                              "'1 ACTIVE port(s), link layer Ethernet' on node 1 (h1)")
    assert problem.endswith("Odd node: 1 (h1: left out mlx5_1:1 state DOWN). "
                            "Needed: values that mean the same on every node")


def test_the_odd_node_is_the_one_outside_the_majority(tmp_path: Path) -> None:
    problems = compare(_reports(tmp_path, [None, None, "mlx5_0"]))
    (problem,) = [p for p in problems if p.startswith("NCCL_IB_HCA")]
    assert "Odd node: 2 (h2: left out mlx5_0:1 state DOWN)." in problem
    assert "Odd node: 0" not in problem and "Odd node: 1" not in problem


def test_the_socket_interface_class_is_compared(tmp_path: Path) -> None:
    reports = _reports(tmp_path, [None, None])
    assert reports[0]["meaning"]["NCCL_SOCKET_IFNAME"] == "IPv4 subnet 10.0.0.0/24 (ethernet)"
    assert compare(reports) == []
    # Node 1's eth0 is an IPoIB interface on the same subnet: a different class.
    root = tmp_path / "n1"
    (root / "sys/class/net/eth0/type").write_text("32\n")
    env = detect_nics(str(root), {}).as_env()
    report = fingerprint(env, str(root), 1)
    report["host"] = "h1"
    (problem,) = [p for p in compare([reports[0], report]) if p.startswith("NCCL_SOCKET_IFNAME")]
    assert "'IPv4 subnet 10.0.0.0/24 (IPoIB)' on node 1 (h1)" in problem
