"""A run's stop, decided in Python (monitor/supervise.py, monitor/members.py): the
texts, the run's processes read from /proc, and the three actions on real
processes: a notice forwarded to a rank, a stop whose deaf rank is SIGKILLed
after the grace, and what a run left when its own process ended."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from primus_runner import procstat
from primus_runner.monitor import members, supervise

ROOT = Path(__file__).resolve().parents[2]
UNKNOWN = "sender: unknown (a shell cannot read a signal's sender)"
READY = "import signal, sys, time\n{setup}\nprint('ready', flush=True)\ntime.sleep(120)\n"


def test_texts() -> None:
    assert supervise.signal_name(15) == "TERM" and supervise.signal_name(1) == "HUP"
    assert supervise.signal_name(99) == "99"
    assert supervise.running_text([]) == "no rank still running"
    assert supervise.running_text([3]) == "rank 3 still running"
    assert supervise.running_text([0, 1, 2]) == "ranks 0, 1, 2 still running"
    assert supervise.closing_line("TERM", "sender: x", "rank 0 still running", 5, 8, "", 143, "/l/a.log") == (
        "stop: SIGTERM, sender: x; rank 0 still running at the stop; 5 process(es) stopped within the 8 s "
        "grace, none killed; exit status 143; log: /l/a.log.")
    assert supervise.closing_line("INT", "s", "no rank still running", 2, 1, "7(python3)", 130, "") == (
        "stop: SIGINT, s; no rank still running at the stop; 2 process(es) stopped, killed after the 1 s "
        "grace: 7(python3); exit status 130.")
    assert supervise.run_process_text("single", 5) == "the workload (pid 5)"
    assert supervise.run_process_text("torchrun", 5) == "torchrun (pid 5, in spawn.py)"


def test_parse_parent_reads_a_name_with_parentheses() -> None:
    assert procstat.parse_parent("12 (a) (b) c) S 7 12 12 0 -1") == ("a) (b) c", 7)


def test_descendants_breadth_first() -> None:
    table = {2: (1, "a"), 3: (2, "b"), 4: (2, "c"), 5: (3, "d"), 9: (1, "x")}
    assert members.descendants(2, table) == [3, 4, 5]
    assert members.descendants(5, table) == []


def _start(code: str, env_run: str = "", new_session: bool = False) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.pop("PRIMUS_RUN_ID", None)
    if env_run:
        env["PRIMUS_RUN_ID"] = env_run
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            start_new_session=new_session)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"  # its signal dispositions are set
    return proc


def _supervise(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), PRIMUS_LOG_TIMESTAMP="0", PRIMUS_LOG_COLOR="0")
    return subprocess.run([sys.executable, "-m", "primus_runner", "supervise", *args], env=env,
                          capture_output=True, text=True, timeout=60, check=True)


def _end(*procs: subprocess.Popen[bytes]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


def test_members_are_the_marked_processes_and_the_roots_descendants() -> None:
    run_id = f"members-{uuid.uuid4().hex}"
    marked = _start(READY.format(setup=""), env_run=run_id)
    root = _start("import subprocess, sys, time\nchild = subprocess.Popen([sys.executable, '-c', "
                  "'import time; time.sleep(120)'])\nprint('ready', child.pid, sep='\\n', flush=True)\n"
                  "time.sleep(120)\n")
    other = _start(READY.format(setup=""), env_run=run_id + "-other")
    assert root.stdout is not None
    grandchild = int(root.stdout.readline())
    try:
        found = members.members(run_id, root.pid)
        assert sorted(found) == sorted([marked.pid, root.pid, grandchild])
        assert other.pid not in found and os.getpid() not in found
        assert members.members(run_id) == [marked.pid]
        gone = subprocess.Popen(["true"])
        gone.wait()
        assert members.describe([gone.pid]) == f"{gone.pid}(?)"
        assert members.describe([marked.pid]).startswith(f"{marked.pid}(python")
    finally:
        os.kill(grandchild, signal.SIGKILL)
        _end(marked, root, other)


def _wrapper(rc_dir: Path, rank: int, code: str) -> tuple[subprocess.Popen[bytes], int]:
    """A stand-in for run_worker.sh: a process whose child is the rank; noted in worker.<RANK>."""
    wrapper = _start("import subprocess, sys, time\nchild = subprocess.Popen([sys.executable, '-c', "
                     f"{code!r}], stdout=subprocess.PIPE)\nassert child.stdout.readline() == b'ready\\n'\n"
                     "print('ready', child.pid, sep='\\n', flush=True)\nchild.wait()\n")
    assert wrapper.stdout is not None
    rank_pid = int(wrapper.stdout.readline())
    (rc_dir / f"worker.{rank}").write_text(f"{wrapper.pid}\n")
    return wrapper, rank_pid


def test_ranks_of_a_torchrun_run_are_the_wrappers_children(tmp_path: Path) -> None:
    first, rank0 = _wrapper(tmp_path, 0, READY.format(setup=""))
    second, rank1 = _wrapper(tmp_path, 1, READY.format(setup=""))
    try:
        assert members.rank_pids("torchrun", 0, str(tmp_path)) == sorted([rank0, rank1])
        assert members.running_ranks("torchrun", 0, str(tmp_path), 0) == [0, 1]
        (tmp_path / "failed-1").write_text("1")  # rank 1 ended
        assert members.running_ranks("torchrun", 0, str(tmp_path), 0) == [0]
        assert members.rank_pids("single", rank0, "", ) == [rank0]
        assert members.running_ranks("single", rank0, "", 7) == [7]
    finally:
        os.kill(rank0, signal.SIGKILL)
        os.kill(rank1, signal.SIGKILL)
        _end(first, second)
    assert members.rank_pids("torchrun", 0, str(tmp_path)) == []
    assert members.running_ranks("single", rank0, "", 7) == []


def test_notice_reaches_every_rank_once(tmp_path: Path) -> None:
    code = READY.format(setup=f"signal.signal(signal.SIGUSR1, lambda *_: open({str(tmp_path)!r} + "
                              "'/got.' + str(__import__('os').getpid()), 'a').write('USR1\\n'))")
    first, rank0 = _wrapper(tmp_path, 0, code)
    second, rank1 = _wrapper(tmp_path, 1, code)
    try:
        done = _supervise("notice", "USR1", "--nproc", "2", "--mode", "torchrun",
                          "--run-pid", str(os.getpid()), "--rc-dir", str(tmp_path))
        assert f"[INFO] SIGUSR1 ({UNKNOWN}): forwarded once to 2 of 2 local rank process(es): " in done.stderr
        assert done.stderr.rstrip().endswith("; the launcher keeps waiting.")
        for pid in (rank0, rank1):
            path = tmp_path / f"got.{pid}"
            for _ in range(200):
                if path.exists() and path.read_text() == "USR1\n":
                    break
                time.sleep(0.05)
            assert path.read_text() == "USR1\n"
    finally:
        os.kill(rank0, signal.SIGKILL)
        os.kill(rank1, signal.SIGKILL)
        _end(first, second)


def test_stop_kills_a_deaf_rank_after_the_grace_and_returns_the_code(tmp_path: Path) -> None:
    run_id = f"stop-{uuid.uuid4().hex}"
    deaf = _start(READY.format(setup="signal.signal(signal.SIGTERM, signal.SIG_IGN)"), env_run=run_id,
                  new_session=True)
    signals = tmp_path / "signals"
    signals.mkdir()
    try:
        done = _supervise("stop", "15", "--rank", "4",
                          "--log", "/logs/x.log", "--signal-dir", str(signals), "--grace", "1",
                          "--mode", "single", "--run-pid", str(deaf.pid), "--run-id", run_id,
                          "--rc-dir", str(tmp_path))
        assert deaf.wait(timeout=10) == -signal.SIGKILL
    finally:
        _end(deaf)
    code, text = done.stdout.splitlines()
    assert code == "143"
    assert text.startswith(f"stop: SIGTERM, {UNKNOWN}; rank 4 still running at the stop; 1 process(es) "
                           f"stopped, killed after the 1 s grace: {deaf.pid}(python")
    assert text.endswith("; exit status 143; log: /logs/x.log.")
    assert (signals / "closing").read_text() == text + "\n"
    assert f"[WARN] SIGTERM received ({UNKNOWN}): stopping the run (1 process(es)), SIGKILL after 1 s." \
        in done.stderr


def test_stop_after_a_verdict_and_a_step_wide_signal_sends_nothing(tmp_path: Path) -> None:
    run_id = f"stop-{uuid.uuid4().hex}"
    (tmp_path / "hang-stop").touch()
    rank = _start(READY.format(setup=""), env_run=run_id, new_session=True)
    try:
        # origin step: Slurm already signalled every process; the rank ends on it
        # here (the test's own SIGTERM), nothing else is sent.
        at = time.time_ns() // 1000
        signals = tmp_path / "signals"
        signals.mkdir()
        (signals / "entry.TERM").write_text(f"{at + 20_000}\n")  # the entry got it 20 ms later
        rank.terminate()
        done = _supervise("stop", "15", "--at", str(at), "--signal-dir", str(signals), "--window-ms", "1000",
                          "--grace", "5", "--mode", "single", "--run-pid", str(rank.pid), "--run-id", run_id,
                          "--rc-dir", str(tmp_path))
    finally:
        _end(rank)
    code, text = done.stdout.splitlines()
    assert code == "86"
    assert text.startswith("stop: SIGTERM, sender: Slurm (delivered to every process of the step); ")
    assert " within the 5 s grace, none killed; exit status 86." in text


def test_end_stops_what_a_run_left_and_says_it_was_lost(tmp_path: Path) -> None:
    run_id = f"orphans-{uuid.uuid4().hex}"
    left = _start(READY.format(setup=""), env_run=run_id)
    log = tmp_path / "run.log"
    (tmp_path / "torchrun.log").write_text("agent: Sending process 7 closing signal SIGTERM\n")
    try:
        done = _supervise("end", "137", "--grace", "5", "--log", str(log), "--requeue-code", "75",
                          "--mode", "torchrun", "--run-pid", "999999", "--run-id", run_id, "--rc-dir", str(tmp_path))
        assert left.wait(timeout=10) == -signal.SIGTERM
    finally:
        _end(left)
    assert done.stdout == "137\n"
    assert (f"[ERROR] torchrun (pid 999999, in spawn.py) ended with exit code 137 (killed by SIGKILL) while 1 "
            f"process(es) of the run still ran: {left.pid}(python") in done.stderr
    assert done.stderr.rstrip().endswith(
        "[ERROR] the run was lost with torchrun (pid 999999, in spawn.py), not by a rank: exit code 137")
    assert "killed after the" not in done.stderr and "failure report" not in done.stderr
    # torchrun's own lines are in the log, once.
    assert log.read_text() == ("----- torchrun's own log lines (not shown on the console) -----\n"
                               "agent: Sending process 7 closing signal SIGTERM\n"
                               "----- end of torchrun's log lines -----\n")
    assert (tmp_path / "torchrun.log").read_text() == ""


def test_end_of_a_clean_run_a_requeue_and_a_failure(tmp_path: Path) -> None:
    common = ("--log", "/logs/x.log", "--requeue-code", "75", "--run-pid", "999999", "--run-id",
              f"gone-{uuid.uuid4().hex}", "--rc-dir", str(tmp_path))
    done = _supervise("end", "0", "--mode", "torchrun", *common)
    assert done.stdout == "0\n"
    drawn = "; drawn by: primus-cli report /logs/x.log\n"
    assert done.stderr.endswith("[INFO] workload finished successfully; log: /logs/x.log" + drawn)
    lost = _supervise("end", "0", "--spool-lost", "--mode", "torchrun", *common)
    assert "[WARN] workload finished successfully (exit code 0), but the log lacks some" in lost.stderr
    requeue = _supervise("end", "75", "--mode", "single", *common)
    assert requeue.stdout == "75\n"
    assert requeue.stderr.endswith("[WARN] workload exited with the requeue code 75 (PRIMUS_REQUEUE_EXIT_CODE); "
                                   "log: /logs/x.log" + drawn)
    assert "failure report" not in requeue.stderr
    failed = _supervise("end", "3", "--mode", "torchrun", *common)
    assert failed.stdout == "3\n"
    assert "[ERROR] failure report: torchrun failed with exit code 3 before any rank of this node failed" \
        in failed.stderr
    assert failed.stderr.endswith("[ERROR] workload failed with exit code 3; log: /logs/x.log" + drawn)


def test_container_guard_reads_the_launchers_pipe_and_says_what_it_did() -> None:
    from primus_runner.monitor import container_guard as guard

    assert guard.read_pipe(["client 41\n", "done\n"]) == (True, 41)
    assert guard.read_pipe(["client 41\n", "done"]) == (True, 41)  # the last line without its newline
    assert guard.read_pipe(["client 41\n"]) == (False, 41)  # end of file without done: the launcher died
    assert guard.read_pipe(["client x\n", "noise\n"]) == (False, 0)
    assert guard.gone_line(7, "ct-1", 8) == (
        "the container launcher (pid 7) is gone (killed: SIGKILL or the OOM killer; sender unknown): "
        "stopping container ct-1 (SIGTERM, SIGKILL after 8 s) and removing it.")
    assert guard.closing_line(7, "ct-1", "stopped within the 8 s grace", "and removed") == (
        "stop: container launcher pid 7 died; container ct-1 stopped within the 8 s grace and removed.")
