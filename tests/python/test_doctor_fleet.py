"""The fleet doctor's comparison and ranking on recorded figures (python/primus_runner/doctor/fleet.py)."""
from __future__ import annotations

from typing import Any

from primus_runner.doctor import fleet, pairs
from primus_runner.doctor.probe import pairings, round_of


def _report(host: str, pairs: list[tuple[str, float]] | None = None, **facts: str) -> dict[str, Any]:
    """One node's report; ``pairs``: (peer, GB/s) in rounds 1, 2, 3... in order."""
    base = {"cpu vendor": "AuthenticAMD", "version torch": "2.13.0+cpu", "devices": "0"}
    base.update(facts)
    rep: dict[str, Any] = {"host": host, "facts": base, "uniform": {}, "checks": [
        {"name": "cpu", "status": "pass", "value": "x", "wanted": "y", "fix": ""}]}
    if pairs is not None:
        rep["probe"] = {"pairs": [{"round": i + 1, "peer": peer, "gbps": g, "latency_us": 50.0}
                                  for i, (peer, g) in enumerate(pairs)]}
    return rep


def _fleet(pairs: dict[tuple[str, str, int], float], hosts: list[str]) -> list[dict[str, Any]]:
    """Reports of ``hosts`` from one figure per (a, b, round), recorded at both ends."""
    reps = {h: _report(h, []) for h in hosts}
    for (a, b, rnd), gbps in pairs.items():
        for me, peer in ((a, b), (b, a)):
            reps[me]["probe"]["pairs"].append({"round": rnd, "peer": peer, "gbps": gbps, "latency_us": 50.0})
    return list(reps.values())


LIMITS = pairs.Limits()
NODES = ["node1", "node2", "node3", "node4"]
SURVEY = {("node1", "node2", 1): 1.9, ("node3", "node4", 1): 2.0,
          ("node1", "node3", 2): 2.1, ("node2", "node4", 2): 1.8}


def _survey(**slow: float) -> dict[tuple[str, str, int], float]:
    """The survey of 4 nodes with the pairs named a_b (e.g. node2_node4=0.01) slowed."""
    out = dict(SURVEY)
    for name, gbps in slow.items():
        a, b = name.split("_")
        key = next(k for k in out if k[:2] == (a, b))
        out[key] = gbps
    return out


def test_a_node_slow_in_every_pair_is_excluded_and_its_partners_are_not() -> None:
    # node3 slow with everyone (recorded on the live suite: shaped to ~0.01 GB/s).
    survey = _survey(node3_node4=0.012, node1_node3=0.011)
    assert pairs.rechecks(pairs.measured(_fleet(survey, NODES)), LIMITS) == [[("node1", "node3")],
                                                                             [("node3", "node4")]]
    rechecked = {**survey, ("node1", "node3", 3): 0.012, ("node3", "node4", 3): 0.011}
    assert pairs.confirmations(pairs.measured(_fleet(rechecked, NODES)), LIMITS) == [[("node3", "node2")]]
    reps = _fleet({**rechecked, ("node2", "node3", 4): 0.011}, NODES)
    verdicts = fleet.rank(reps)
    assert verdicts[0].host == "node3"
    assert [v.host for v in verdicts if v.bad] == ["node3"]
    assert not any(v.suspect for v in verdicts)                   # the partners' slow pairs: node3's
    assert verdicts[0].ratio is not None and verdicts[0].ratio < 0.1
    assert "slow in every pair: 0.012 GB/s with node4 (0.01x), 0.012 GB/s with node1" in verdicts[0].failed[0]
    assert fleet.exclude_line(verdicts) == "--exclude=node3"
    table = fleet.table(verdicts)
    assert table[0].split()[:2] == ["NODE", "STATUS"]
    assert table[1].startswith("node3") and "FAIL" in table[1]


