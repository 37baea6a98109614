"""The run monitor as the parent-death guard (monitor/guard.py): its texts, and a
real run whose launcher is gone: a process that ignores SIGTERM is SIGKILLed
after the grace, one that ends in time is not named."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

from primus_runner.monitor import guard
from primus_runner.monitor.members import members


def test_lines_say_what_happened() -> None:
    assert guard.gone_line(41, 5, 3) == (
        "the launcher (pid 41) is gone (killed: SIGKILL or the OOM killer; sender unknown): "
        "its workload got SIGTERM; SIGKILL after 5 s to what is left of 3 process(es).")
    assert guard.closing_line(41, 5, 3, "") == (
        "stop: launcher pid 41 died; 3 process(es) of the run stopped (SIGTERM from the parent-death signal) "
        "and all ended within the 5 s grace.")
    assert guard.closing_line(41, 5, 3, "7(python3)").endswith(", killed after the 5 s grace: 7(python3).")


def test_launcher_alive_tells_a_running_process_from_a_gone_one() -> None:
    assert guard.launcher_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not guard.launcher_alive(child.pid)


def test_launcher_ended_waits_for_a_process_still_ending() -> None:
    # Its pipe is closed before it is gone (as the kernel closes a dying
    # launcher's files before it becomes a zombie): one look would say alive.
    # The child ends only when told (its stdin closed): no timing to race.
    child = subprocess.Popen([sys.executable, "-c", "import os, sys; os.close(1); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    assert child.stdout.read() == b""  # end of file, the process still runs
    assert guard.launcher_alive(child.pid)
    assert not guard.launcher_ended(child.pid, limit=0.3)  # it lives on meanwhile
    child.stdin.close()  # now it ends
    assert guard.launcher_ended(child.pid, limit=30.0)
    child.wait()


def test_launcher_ended_gives_up_on_a_launcher_that_lives_on() -> None:
    start = time.monotonic()
    assert not guard.launcher_ended(os.getpid(), limit=0.3)
    assert time.monotonic() - start >= 0.3


def _start(run_id: str, code: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PRIMUS_RUN_ID=run_id)
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"  # its SIGTERM disposition is set
    return proc


def test_stop_orphaned_run_kills_what_is_left_after_the_grace() -> None:
    run_id = f"guard-test-{uuid.uuid4().hex}"
    deaf = _start(run_id, "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                          "print('ready', flush=True); time.sleep(120)")
    other = _start(f"{run_id}-not-ours", "print('ready', flush=True); import time; time.sleep(120)")
    said: list[tuple[str, str]] = []
    try:
        assert members(run_id) == [deaf.pid]
        start = time.monotonic()
        guard.stop_orphaned_run(run_id, 999999, 1, lambda level, text: said.append((level, text)))
        took = time.monotonic() - start
        assert deaf.wait(timeout=10) == -9
        assert 1.0 <= took < 8.0
        assert other.poll() is None  # another run's process is left alone
        assert said[0] == ("WARN", guard.gone_line(999999, 1, 1))
        assert said[1][0] == "WARN"
        assert said[1][1].startswith("stop: launcher pid 999999 died; 1 process(es) of the run stopped")
        assert f"killed after the 1 s grace: {deaf.pid}(python" in said[1][1]
    finally:
        for proc in (deaf, other):
            proc.kill()
            proc.wait()


def test_stop_orphaned_run_says_nothing_when_the_run_is_gone() -> None:
    said: list[tuple[str, str]] = []
    guard.stop_orphaned_run(f"gone-{uuid.uuid4().hex}", 999999, 1, lambda level, text: said.append((level, text)))
    assert said == []
