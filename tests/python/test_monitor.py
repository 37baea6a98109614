"""The run monitor's pure parts: /proc parsing, the verdicts, the straggler scores,
and its command line (python/primus_runner/monitor/)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from primus_runner.diagnose.summary import RankPlace
from primus_runner.monitor import straggler, verdicts
from primus_runner.monitor.cli import settings
from primus_runner.procstat import Sample, parse_io, parse_stat, parse_switches, read_sample

STAT = ("4242 (python3 (a) b) S 1 4242 4242 0 -1 4194560 1000 0 0 0 "
        "150 25 0 0 20 0 1 0 100 1000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0")


def test_parse_stat_counts_fields_after_the_last_parenthesis() -> None:
    assert parse_stat(STAT) == ("S", 175)


def test_parse_switches_and_io() -> None:
    status = "Name:\tx\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n"
    assert parse_switches(status) == 127
    assert parse_io("rchar: 100\nwchar: 23\nsyscr: 1\n") == 123
    assert parse_io("syscr: 1\n") == -1


def test_read_sample_of_a_sleeping_process_and_a_gone_one() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sample = None
        for _ in range(100):
            sample = read_sample(proc.pid)
            if sample is not None and sample.wchan:
                break
            time.sleep(0.05)
        assert sample is not None and sample.state == "S"
        assert "nanosleep" in sample.wchan and not sample.waiting
        os.kill(proc.pid, 19)  # SIGSTOP
        for _ in range(100):
            sample = read_sample(proc.pid)
            if sample is not None and sample.stopped:
                break
            time.sleep(0.05)
        assert sample is not None and sample.stopped
    finally:
        proc.kill()
        proc.wait()
    assert read_sample(proc.pid) is None


def _fake_proc(root: Path, pid: int, state: str, ticks: int, switches: int, io: int) -> None:
    task = root / str(pid) / "task" / str(pid)
    task.mkdir(parents=True, exist_ok=True)
    fields = [state] + ["0"] * 10 + [str(ticks), "0"] + ["0"] * 20
    (task / "stat").write_text(f"{pid} (py (x)) " + " ".join(fields) + "\n")
    (task / "status").write_text(f"voluntary_ctxt_switches:\t{switches}\nnonvoluntary_ctxt_switches:\t0\n")
    (task / "wchan").write_text("futex_wait_queue")
    (root / str(pid) / "io").write_text(f"rchar: {io}\nwchar: 0\n")


def test_read_sample_skips_the_counters_when_cpu_moved(tmp_path: Path) -> None:
    _fake_proc(tmp_path, 7, "S", 10, 5, 100)
    full = read_sample(7, str(tmp_path))
    assert full == Sample("S", 10, 5, 100, "futex_wait_queue")
    # CPU moved since LAST: the rank moved; switches and I/O are not read.
    _fake_proc(tmp_path, 7, "R", 12, 9, 200)
    cheap = read_sample(7, str(tmp_path), last=full)
    assert cheap == Sample("R", 12, -1, -1, "") and cheap.moved_since(full)
    # CPU still: everything is read; a counter the sample before did not read does not count.
    _fake_proc(tmp_path, 7, "S", 12, 9, 200)
    after = read_sample(7, str(tmp_path), last=cheap)
    assert after == Sample("S", 12, 9, 200, "futex_wait_queue") and not after.moved_since(cheap)
    _fake_proc(tmp_path, 7, "S", 12, 10, 200)
    assert read_sample(7, str(tmp_path), last=after).moved_since(after)  # type: ignore[union-attr]


def test_sample_moves_and_waits() -> None:
    a = Sample("S", 10, 5, 100, "futex_wait_queue")
    assert a.waiting
    assert not a.moved_since(Sample("S", 10, 5, 100, "futex_wait_queue"))
    assert a.moved_since(Sample("S", 10, 6, 100, ""))
    assert a.moved_since(Sample("S", 11, 5, 100, ""))
    assert a.moved_since(Sample("S", 10, 5, 99, ""))
    assert not a.moved_since(Sample("S", 10, 5, -1, ""))  # I/O unreadable: not a move
    assert not Sample("S", 0, 0, 0, "hrtimer_nanosleep").waiting
    assert not Sample("R", 0, 0, 0, "").waiting


def place(rank: int, where: str, callee: str = "", waiting: bool = False) -> RankPlace:
    return RankPlace(rank, 0, "h", where, callee, waiting)


AR = "all_reduce (torch/distributed/distributed_c10d.py:3252)"
BC = "broadcast (torch/distributed/distributed_c10d.py:3151)"


def view(rank: int, p: RankPlace | None, still: float = 20.0, settled: bool = True, **kw: object) -> verdicts.RankView:
    return verdicts.RankView(rank, 100 + rank, still, settled=settled, place=p,
                             op=verdicts.waits_op(p) if settled else "", **kw)  # type: ignore[arg-type]


def test_hang_names_the_rank_outside_the_collective() -> None:
    views = [view(0, place(0, "main (t.py:9)", AR, True)), view(1, place(1, "stuck_here (t.py:3)")),
             view(2, place(2, "main (t.py:9)", AR, True))]
    found = verdicts.settled_verdict(views)
    assert found is not None and found.kind == "hang" and found.suspects == (1,) and found.actionable
    assert "rank 1 (pid 101) in stuck_here (t.py:3)" in found.line
    assert "ranks 0,2 (pid 100, 102) wait for it in all_reduce at main (t.py:9)" in found.line


def test_mismatch_names_both_collectives() -> None:
    views = [view(0, place(0, "main (t.py:9)", AR, True)), view(1, place(1, "main (t.py:11)", BC, True))]
    found = verdicts.settled_verdict(views)
    assert found is not None and found.kind == "mismatch"
    assert "different collectives" in found.line
    assert "rank 0 (pid 100) in all_reduce at main (t.py:9)" in found.line
    assert "rank 1 (pid 101) in broadcast at main (t.py:11)" in found.line


def test_one_collective_from_two_call_sites_is_a_mismatch() -> None:
    views = [view(0, place(0, "main (t.py:9)", AR, True)), view(1, place(1, "main (t.py:20)", AR, True))]
    found = verdicts.settled_verdict(views)
    assert found is not None and found.kind == "mismatch" and "all_reduce from different call sites" in found.line


def test_no_verdict_while_one_rank_is_unsettled_or_all_idle() -> None:
    waiting = view(0, place(0, "main (t.py:9)", AR, True))
    assert verdicts.settled_verdict([waiting, view(1, None, still=1.0, settled=False)]) is None
    idle = [view(0, place(0, "save (t.py:5)")), view(1, place(1, "save (t.py:5)"))]
    assert verdicts.settled_verdict(idle) is None


def test_all_waiting_in_one_collective_is_a_hang_on_one_node_and_only_a_report_on_several() -> None:
    views = [view(0, place(0, "main (t.py:9)", AR, True)), view(1, place(1, "main (t.py:9)", AR, True))]
    found = verdicts.settled_verdict(views)
    assert found is not None and found.kind == "hang" and found.suspects == () and found.actionable
    several = verdicts.settled_verdict(views, nnodes=2)
    assert several is not None and several.kind == "waiting" and not several.actionable
    assert "a rank on another node" in several.line


def test_stopped_verdict_and_when_stop_may_act() -> None:
    early = verdicts.stopped_verdict([view(3, None, settled=False, stopped_for=3.0)])
    assert early is not None and early.kind == "stopped" and not early.actionable
    assert "kill -CONT 103" in early.line
    assert verdicts.stopped_verdict([view(3, None, settled=False, stopped_for=1.0)]) is None
    late = verdicts.stopped_verdict([view(3, None, settled=False, stopped_for=verdicts.STOP_STOPPED_AFTER)])
    assert late is not None and late.actionable


def test_working_is_a_report_after_the_wait_and_never_actionable() -> None:
    waiting = view(0, place(0, "main (t.py:9)", AR, True), still=70.0)
    busy = view(1, None, still=0.5, settled=False)
    found = verdicts.working_verdict([waiting, busy], {1: place(1, "compute (m.py:40)")})
    assert found is not None and found.kind == "working" and not found.actionable
    assert "rank 1 (pid 101) busy in compute (m.py:40)" in found.line
    young = view(0, place(0, "main (t.py:9)", AR, True), still=30.0)
    assert verdicts.working_verdict([young, busy], {}) is None


def test_straggler_scores_and_flagging() -> None:
    scores = straggler.scores({0: 0.33, 1: 0.35, 2: 0.30, 3: 0.0})
    assert scores[3] == pytest.approx(0.33) and scores[0] == 0.0
    assert straggler.scores({0: 0.05, 1: 0.0}) == {0: 0.0, 1: 0.0}  # the others hardly wait: no score
    history = [scores, scores]
    assert straggler.flagged(history) == []
    assert straggler.flagged([*history, scores]) == [3]
    assert straggler.flagged([*history, {0: 0.0, 1: 0.0, 2: 0.0, 3: 0.1}]) == []


def test_settings_refuse_bad_arguments() -> None:
    good = settings(["/w/run.log", "id", "1800", "stop", "42", "torchrun", "7"], {"NNODES": "2", "NODE_RANK": "1"})
    assert (good.nnodes, good.node, good.ranks_dir, good.timeout, good.grace) == (2, 1, "/w/run.ranks", 1800.0, 7)
    with pytest.raises(ValueError, match="GRACE \\('x'\\)"):
        settings(["/w/run.log", "id", "1800", "stop", "42", "torchrun", "x"], {})
    with pytest.raises(ValueError, match="ACTION 'kill'"):
        settings(["/w/run.log", "id", "1800", "kill", "42", "torchrun", "7"], {})
    with pytest.raises(ValueError, match="expected 7 arguments"):
        settings(["/w/run.log"], {})


def test_table_has_one_line_per_rank_with_its_state() -> None:
    views = [view(0, place(0, "main (t.py:9)", AR, True)), view(1, place(1, "stuck_here (t.py:3)"), still=14.0),
             verdicts.RankView(2, 0, exit_code=1), view(3, None, still=1.0, settled=False),
             view(4, None, settled=False, stopped_for=5.0)]
    lines = verdicts.table(views, 1, "n2")
    assert lines[0] == "  node 1 n2  rank 0  pid 100  waits in all_reduce 20 s  main (t.py:9)"
    assert lines[1] == "  node 1 n2  rank 1  pid 101  idle 14 s  stuck_here (t.py:3)"
    assert lines[2] == "  node 1 n2  rank 2  -  exited (code 1)"
    assert lines[3] == "  node 1 n2  rank 3  pid 103  progressing"
    assert lines[4] == "  node 1 n2  rank 4  pid 104  stopped 5 s"


def test_single_mode_log_lag_of_our_own_lines_is_not_rank_output(tmp_path: Path) -> None:
    """Run mode single: the rank's output is the launcher's log, where the monitor's
    own lines land too, late (through the launcher's log writer). The log's size less
    our bytes dips while they are in flight and comes back: no change of mark. Only
    growth past that is the rank's output."""
    from primus_runner.monitor import watch

    log = tmp_path / "launch.log"
    log.write_bytes(b"x" * 100)
    m = watch.Monitor(watch.Settings(log_file=str(log), run_id="r", timeout=0, action="report",
                                     launcher=1, mode="single", ranks_dir=str(tmp_path)))
    before = watch.OWN.written
    try:
        first = m._output_mark(0)
        watch.OWN.written += 40            # our 40 bytes are in the writer's pipe, not yet in the log
        assert m._output_mark(0) == first
        with log.open("ab") as handle:     # the writer gets to them
            handle.write(b"y" * 40)
        assert m._output_mark(0) == first
        with log.open("ab") as handle:     # the rank prints
            handle.write(b"z" * 5)
        assert m._output_mark(0) != first
    finally:
        watch.OWN.written = before
