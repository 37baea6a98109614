"""NIC/HCA, RoCE GID and socket interface detection on fake machine trees.

Expected values are written by hand from the fixtures' design (see
tests/fixtures/sysfs/make_fixtures.py): which ports are up, which are bonded,
where the IPv4 RoCE v2 GID sits, which interface holds which address.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner.errors import UsageError
from primus_runner.network import Route, detect_nics

TYPE_CHECKING = False
if TYPE_CHECKING:
    from primus_runner.network import Route

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "sysfs"
NO_USER: dict[str, str] = {}

# machine -> (NCCL_IB_HCA or None, NCCL_IB_GID_INDEX, interface)
EXPECTED = {
    "mi300x-roce": ("bnxt_re0:1,bnxt_re1:1,bnxt_re2:1,bnxt_re3:1,bnxt_re4:1,bnxt_re5:1,"
                    "bnxt_re6:1,bnxt_re7:1", 5, "ens1f0"),
    "ib-node": ("mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,"
                "mlx5_10:1,mlx5_11:1", 3, "ens8f0"),
    "trn1.32xlarge": (None, 3, "ens32"),
    "trn2.48xlarge": (None, 3, "enp39s0"),
    "inf2": (None, 3, "ens5"),
    "no-accel": (None, 3, "eth0"),
}


@pytest.mark.parametrize("machine", sorted(EXPECTED))
def test_every_fixture_gives_the_expected_values(machine: str) -> None:
    hca, gid, iface = EXPECTED[machine]
    result = detect_nics(str(FIX / machine), NO_USER)
    assert result.nccl_ib_hca == hca
    assert result.gid_index == gid
    assert result.interface == iface
    env = result.as_env()
    expected_env = {"NCCL_IB_GID_INDEX": str(gid), "IP_INTERFACE": iface,
                    "NCCL_SOCKET_IFNAME": iface, "GLOO_SOCKET_IFNAME": iface}
    if hca:
        expected_env["NCCL_IB_HCA"] = hca
    assert env == expected_env


def test_mi300x_skips_the_down_port_and_the_bonded_storage_port() -> None:
    result = detect_nics(str(FIX / "mi300x-roce"), NO_USER)
    reasons = {f"{p.device}:{p.port}": p.reason for p in result.ports if not p.chosen}
    assert reasons == {"bnxt_re8:1": "state DOWN",
                       "mlx5_bond_0:1": "excluded by PRIMUS_IB_HCA_EXCLUDE ('mlx5_bond_0')"}
    assert result.gid_origin == "detected"
    numa = {p.device: p.numa_node for p in result.ports if p.chosen}
    assert numa == {"bnxt_re0": 0, "bnxt_re1": 0, "bnxt_re2": 0, "bnxt_re3": 0,
                    "bnxt_re4": 1, "bnxt_re5": 1, "bnxt_re6": 1, "bnxt_re7": 1}
    assert [p.netdevs for p in result.ports if p.device == "bnxt_re3"] == [["benic4p1"]]


def test_exclusion_pattern_is_configurable() -> None:
    root = str(FIX / "mi300x-roce")
    # A pattern that only hits bnxt_re7 puts the bond back in.
    result = detect_nics(root, {"PRIMUS_IB_HCA_EXCLUDE": r"^bnxt_re7$"})
    assert result.nccl_ib_hca == ("bnxt_re0:1,bnxt_re1:1,bnxt_re2:1,bnxt_re3:1,bnxt_re4:1,"
                                  "bnxt_re5:1,bnxt_re6:1,mlx5_bond_0:1")
    # The bond's IPv4 RoCE v2 GID is at 3 and the others' at 5: no common index,
    # so NCCL (>= 2.21) picks per port by address family and RoCE version.
    assert (result.gid_index, result.gid_origin) == (-1, "auto")
    assert result.as_env()["NCCL_IB_ADDR_FAMILY"] == "AF_INET"
    assert result.as_env()["NCCL_IB_ROCE_VERSION_NUM"] == "2"
    assert any("bnxt_re0:1=5" in note and "mlx5_bond_0:1=3" in note for note in result.notes)
    with pytest.raises(UsageError, match="PRIMUS_IB_HCA_EXCLUDE='\\('"):
        detect_nics(root, {"PRIMUS_IB_HCA_EXCLUDE": "("})


def test_storage_exclusion_switches_to_exact_match_when_names_are_prefixes() -> None:
    result = detect_nics(str(FIX / "ib-node"), {"PRIMUS_IB_HCA_EXCLUDE": r"bond|^mlx5_1[01]$"})
    # mlx5_1 would select mlx5_10 and mlx5_11 by NCCL's prefix match: '=' makes it exact.
    assert result.nccl_ib_hca == ("=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,"
                                  "mlx5_6:1,mlx5_7:1")


def test_ib_host_leaves_its_ethernet_frontend_port_out() -> None:
    result = detect_nics(str(FIX / "ib-node"), NO_USER)
    mlx5_8 = next(p for p in result.ports if p.device == "mlx5_8")
    assert (mlx5_8.chosen, mlx5_8.link_layer) == (False, "Ethernet")
    assert result.gid_origin == "default"


def test_efa_devices_are_not_nccl_hcas() -> None:
    result = detect_nics(str(FIX / "trn2.48xlarge"), NO_USER)
    assert len(result.ports) == 16
    assert not any(p.chosen for p in result.ports)
    assert "NCCL_IB_HCA" not in result.as_env()


def test_interface_holding_10_0_0_10_is_not_chosen_for_10_0_0_1() -> None:
    root = str(FIX / "ib-node")
    # eno1 holds 10.0.0.10 and sorts first; ens8f0 holds 10.0.0.1.
    assert detect_nics(root, NO_USER, master_addr="10.0.0.1").interface == "ens8f0"
    assert detect_nics(root, NO_USER).interface == "ens8f0"          # primary IPv4 10.0.0.1
    assert detect_nics(root, NO_USER, master_addr="10.0.0.10").interface == "eno1"


@pytest.mark.parametrize("master, iface, reason", [
    ("10.0.0.12", "eno1", "routes to MASTER_ADDR 10.0.0.12"),           # 10.0.0.8/29
    ("10.0.0.3", "ens8f0", "routes to MASTER_ADDR 10.0.0.3"),           # 10.0.0.0/29
    ("192.168.100.7", "ib0", "routes to MASTER_ADDR 192.168.100.7"),
    ("8.8.8.8", "ens8f0", "routes to MASTER_ADDR 8.8.8.8"),             # default route
    ("ib-node-002", "ens8f0", "routes to MASTER_ADDR 10.0.0.2"),        # via etc/hosts
    ("localhost", "ens8f0", "holds the primary IPv4 10.0.0.1 of host ib-node-001"),
    ("172.17.0.5", "ens8f0", "routes to MASTER_ADDR 172.17.0.5"),       # never the bridge
])
def test_socket_interface_follows_the_route_to_master(master: str, iface: str, reason: str) -> None:
    result = detect_nics(str(FIX / "ib-node"), NO_USER, master_addr=master)
    assert (result.interface, result.interface_reason) == (iface, reason)


def test_master_addr_is_read_from_env_when_not_given() -> None:
    result = detect_nics(str(FIX / "ib-node"), {"MASTER_ADDR": "10.0.0.13"})
    assert result.interface == "eno1"


def test_loopback_bridges_veth_and_down_interfaces_are_never_chosen() -> None:
    result = detect_nics(str(FIX / "mi300x-roce"), NO_USER)
    reasons = {i.name: i.reason for i in result.interfaces if not i.usable}
    assert reasons["lo"] == "loopback"
    assert reasons["docker0"] == "bridge"
    assert reasons["veth3f2a1b0"] == "excluded by PRIMUS_SOCKET_IFNAME_EXCLUDE"
    assert reasons["benic9p1"] == "operstate down"
    # Debian's '127.0.1.1 devbox' makes the primary address loopback: the default route wins.
    no_accel = detect_nics(str(FIX / "no-accel"), NO_USER)
    assert (no_accel.interface, no_accel.interface_reason) == ("eth0", "default route")


def test_socket_exclusion_is_configurable() -> None:
    result = detect_nics(str(FIX / "mi300x-roce"), {"PRIMUS_SOCKET_IFNAME_EXCLUDE": "^(lo|ens1f0)$"},
                         master_addr="10.1.0.50")
    # ens1f0 is excluded, so no interface routes to 10.1.0.0/16: the fallback is chosen.
    assert (result.interface, result.interface_reason) == ("benic1p1", "first usable interface")
    assert any("no usable interface routes to MASTER_ADDR 10.1.0.50" in n for n in result.notes)


def test_user_values_are_never_replaced() -> None:
    env = {"NCCL_IB_HCA": "mlx5_0", "NCCL_IB_GID_INDEX": "1", "IP_INTERFACE": "bond0"}
    result = detect_nics(str(FIX / "mi300x-roce"), env)
    assert result.as_env() == {"NCCL_SOCKET_IFNAME": "bond0", "GLOO_SOCKET_IFNAME": "bond0"}
    env = {"NCCL_SOCKET_IFNAME": "=ens1f0", "GLOO_SOCKET_IFNAME": "ens1f0"}
    assert detect_nics(str(FIX / "mi300x-roce"), env).as_env() == {
        "NCCL_IB_HCA": EXPECTED["mi300x-roce"][0], "NCCL_IB_GID_INDEX": "5",
        "IP_INTERFACE": "ens1f0"}
    from primus_runner.network.check import host_problems

    problems = host_problems({"IP_INTERFACE": "ens99"}, str(FIX / "no-accel"))
    assert [(p.severity, p.variable, p.value) for p in problems] == [("error", "IP_INTERFACE", "ens99")]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("NCCL_", "GLOO_", "PRIMUS_")) and k not in ("IP_INTERFACE", "MASTER_ADDR")}
    base.update(env or {}, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "primus_runner", "nics", *args],
                          capture_output=True, text=True, env=base)


def test_cli_formats_on_a_fixture() -> None:
    root = str(FIX / "mi300x-roce")
    shell = _cli("--sysfs-root", root, "--format", "shell")
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout == (
        f"export NCCL_IB_HCA={EXPECTED['mi300x-roce'][0]}\nexport NCCL_IB_GID_INDEX=5\n"
        "export IP_INTERFACE=ens1f0\nexport NCCL_SOCKET_IFNAME=ens1f0\n"
        "export GLOO_SOCKET_IFNAME=ens1f0\n")
    assert _cli("--sysfs-root", root, "--get", "NCCL_IB_GID_INDEX").stdout == "5\n"
    via_env = _cli("--get", "IP_INTERFACE", env={"PRIMUS_SYSFS_ROOT": str(FIX / "ib-node"),
                                                 "MASTER_ADDR": "10.0.0.9"})
    assert via_env.stdout == "eno1\n"
    table = _cli("--sysfs-root", root, "--format", "table").stdout
    assert "skip bnxt_re8:1" in table and "GID index: 5 (detected)" in table
    assert '"nccl_ib_hca": "bnxt_re0:1,' in _cli("--sysfs-root", root, "--format", "json").stdout
    assert _cli("--sysfs-root", "/nonexistent/dir").returncode == 2


def test_runs_for_real_on_this_machine() -> None:
    real = _cli("--format", "json")
    assert real.returncode == 0, real.stderr
    result = detect_nics("/", {})
    assert result.interface is None or result.interface != "lo"
    assert result.gid_index >= 0


def _route(iface: str, dest: str, bits: int) -> Route:
    a, b, c, d = (int(x) for x in dest.split("."))
    mask = (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF
    return Route(iface, (a << 24) | (b << 16) | (c << 8) | d, mask, 0, 0)


def test_proc_tables_place_addresses_and_flag_a_shared_subnet(tmp_path: Path) -> None:
    from primus_runner.network import local_addresses_from_proc

    (tmp_path / "proc/net").mkdir(parents=True)
    (tmp_path / "proc/net/fib_trie").write_text(
        "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 10.1.0.5\n        /32 host LOCAL\n"
        "     |-- 10.2.0.7\n        /32 host LOCAL\n     |-- 127.0.0.1\n        /32 host LOCAL\n")
    routes = [_route("ens1", "10.1.0.0", 24), _route("ens2", "10.2.0.0", 16), _route("ens3", "10.2.0.0", 16)]
    ambiguous: list[str] = []
    found = local_addresses_from_proc(str(tmp_path), routes, ambiguous)
    assert found["ens1"] == ["10.1.0.5"] and found["lo"] == ["127.0.0.1"]
    assert ambiguous == ["10.2.0.7"]  # ens2 and ens3 share 10.2.0.0/16: psutil must decide


# -- the launch-failure trees ---------------------------------------------------
def _problems(machine: str, **env: str) -> list[tuple[str, str, str]]:
    from primus_runner.network.check import host_problems

    return [(p.severity, p.variable, p.message) for p in host_problems(env, str(FIX / machine))]


def test_two_nic_namings_are_each_detected() -> None:
    a = detect_nics(str(FIX / "eno1-gid3"), NO_USER, master_addr="10.0.0.11")
    b = detect_nics(str(FIX / "eth0-gid7"), NO_USER, master_addr="10.0.0.11")
    assert (a.as_env()["NCCL_SOCKET_IFNAME"], a.interface_reason) == ("eno1", "holds MASTER_ADDR 10.0.0.11")
    assert (b.as_env()["NCCL_SOCKET_IFNAME"], b.interface_reason) == ("eth0", "routes to MASTER_ADDR 10.0.0.11")


def test_container_gid_indexes_3_and_7_are_each_the_roce_v2_ipv4_gid() -> None:
    assert detect_nics(str(FIX / "eno1-gid3"), NO_USER).as_env()["NCCL_IB_GID_INDEX"] == "3"
    assert detect_nics(str(FIX / "eth0-gid7"), NO_USER).as_env()["NCCL_IB_GID_INDEX"] == "7"


def test_macvlan_container_gets_its_own_gid_not_the_neighbours() -> None:
    """roce-macvlan: the shared GID table lists the neighbour's RoCE v2 IPv4 GID
    (172.16.0.12) at 3, before this container's (172.16.0.13, on eth1) at 5."""
    result = detect_nics(str(FIX / "roce-macvlan"), NO_USER)
    assert result.as_env()["NCCL_IB_GID_INDEX"] == "5"
    port = result.ports[0]
    assert port.roce_v2_ipv4_gids == [5]
    assert [g.index for g in port.gids if g.foreign] == [2, 3]
    # A user index pointing at the neighbour's GID is an error naming the fix.
    found = _problems("roce-macvlan", NCCL_IB_GID_INDEX="3")
    assert [(sev, var) for sev, var, _ in found] == [("error", "NCCL_IB_GID_INDEX")]
    assert "RoCE v2 IPv4 of another netdev (172.16.0.12)" in found[0][2]
    assert _problems("roce-macvlan", NCCL_IB_GID_INDEX="5") == []