def test_a_node_slow_with_some_partners_is_confirmed_against_a_node_known_to_be_good() -> None:
    # The live lab: tc shapes a node's traffic only where it listens, so node2 is fast with
    # node1 and slow with node4; node4 is slow with node2 only. Either may be the slow one.
    survey = _survey(node2_node4=0.03)
    assert pairs.rechecks(pairs.measured(_fleet(survey, NODES)), LIMITS) == [[("node2", "node4")]]
    rechecked = {**survey, ("node2", "node4", 3): 0.028}
    plan = pairs.confirmations(pairs.measured(_fleet(rechecked, NODES)), LIMITS)
    assert plan == [[("node2", "node3"), ("node4", "node1")]]     # each with a good node not met yet
    reps = _fleet({**rechecked, ("node2", "node3", 4): 0.02, ("node1", "node4", 4): 1.7}, NODES)
    verdicts = fleet.rank(reps)
    assert [v.host for v in verdicts if v.bad] == ["node2"]
    assert "slow with a node known to be good: 0.02 GB/s with node3" in verdicts[0].failed[0]
    assert not any(v.suspect for v in verdicts)
    assert fleet.exclude_line(verdicts) == "--exclude=node2"


def test_a_slow_confirmation_is_measured_again_before_it_excludes() -> None:
    # Recorded in the live lab at --ratio 0.8: node4's confirmation with node1 met a busy
    # moment (0.68x) and node4 was excluded beside node2. Round 5 measures it again.
    rechecked = {**_survey(node2_node4=0.03), ("node2", "node4", 3): 0.028}
    confirmed = {**rechecked, ("node2", "node3", 4): 0.02, ("node1", "node4", 4): 1.25}
    assert pairs.plan(pairs.measured(_fleet(confirmed, NODES)), LIMITS, pairs.CONFIRM_RECHECK_ROUND) == [
        [("node1", "node4"), ("node2", "node3")]]
    reps = _fleet({**confirmed, ("node1", "node4", 5): 1.9, ("node2", "node3", 5): 0.021}, NODES)
    verdicts = fleet.rank(reps)
    assert fleet.exclude_line(verdicts) == "--exclude=node2"
    assert not any(v.suspect for v in verdicts)
    # Slow twice, it is a confirmation.
    reps = _fleet({**confirmed, ("node1", "node4", 5): 1.2, ("node2", "node3", 5): 0.021}, NODES)
    assert fleet.exclude_line(fleet.rank(reps)) == "--exclude=node[2,4]"


def test_a_slow_pair_the_recheck_finds_fast_is_noise() -> None:
    survey = _survey(node3_node4=0.5)                             # a busy moment
    assert pairs.rechecks(pairs.measured(_fleet(survey, NODES)), LIMITS) == [[("node3", "node4")]]
    reps = _fleet({**survey, ("node3", "node4", 3): 2.0}, NODES)
    assert pairs.confirmations(pairs.measured(reps), LIMITS) == []
    verdicts = fleet.rank(reps)
    assert not any(v.bad or v.suspect for v in verdicts)


def test_one_slow_pair_that_no_confirmation_repeats_excludes_nobody() -> None:
    rechecked = {**_survey(node3_node4=0.5), ("node3", "node4", 3): 0.45}
    assert pairs.confirmations(pairs.measured(_fleet(rechecked, NODES)), LIMITS) == [
        [("node3", "node2"), ("node4", "node1")]]
    reps = _fleet({**rechecked, ("node2", "node3", 4): 2.0, ("node1", "node4", 4): 1.9}, NODES)
    verdicts = fleet.rank(reps)
    assert not any(v.bad for v in verdicts)
    assert fleet.exclude_line(verdicts) is None
    assert sorted(v.host for v in verdicts if v.suspect) == ["node3", "node4"]
    assert "not confirmed against a node known to be good" in verdicts[0].suspect[0]
    assert "suspect" in fleet.table(verdicts)[1]


def test_two_nodes_a_slow_pair_names_both_suspects_and_excludes_none() -> None:
    reps = _fleet({("n1", "n2", 1): 0.01, ("n1", "n2", 2): 0.012}, ["n1", "n2"])
    verdicts = fleet.rank(reps)                         # one link: it is its own reference
    assert not any(v.bad or v.suspect for v in verdicts)
    # Below an absolute floor, either end may be the slow one: both named, none excluded.
    limits = pairs.Limits(0.8, 1.0)
    assert pairs.confirmations(pairs.measured(reps), limits) == []
    verdicts = fleet.rank(reps, floor_gbps=1.0)
    assert not any(v.bad for v in verdicts)
    assert fleet.exclude_line(verdicts) is None
    assert [v.host for v in verdicts if v.suspect] == ["n1", "n2"]
    assert "with two nodes a slow pair cannot say which end is slow" in verdicts[0].suspect[0]


