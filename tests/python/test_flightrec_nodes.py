"""Node 0's job-wide flight-recorder verdict (python/primus_runner/monitor/nodes.py):
every node's dumps, gathered beside node 0's log, analysed together by torch's own
analyzer (the .venv's torch 2.13).

The dumps in tests/fixtures/flightrec/nodes/ are real: 4 gloo ranks on CPU as 2 nodes
of 2 (ranks 0,1 | 2,3), each dumped by its dump thread (runner/helpers/pystartup)
when asked, written as TORCH_FR_DUMP_TEMP_FILE + global rank
(tests/fixtures/flightrec/nodes/make_dumps.py). hang: rank 3 asleep while ranks
0,1,2 wait in all_reduce; mismatch: rank 3 in broadcast while they wait in all_reduce.
Either node's dumps alone leave the analyzer undecided; together they name rank 3.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

from primus_runner.monitor import flightrec, nodes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flightrec" / "nodes"


def bundle_of(log_dir: Path, case: str, node: int, ranks: tuple[int, ...] = (), asked: tuple[int, ...] = (),
              done: bool = True) -> str:
    """Node NODE's hang bundle as its monitor leaves it: the dumps of RANKS (default: all
    the node's) copied in, its flight-recorder.json (ASKED: the ranks asked)."""
    bundle = log_dir / f"primus-job-node{node}.hang-1"
    (bundle / flightrec.BUNDLE_DIR).mkdir(parents=True, mode=0o700)
    mine = sorted(int(p.name.rsplit("-", 1)[1]) for p in (FIXTURES / case / f"node-{node}").iterdir())
    copied = list(ranks or mine)
    for rank in copied:
        shutil.copy(FIXTURES / case / f"node-{node}" / f"fr-rank-{rank}",
                    bundle / flightrec.BUNDLE_DIR / f"{flightrec.BUNDLE_PREFIX}{rank}")
    who = [flightrec.Asked(r, 0, f"/l/fr-rank-{r}", "thread", "") for r in (asked or mine)]
    flightrec.mark(str(bundle), who, copied if done else None)
    return str(bundle)


def test_the_fixtures_are_two_nodes_of_real_dumps() -> None:
    for case in ("hang", "mismatch"):
        assert sorted(p.name for p in (FIXTURES / case / "node-0").iterdir()) == ["fr-rank-0", "fr-rank-1"]
        assert sorted(p.name for p in (FIXTURES / case / "node-1").iterdir()) == ["fr-rank-2", "fr-rank-3"]


def test_a_hang_across_two_nodes_is_named_from_all_their_dumps(tmp_path: Path) -> None:
    node0, node1 = bundle_of(tmp_path, "hang", 0), bundle_of(tmp_path, "hang", 1)
    line = nodes.job_flight_recorder(2, {0: node0, 1: node1}, node0, sys.executable, wait_s=5)
    output = os.path.join(node0, nodes.JOB_OUTPUT)
    assert line == ("flight recorder, all nodes: torch's analyzer (fr_trace) on the dumps of rank(s) 0-3 from "
                    "node(s) 0,1: missing ranks 3: not all ranks joined the collective in gloo:all_reduce "
                    f"(collective sequence number 2); its output: {output}")
    assert stat.S_IMODE(os.stat(output).st_mode) == 0o600
    # The dumps are linked, not copied, and the links still resolve when the log directory moves.
    link = Path(node0) / nodes.JOB_DIR / "fr-rank-3"
    assert os.readlink(link) == f"../../primus-job-node1.hang-1/{flightrec.BUNDLE_DIR}/fr-rank-3"
    # One node's dumps alone: the analyzer cannot tell (what each node's own line says).
    text, code = flightrec.analyze(sys.executable, os.path.join(node0, flightrec.BUNDLE_DIR))
    assert flightrec.verdict_of(text, code).startswith("undecided: no dump from rank(s) 2,3")


def test_a_mismatch_across_two_nodes_names_the_culprit(tmp_path: Path) -> None:
    node0, node1 = bundle_of(tmp_path, "mismatch", 0), bundle_of(tmp_path, "mismatch", 1)
    line = nodes.job_flight_recorder(2, {0: node0, 1: node1}, node0, sys.executable, wait_s=5)
    assert ("from node(s) 0,1: COLLECTIVE_TYPE_MISMATCH: culprit rank 3 in gloo:all_reduce: Expected collective "
            "type: 'all_reduce' does not match found collective type: 'broadcast'; its output:") in line


