"""Network truth for every port (python/primus_runner/network/): IPv6 RoCE v2 GIDs,
user values naming DOWN ports or unroutable GIDs, and no empty NCCL_IB_HCA.

Fake hosts are sysfs-shaped trees (tests/fixtures/sysfs/, written by
make_fixtures.py); roce-ipv6 is an IPv6-only RoCE host with a DOWN mlx5_4.
Expected values are written by hand from the trees' design.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from primus_runner.doctor.network import rdma_check
from primus_runner.env.rules import check, exit_code
from primus_runner.network.check import host_problems
from primus_runner.network.detect import detect_nics

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"
V6 = str(FIX / "roce-ipv6")
NO_USER: dict[str, str] = {}


def _problems(root: str, **env: str) -> list[tuple[str, str, str]]:
    return [(p.severity, p.variable, p.message) for p in host_problems(env, root)]


def _rule_findings(root: str, rule: str, **env: str) -> list[tuple[str, str]]:
    findings = check({"PRIMUS_SYSFS_ROOT": root, **env})
    return [(f.severity, f.variable) for f in findings if f.rule == rule]


def test_ipv6_only_roce_ports_are_chosen_with_the_global_ipv6_gid_index() -> None:
    result = detect_nics(V6, NO_USER)
    assert result.nccl_ib_hca == "mlx5_0:1,mlx5_1:1"
    assert (result.gid_index, result.gid_origin) == (3, "detected")
    assert [(p.name, p.gid_family) for p in result.chosen_ports()] == [
        ("mlx5_0:1", "IPv6"), ("mlx5_1:1", "IPv6")]
    env = result.as_env()
    assert env["NCCL_IB_HCA"] == "mlx5_0:1,mlx5_1:1" and env["NCCL_IB_GID_INDEX"] == "3"
    assert "NCCL_IB_ADDR_FAMILY" not in env


def test_ipv6_gid_of_another_netdev_is_not_chosen(tmp_path: Path) -> None:
    """/proc/net/if_inet6 lists this host's IPv6 addresses: a GID that is not one of its
    netdev's (a neighbour's in a shared table) is not routable from here."""
    root = tmp_path / "host"
    shutil.copytree(V6, root, symlinks=True)
    inet6 = root / "proc/net/if_inet6"
    inet6.write_text(inet6.read_text().replace("20010db8000000010a5caefffe000001",
                                               "20010db8000000990a5caefffe000099"))
    result = detect_nics(str(root), NO_USER)
    assert result.nccl_ib_hca == "mlx5_1:1"
    dropped = next(p for p in result.ports if p.name == "mlx5_0:1")
    assert not dropped.chosen and "another netdev" in dropped.reason


def test_ipv6_only_port_beside_ipv4_ports_is_left_out_saying_why(tmp_path: Path) -> None:
    """One address family per host (NCCL_IB_ADDR_FAMILY): roce-linklocal's mlx5_1 given a
    global IPv6 GID stays out while mlx5_0 uses IPv4."""
    sys.path.insert(0, str(FIX))
    import make_fixtures

    root = tmp_path / "host"
    shutil.copytree(FIX / "roce-linklocal", root, symlinks=True)
    glob = "2001:0db8:0000:0002:0a5c:aeff:fe00:0002"
    make_fixtures.hca(root, "mlx5_1", "ens2np0", 0, "Ethernet",
                      [("fe80:0000:0000:0000:0a5c:aeff:fe00:0002", "IB/RoCE v1"),
                       ("fe80:0000:0000:0000:0a5c:aeff:fe00:0002", "RoCE v2"),
                       (glob, "IB/RoCE v1"), (glob, "RoCE v2")])
    result = detect_nics(str(root), NO_USER)
    assert (result.nccl_ib_hca, result.gid_index) == ("mlx5_0:1", 3)
    dropped = next(p for p in result.ports if p.name == "mlx5_1:1")
    assert "only a RoCE v2 IPv6 GID" in dropped.reason and "IPv4" in dropped.reason


def test_no_usable_rdma_port_exports_no_hca_list_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "host"
    shutil.copytree(V6, root, symlinks=True)
    (root / "proc/net/if_inet6").write_text("")      # the netdevs lost their IPv6 addresses
    for dev in ("mlx5_0", "mlx5_1"):
        for idx in ("2", "3"):
            (root / f"sys/class/infiniband/{dev}/ports/1/gid_attrs/types/{idx}").unlink()
    result = detect_nics(str(root), NO_USER)
    assert result.nccl_ib_hca is None and "NCCL_IB_HCA" not in result.as_env()
    assert any(n.startswith("no RDMA port here is usable") and "NCCL_IB_DISABLE=1" in n
               for n in result.notes)


def test_user_link_local_gid_index_is_refused_on_ipv6_ports() -> None:
    found = _problems(V6, NCCL_IB_GID_INDEX="1")
    assert [(s, v) for s, v, _ in found] == [("error", "NCCL_IB_GID_INDEX")]
    assert "mlx5_0:1: RoCE v2 link-local" in found[0][2]
    (problem,) = host_problems({"NCCL_IB_GID_INDEX": "1"}, V6)
    assert problem.fix == "export NCCL_IB_GID_INDEX=3 (the RoCE v2 IPv6 GID here)"
    assert _problems(V6, NCCL_IB_GID_INDEX="3") == []
    # The rule the launch and env check ask: exit 2.
    assert _rule_findings(V6, "nic_values_on_host", NCCL_IB_GID_INDEX="1") == [
        ("error", "NCCL_IB_GID_INDEX")]
    assert exit_code(check({"PRIMUS_SYSFS_ROOT": V6, "NCCL_IB_GID_INDEX": "1"})) == 2


def test_user_roce_v1_gid_index_cannot_route_and_is_an_error() -> None:
    found = _problems(V6, NCCL_IB_GID_INDEX="2")
    assert [(s, v) for s, v, _ in found] == [("error", "NCCL_IB_GID_INDEX")]
    assert "RoCE v1" in found[0][2]


def test_user_gid_index_is_checked_on_every_port_nccl_uses_when_none_is_chosen(
        tmp_path: Path) -> None:
    """No usable port detected: NCCL_IB_HCA stays unset and NCCL uses every ACTIVE port,
    so a user index is judged on all of them (before, on none)."""
    root = tmp_path / "host"
    shutil.copytree(FIX / "roce-linklocal", root, symlinks=True)
    shutil.rmtree(root / "sys/class/infiniband/mlx5_0")
    assert detect_nics(str(root), NO_USER).nccl_ib_hca is None
    found = _problems(str(root), NCCL_IB_GID_INDEX="1")
    assert [(s, v) for s, v, _ in found] == [("error", "NCCL_IB_GID_INDEX")]
    assert "mlx5_1:1: RoCE v2 link-local" in found[0][2]


def test_auto_gid_index_needs_a_gid_of_the_address_family() -> None:
    found = _problems(V6, NCCL_IB_GID_INDEX="-1")
    assert [(s, v) for s, v, _ in found] == [("error", "NCCL_IB_GID_INDEX")]
    assert "AF_INET, its default" in found[0][2]
    assert _problems(V6, NCCL_IB_GID_INDEX="-1", NCCL_IB_ADDR_FAMILY="AF_INET6") == []


def test_user_hca_naming_a_down_port_is_an_error_everywhere() -> None:
    found = _problems(V6, NCCL_IB_HCA="mlx5_4:1")
    assert [(s, v) for s, v, _ in found] == [("error", "NCCL_IB_HCA")]
    assert "mlx5_4:1 (DOWN, Disabled)" in found[0][2]
    assert _problems(V6, NCCL_IB_HCA="=mlx5_4")[0][0] == "error"
    assert exit_code(check({"PRIMUS_SYSFS_ROOT": V6, "NCCL_IB_HCA": "mlx5_4:1"})) == 2
    # The doctor's RDMA row asks the same check.
    result = detect_nics(V6, {"NCCL_IB_HCA": "mlx5_4:1"})
    row = rdma_check({"NCCL_IB_HCA": "mlx5_4:1"}, result, V6)
    assert row.status == "fail" and "mlx5_4:1 (DOWN, Disabled)" in row.value
    assert row.fix.startswith("export NCCL_IB_HCA=mlx5_0:1,mlx5_1:1")
    # A DOWN port only a prefix or a ^ list reaches (NCCL skips it, the list still
    # selects ACTIVE ports) is a warning.
    assert [(s, v) for s, v, _ in _problems(V6, NCCL_IB_HCA="mlx5")] == [("warning", "NCCL_IB_HCA")]
    assert [(s, v) for s, v, _ in _problems(V6, NCCL_IB_HCA="^mlx5_1")] == [
        ("warning", "NCCL_IB_HCA")]
    assert _problems(V6, NCCL_IB_HCA="mlx5_0:1,mlx5_1:1") == []


def test_user_socket_ifname_prefix_matching_vlans_is_an_error() -> None:
    root = str(FIX / "bond-vlan")
    assert _rule_findings(root, "nccl_ifname_prefix_overlap", NCCL_SOCKET_IFNAME="bond0") == [
        ("error", "NCCL_SOCKET_IFNAME")]
    findings = check({"PRIMUS_SYSFS_ROOT": root, "NCCL_SOCKET_IFNAME": "bond0"})
    assert exit_code(findings) == 2
    (finding,) = [f for f in findings if f.rule == "nccl_ifname_prefix_overlap"]
    assert finding.fix.endswith("NCCL_SOCKET_IFNAME==bond0")
    assert exit_code(check({"PRIMUS_SYSFS_ROOT": root, "NCCL_SOCKET_IFNAME": "=bond0"})) == 0