def test_bond_with_vlan_children_is_emitted_exact_and_gloo_gets_the_plain_name() -> None:
    env = detect_nics(str(FIX / "bond-vlan"), NO_USER, master_addr="10.20.0.1").as_env()
    assert (env["IP_INTERFACE"], env["NCCL_SOCKET_IFNAME"], env["GLOO_SOCKET_IFNAME"]) == (
        "bond0", "=bond0", "bond0")
    # the child itself has no longer sibling but bond0.2093.1: exact too
    env = detect_nics(str(FIX / "bond-vlan"), NO_USER, master_addr="10.93.0.5").as_env()
    assert env["NCCL_SOCKET_IFNAME"] == "=bond0.2093"


def test_user_exclusion_list_is_never_copied_into_gloo() -> None:
    env = detect_nics(str(FIX / "bond-vlan"), {"NCCL_SOCKET_IFNAME": "^docker0"},
                      master_addr="10.20.0.1").as_env()
    assert "NCCL_SOCKET_IFNAME" not in env
    assert env["GLOO_SOCKET_IFNAME"] == "bond0"


def test_gloo_with_nccl_syntax_is_an_error() -> None:
    assert _problems("bond-vlan", GLOO_SOCKET_IFNAME="^docker0") == [
        ("error", "GLOO_SOCKET_IFNAME", "uses NCCL's ^/= syntax, which Gloo does not parse (it "
         "takes plain interface names, comma-separated); the job dies at start-up")]