def test_two_nodes_a_node_local_failure_takes_the_blame() -> None:
    reps = _fleet({("n1", "n2", 1): 0.01, ("n1", "n2", 2): 0.012}, ["n1", "n2"])
    reps[1]["checks"].append({"name": "rdma ports", "status": "fail", "value": "mlx5_0/1 DOWN",
                              "wanted": "ACTIVE", "fix": "reseat"})
    verdicts = fleet.rank(reps, floor_gbps=1.0)
    assert [v.host for v in verdicts if v.bad] == ["n2"]
    assert not any(v.suspect for v in verdicts)         # n1's slow pair is n2's


def test_ties_fail_nobody() -> None:
    verdicts = fleet.rank(_fleet(dict.fromkeys(SURVEY, 1.0), NODES))
    assert not any(v.bad or v.suspect for v in verdicts)
    assert [v.ratio for v in verdicts] == [1.0] * 4
    assert [v.host for v in verdicts] == NODES                          # host order among equals
    assert fleet.exclude_line(verdicts) is None


def test_one_node() -> None:
    verdicts = fleet.rank([_report("solo")])
    assert len(verdicts) == 1 and not verdicts[0].bad and verdicts[0].ratio is None
    assert fleet.exclude_line(verdicts) is None


def test_all_nodes_slow_only_an_absolute_floor_names_them() -> None:
    slow = _fleet(dict.fromkeys(SURVEY, 0.01), NODES)
    assert not any(v.bad for v in fleet.rank(slow))                     # relative: all alike
    verdicts = fleet.rank(slow, floor_gbps=300.0)
    assert all(v.bad for v in verdicts)
    assert "floor 300 GB/s" in verdicts[0].failed[0]
    assert fleet.exclude_line(verdicts) == "--exclude=node[1-4]"


def test_ratio_threshold_is_strictly_below() -> None:
    reps = _fleet({**dict.fromkeys(SURVEY, 1.0), ("node2", "node4", 2): 0.8}, NODES)
    assert not any(v.bad or v.suspect for v in fleet.rank(reps, ratio=0.8))
    assert sorted(v.host for v in fleet.rank(reps, ratio=0.81) if v.suspect) == ["node2", "node4"]


def test_both_ends_of_a_pair_give_one_figure() -> None:
    reps = _fleet(SURVEY, NODES)
    reps[0]["probe"]["pairs"][0]["gbps"] = 0.5          # node1's own timing of node1-node2, disturbed
    measured = pairs.measured(reps)
    assert len(measured) == 4
    assert next(p for p in measured if (p.a, p.b) == ("node1", "node2")).gbps == 1.9


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


def test_hostile_input_a_huge_line_is_skipped_unread_and_a_bad_json_path_is_refused_first(tmp_path):
    """`doctor fleet FILE` given a file with a line of 3 MiB before a real report: the line is
    skipped (never held whole) and the report is still read; `--json` naming a path whose
    directory is missing (a space and a newline in it) is refused before any check, quoted."""
    from primus_runner.doctor import cli

    good = cli.report_lines({"host": "node1", "node_rank": 0, "checks": []})
    path = tmp_path / "reports.txt"
    path.write_text("x" * (3 << 20) + "\n" + "\n".join(good) + "\n", encoding="utf-8")
    assert [r["host"] for r in cli.read_reports(str(path))] == ["node1"]
    problem = cli.json_target_problem(str(tmp_path / "a b\nc" / "x.json"))
    assert "its directory does not exist" in problem and "\\n" in problem and "\n" not in problem
    assert cli.json_target_problem(str(tmp_path)).endswith("is a directory; accepted: a file path")
    assert cli.json_target_problem(str(tmp_path / "out.json")) == ""
    assert cli.node_main(["--json", str(tmp_path / "missing" / "x.json")]) == cli.EXIT_USAGE
