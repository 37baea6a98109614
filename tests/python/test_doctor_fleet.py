"""The fleet doctor's comparison and ranking on recorded figures (python/primus_runner/doctor/fleet.py)."""
from __future__ import annotations

from typing import Any

from primus_runner.doctor import fleet
from primus_runner.doctor.probe import pairings, round_of


def _report(host: str, gbps: list[float] | None = None, **facts: str) -> dict[str, Any]:
    base = {"cpu vendor": "AuthenticAMD", "version torch": "2.13.0+cpu", "devices": "0"}
    base.update(facts)
    rep: dict[str, Any] = {"host": host, "facts": base, "uniform": {}, "checks": [
        {"name": "cpu", "status": "pass", "value": "x", "wanted": "y", "fix": ""}]}
    if gbps is not None:
        rep["probe"] = {"pairs": [{"round": i + 1, "peer": "p", "gbps": g, "latency_us": 50.0}
                                  for i, g in enumerate(gbps)]}
    return rep


# Recorded: 4 nodes of the live suite, node3 shaped to ~0.01 GB/s (slow in both rounds);
# its partners are slow in one round only.
RECORDED = [_report("node1", [1.9, 2.1]), _report("node2", [1.8, 0.011]),
            _report("node3", [0.012, 0.011]), _report("node4", [0.012, 2.0])]


def test_a_node_slow_in_both_rounds_is_the_bad_one() -> None:
    verdicts = fleet.rank(RECORDED)
    assert verdicts[0].host == "node3"
    assert [v.host for v in verdicts if v.bad] == ["node3"]
    assert verdicts[0].ratio is not None and verdicts[0].ratio < 0.1
    assert "0.012 GB/s" in verdicts[0].failed[0] and "fleet median" in verdicts[0].failed[0]
    assert fleet.exclude_line(verdicts) == "--exclude=node3"
    table = fleet.table(verdicts)
    assert table[0].split()[:2] == ["NODE", "STATUS"]
    assert table[1].startswith("node3") and "FAIL" in table[1]


def test_ties_fail_nobody() -> None:
    verdicts = fleet.rank([_report(f"n{i}", [1.0, 1.0]) for i in range(1, 5)])
    assert not any(v.bad for v in verdicts)
    assert [v.ratio for v in verdicts] == [1.0] * 4
    assert [v.host for v in verdicts] == ["n1", "n2", "n3", "n4"]      # host order among equals
    assert fleet.exclude_line(verdicts) is None


def test_one_node() -> None:
    verdicts = fleet.rank([_report("solo")])
    assert len(verdicts) == 1 and not verdicts[0].bad and verdicts[0].ratio is None
    assert fleet.exclude_line(verdicts) is None


def test_all_nodes_slow_only_an_absolute_floor_names_them() -> None:
    slow = [_report(f"n{i}", [0.01, 0.011]) for i in range(1, 5)]
    assert not any(v.bad for v in fleet.rank(slow))                     # relative: all alike
    verdicts = fleet.rank(slow, floor_gbps=300.0)
    assert all(v.bad for v in verdicts)
    assert "below the floor 300 GB/s" in verdicts[0].failed[0]
    assert fleet.exclude_line(verdicts) == "--exclude=n[1-4]"


def test_ratio_threshold_is_strictly_below() -> None:
    reps = [_report("a1", [1.0]), _report("a2", [1.0]), _report("a3", [0.8])]
    assert not any(v.bad for v in fleet.rank(reps, ratio=0.8))
    assert [v.host for v in fleet.rank(reps, ratio=0.81) if v.bad] == ["a3"]


def test_odd_one_out_is_named_against_the_majority() -> None:
    reps = [_report("node1"), _report("node2"), _report("node3", **{"cpu vendor": "GenuineIntel",
                                                                       "version torch": "2.5.1"}),
            _report("node4")]
    reps[1]["uniform"] = {"NCCL_ALGO": "Ring"}
    verdicts = fleet.rank(reps)
    bad = {v.host: v.failed for v in verdicts if v.bad}
    assert set(bad) == {"node2", "node3"}
    assert "differs: cpu vendor: GenuineIntel (majority: AuthenticAMD)" in bad["node3"]
    assert "differs: version torch: 2.5.1 (majority: 2.13.0+cpu)" in bad["node3"]
    assert "differs: NCCL_ALGO: Ring (majority: <unset>)" in bad["node2"]
    assert verdicts[0].host == "node3"                                  # two failures: worst
    assert fleet.exclude_line(verdicts) == "--exclude=node[2-3]"


def test_a_tie_between_values_keeps_the_first_node_side() -> None:
    reps = [_report("n1", devices="8"), _report("n2", devices="4")]
    bad = [v.host for v in fleet.rank(reps) if v.bad]
    assert bad == ["n2"]


def test_failed_checks_fail_the_node_and_secret_values_stay_masked() -> None:
    rep = _report("n2")
    rep["checks"].append({"name": "devices held", "status": "fail", "value": "pid 7 (python x)",
                          "wanted": "no holder", "fix": "kill 7"})
    other = _report("n1")
    other["uniform"] = {"HF_TOKEN": "sha256:abc"}
    verdicts = fleet.rank([other, rep])
    n2 = next(v for v in verdicts if v.host == "n2")
    assert "devices held: pid 7 (python x)" in n2.failed
    assert any("HF_TOKEN: <unset> (majority: ****)" in f for f in n2.failed)
    assert "abc" not in " ".join(fleet.table(verdicts))
    assert "abc" not in str(fleet.fleet_json([other, rep], verdicts, 0.8, None))


def test_pairings_two_rounds_and_odd_leftovers() -> None:
    assert pairings(1) == []
    assert pairings(4) == [[(0, 1), (2, 3)], [(0, 2), (1, 3)]]
    assert pairings(5) == [[(0, 1), (2, 3)], [(4, 0)], [(0, 2), (1, 3)], [(4, 0)]]
    assert [round_of(i, 5) for i in range(4)] == [1, 1, 2, 2]
    assert [round_of(i, 4) for i in range(2)] == [1, 2]
    for n in range(2, 9):                               # every node measured in both rounds
        steps = pairings(n)
        for node in range(n):
            rounds = {round_of(i, n) for i, step in enumerate(steps) for pair in step if node in pair}
            assert rounds == {1, 2}, (n, node)