def test_exclusion_list_leaving_only_loopback_is_an_error() -> None:
    found = _problems("no-accel", NCCL_SOCKET_IFNAME="^eth,virbr")
    assert [(s, v) for s, v, _ in found] == [("error", "NCCL_SOCKET_IFNAME")]
    assert found[0][2].startswith("leaves only loopback on this host (interfaces: eth0, lo, virbr0)")


def test_socket_ifname_naming_nothing_here_is_an_error() -> None:
    found = _problems("eno1-gid3", NCCL_SOCKET_IFNAME="eth0")
    assert found == [("error", "NCCL_SOCKET_IFNAME", "names no interface of this host for eth0 "
                      "(NCCL matches name prefixes; interfaces here: eno1, ens1np0, lo)")]
    assert _problems("eno1-gid3", NCCL_SOCKET_IFNAME="=eno1") == []
    # detected values (named in PRIMUS_DETECTED_VARS) are not re-checked
    assert _problems("eno1-gid3", NCCL_SOCKET_IFNAME="eth0",
                     PRIMUS_DETECTED_VARS="NCCL_SOCKET_IFNAME") == []


def test_equal_cost_duplicate_routes_choose_by_name_and_warn_naming_both() -> None:
    result = detect_nics(str(FIX / "dup-routes"), NO_USER, master_addr="10.0.0.1")
    assert (result.interface, result.interface_reason) == ("eth0", "routes to MASTER_ADDR 10.0.0.1")
    assert any(n.startswith("equal-cost routes to MASTER_ADDR 10.0.0.1 (subnet 10.0.0.0/24, "
                            "metric 0) on eth0 and eth1") and "using eth0" in n for n in result.notes)