def test_a_rank_without_its_dump_is_named_with_its_node(tmp_path: Path) -> None:
    node0 = bundle_of(tmp_path, "hang", 0)
    node1 = bundle_of(tmp_path, "hang", 1, ranks=(2,), asked=(2, 3))
    line = nodes.job_flight_recorder(2, {0: node0, 1: node1}, node0, sys.executable, wait_s=5)
    assert "on the dumps of rank(s) 0-2 from node(s) 0,1: undecided: no dump from rank(s) 3" in line
    assert "; no dump from rank(s) 3 (node 1); its output:" in line


def test_a_node_without_dumps_is_named_and_no_verdict_is_given(tmp_path: Path) -> None:
    node0 = bundle_of(tmp_path, "hang", 0)
    tail = ("; dumps found from node(s) 0 only; the analyzer needs every node's dumps (each node's own line "
            "judges its ranks alone)")
    # No bundle from node 1 at all (not on a shared filesystem).
    assert nodes.job_flight_recorder(2, {0: node0}, node0, "/nonexistent/python", wait_s=5) == (
        "flight recorder, all nodes: no job-wide verdict: no dumps from node(s) 1 (node 1: no bundle of this hang "
        "found beside node 0's log after 30 s (logs not on a shared filesystem?))" + tail)
    assert not os.path.exists(os.path.join(node0, nodes.JOB_OUTPUT))  # the analyzer was not run
    # Node 1's monitor asked, its dumps never came (its mark stays "not done"): waited for, then named.
    node1 = bundle_of(tmp_path, "hang", 1, ranks=(), asked=(2, 3), done=False)
    for name in os.listdir(os.path.join(node1, flightrec.BUNDLE_DIR)):
        os.unlink(os.path.join(node1, flightrec.BUNDLE_DIR, name))
    assert "(node 1: its dumps were not in its bundle 1 s after it was found)" in nodes.job_flight_recorder(
        2, {0: node0, 1: node1}, node0, "/nonexistent/python", wait_s=1)
    # Node 1 asked and got none: its ranks' reasons.
    flightrec.mark(node1, [flightrec.Asked(2, 0, "", "", "no dump pipe and no dump thread"),
                           flightrec.Asked(3, 0, "/l/fr-rank-3", "thread", "")], [])
    assert ("(node 1: no dump (rank 2: no dump pipe and no dump thread; rank 3: asked, no dump within 15 s))"
            in nodes.job_flight_recorder(2, {0: node0, 1: node1}, node0, "/nonexistent/python", wait_s=5))
    # Node 1's monitor took no dump at all (a verdict without the flight recorder).
    os.unlink(os.path.join(node1, flightrec.MARK_FILE))
    assert "(node 1: its monitor took no flight-recorder dump" in nodes.job_flight_recorder(
        2, {0: node0, 1: node1}, node0, "/nonexistent/python", wait_s=5)
    # Three nodes, two missing: both named.
    assert "no dumps from node(s) 1,2 (node 1: " in nodes.job_flight_recorder(
        3, {0: node0, 1: node1}, node0, "/nonexistent/python", wait_s=5)


def test_the_mark_is_written_before_the_dumps_and_again_after(tmp_path: Path) -> None:
    asked = [flightrec.Asked(2, 10, "/l/fr-rank-2", "thread", ""), flightrec.Asked(3, 11, "", "", "no dump file")]
    flightrec.mark(str(tmp_path), asked)
    assert nodes.read_mark(str(tmp_path)) == {"asked": [2, 3], "done": False, "copied": [], "problems": {}}
    flightrec.mark(str(tmp_path), asked, [2])
    assert nodes.read_mark(str(tmp_path)) == {"asked": [2, 3], "done": True, "copied": [2],
                                              "problems": {"3": "no dump file"}}
    assert stat.S_IMODE(os.stat(tmp_path / flightrec.MARK_FILE).st_mode) == 0o600
