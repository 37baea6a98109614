"""The launch's waterfall (monitor/phases.py): the marks the launcher hands over,
the spans, the lines, node 0's reading of the other nodes' records, and the
kernel's start time of a real process."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from primus_runner import runrecord
from primus_runner.monitor import phases


def test_marks_and_spans_chain_in_order() -> None:
    marks = phases.parse_marks("start=100.0 plan=100.5 layers=100,75 junk hooks=x verdict=102.0")
    assert marks == {"start": 100.0, "plan": 100.5, "layers": 100.75, "verdict": 102.0}
    marks.update(spawn=102.25, rendezvous=104.0, first_output=106.5)
    got = phases.spans(marks)
    assert [p for p, _, _ in got] == ["plan", "layers", "verdict", "spawn", "rendezvous", "first_output"]
    # hooks has no mark: verdict starts where layers ended.
    assert got[2] == ("verdict", 100.75, 102.0)
    assert phases.waterfall(got) == ("launch phases: plan 0.50s | layers 0.25s | verdict 1.25s | spawn 0.25s"
                                     " | rendezvous 1.75s | first output 2.50s")
    assert phases.spans({"plan": 1.0}) == []
    # A clock step backwards never gives a negative phase.
    assert phases.spans({"start": 10.0, "plan": 9.0}) == [("plan", 10.0, 10.0)]


def test_waterfall_names_what_never_came() -> None:
    line = phases.waterfall([("plan", 0.0, 0.1), ("spawn", 0.1, 0.3)], "first_output")
    assert line == "launch phases: plan 0.10s | spawn 0.20s | first output none yet"


def _phase(node: int, phase: str, seconds: float, job: str = "h:1", begun: float = 1000.0) -> dict[str, object]:
    return runrecord.make_event("phase", node, f"n{node}", begun + 50, phase=phase, start=begun,
                                end=begun + seconds, job=job, launch_start=begun)


def test_node_zero_names_the_slowest_node_per_phase_and_the_missing_ones() -> None:
    events = [_phase(1, "hooks", 5.5), _phase(1, "plan", 0.125), _phase(2, "hooks", 0.375), _phase(2, "plan", 0.25),
              _phase(1, "hooks", 9.0, job="other:2"),                # another job
              _phase(2, "hooks", 7.0, begun=1000.0 - 3600),           # an older launch of this job
              {"event": "phase", "t": 1.0, "node": "1"}]              # not a phase event of ours
    per = phases.durations(events, "h:1", 1001.0)
    assert per == {1: {"hooks": 5.5, "plan": 0.125}, 2: {"hooks": 0.375, "plan": 0.25}}
    line = phases.slowest_line({0: {"hooks": 0.5, "plan": 0.1875}, **per}, 4, 30.0)
    assert line == ("launch phases, slowest node of 4: plan node 2 0.25s (fastest 0.12s) | "
                    "hooks node 1 5.50s (fastest 0.38s); no record from node(s) 3 after 30 s "
                    "(logs not on a shared filesystem, or the node started late)")


def test_records_are_read_beside_the_log_and_the_own_one_skipped(tmp_path: Path) -> None:
    own = tmp_path / "primus-20261207T000000Z-node0.log"
    other = tmp_path / "primus-20261207T000001Z-node1.log"
    runrecord.append(str(own), "phase", phase="hooks", start=1.0, end=2.0, job="j", launch_start=1.0, node=0)
    runrecord.append(str(other), "phase", phase="hooks", start=1.0, end=6.0, job="j", launch_start=1.0, node=1)
    (tmp_path / "unrelated.txt").write_text("x")
    events = phases.read_others(str(tmp_path), runrecord.record_path(str(own)))
    assert [e["node"] for e in events] == [1]
    assert phases.durations(events, "j", 1.0) == {1: {"hooks": 5.0}}


def test_job_key() -> None:
    assert phases.job_key({"SLURM_JOB_ID": "42", "MASTER_ADDR": "a"}) == "slurm:42"
    assert phases.job_key({"MASTER_ADDR": "a", "MASTER_PORT": "9"}) == "a:9"


def test_started_at_is_the_kernels_start_of_a_real_process() -> None:
    before = time.time()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        at = phases.started_at(child.pid)
        assert at is not None
        # The kernel's clock ticks (10 ms) and /proc/uptime's (10 ms) bound the error.
        assert before - 0.05 <= at <= time.time() + 0.05
    finally:
        child.kill()
        child.wait()
    assert phases.started_at(child.pid) is None


def test_the_record_holds_one_phase_event_per_phase(tmp_path: Path) -> None:
    said: list[tuple[str, str]] = []
    log = str(tmp_path / "primus-x-node0.log")
    env = {"PRIMUS_LAUNCH_PHASES": "start=10 plan=10.5 layers=11 hooks=12 verdict=12.5", "MASTER_ADDR": "m",
           "MASTER_PORT": "7"}
    ph = phases.Phases(env, log, "run-x", 1, "single", "", 1, 0, lambda: 0.0, lambda lv, m: said.append((lv, m)))
    ph.marks["spawn"] = 13.0        # as the launcher's "phase spawn T" line gives it
    ph.tick(0.0)
    assert said == [("INFO", "launch phases: plan 0.50s | layers 0.50s | hooks 1.00s | verdict 0.50s | spawn 0.50s")]
    events = runrecord.read(runrecord.record_path(log))
    assert [(e["phase"], e["start"], e["end"], e["job"]) for e in events] == [
        ("plan", 10.0, 10.5, "m:7"), ("layers", 10.5, 11.0, "m:7"), ("hooks", 11.0, 12.0, "m:7"),
        ("verdict", 12.0, 12.5, "m:7"), ("spawn", 12.5, 13.0, "m:7")]
    # A restarted monitor of the same launch prints and writes nothing again.
    again = phases.Phases(env, log, "run-x", 1, "single", "", 1, 0, lambda: 0.0, lambda lv, m: said.append((lv, m)))
    again.finish()
    assert len(said) == 1
    assert json.loads(Path(runrecord.record_path(log)).read_text().splitlines()[0])["event"] == "phase"


def test_a_run_that_ended_first_is_recorded_without_a_line(tmp_path: Path) -> None:
    said: list[str] = []
    log = str(tmp_path / "primus-y-node0.log")
    env = {"PRIMUS_LAUNCH_PHASES": "start=10 plan=10.5 layers=11 hooks=12 verdict=12.5"}
    ph = phases.Phases(env, log, "run-y", 1, "torchrun", "", 1, 0, lambda: 0.0, lambda lv, m: said.append(m))
    ph.told(b"phase spawn 13.25")
    ph.told(b"phase nonsense 1")
    ph.told(b"done")
    ph.finish()
    assert said == []
    events = runrecord.read(runrecord.record_path(log))
    assert [(e["phase"], e["end"]) for e in events][-1] == ("spawn", 13.25)
    assert len(events) == 5