def test_mixed_mlx5_bnxt_uses_per_port_selection() -> None:
    result = detect_nics(str(FIX / "mixed-mlx5-bnxt"), NO_USER)
    assert {p.name: p.gid_index for p in result.chosen_ports()} == {
        "bnxt_re0:1": 5, "bnxt_re1:1": 5, "mlx5_0:1": 3, "mlx5_1:1": 3}
    env = result.as_env()
    assert (env["NCCL_IB_GID_INDEX"], env["NCCL_IB_ADDR_FAMILY"], env["NCCL_IB_ROCE_VERSION_NUM"]) == (
        "-1", "AF_INET", "2")
    assert any("bnxt_re0:1=5" in n and "mlx5_0:1=3" in n for n in result.notes)
    # a user index 3 is the IPv6 GID on the bnxt ports: a warning naming them
    found = _problems("mixed-mlx5-bnxt", NCCL_IB_GID_INDEX="3")
    assert [(s, v) for s, v, _ in found] == [("warning", "NCCL_IB_GID_INDEX")]
    assert "bnxt_re0:1: RoCE v2 IPv6" in found[0][2]


def test_link_local_only_port_is_dropped_saying_why() -> None:
    result = detect_nics(str(FIX / "roce-linklocal"), NO_USER)
    assert result.nccl_ib_hca == "mlx5_0:1"
    dropped = next(p for p in result.ports if p.name == "mlx5_1:1")
    assert dropped.reason == ("RoCE port with only link-local fe80:: GIDs (no IPv4 or global "
                              "IPv6 address on its netdev)")
    assert any(n.startswith("RDMA port mlx5_1:1 left out of NCCL_IB_HCA") for n in result.notes)


def test_user_gid_index_on_a_link_local_or_absent_gid_is_an_error_with_the_fix() -> None:
    found = _problems("roce-linklocal", NCCL_IB_GID_INDEX="1")
    assert found == [("error", "NCCL_IB_GID_INDEX", "points at no routable GID on this host's RoCE "
                      "ports (mlx5_0:1: RoCE v2 link-local): the queue pairs cannot connect across nodes")]
    from primus_runner.network.check import host_problems

    absent = host_problems({"NCCL_IB_GID_INDEX": "6"}, str(FIX / "roce-linklocal"))
    assert absent[0].message.startswith("points at no routable GID") and "mlx5_0:1: absent" in absent[0].message
    assert absent[0].fix == "export NCCL_IB_GID_INDEX=3 (the RoCE v2 IPv4 GID here)"
    assert _problems("roce-linklocal", NCCL_IB_GID_INDEX="3") == []


@pytest.mark.parametrize("value, bad", [
    ("mlx5_7", "mlx5_7"), ("mlx5_0:2", "mlx5_0:2"), ("=mlx5", "mlx5"), ("^mlx5_9", "mlx5_9"),
])
def test_user_hca_naming_nothing_here_is_an_error(value: str, bad: str) -> None:
    found = _problems("roce-linklocal", NCCL_IB_HCA=value)
    assert [(s, v) for s, v, _ in found] == [("error", "NCCL_IB_HCA")]
    assert found[0][2].startswith(f"names {bad}, which matches no RDMA device/port of this host")


def test_user_hca_values_that_exist_pass() -> None:
    for value in ("mlx5_0:1", "mlx5", "=mlx5_0,mlx5_1", "^=mlx5_1", "mlx5_0"):
        assert _problems("roce-linklocal", NCCL_IB_HCA=value) == [], value
    assert [(s, v) for s, v, _ in _problems("roce-linklocal", NCCL_IB_HCA="^mlx5")] == [
        ("error", "NCCL_IB_HCA")]     # excludes everything
