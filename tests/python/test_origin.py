"""How a signal came (monitor/origin.py): forwarded by the Slurm entry, Slurm's
delivery to every process of the step (both receipts within the window), or
sent to one process alone; read from real receipt files."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from primus_runner.monitor import origin

ROOT = Path(__file__).resolve().parents[2]


def _now_us() -> int:
    return time.time_ns() // 1000


def test_texts_and_window() -> None:
    assert origin.sender_text("forwarded") == "sender: slurm-entry (forwarded)"
    assert origin.sender_text("step") == "sender: Slurm (delivered to every process of the step)"
    assert origin.sender_text("direct") == "sender: unknown (a shell cannot read a signal's sender)"
    assert origin.within(1_500_000, 1_000_000, 500_000)
    assert origin.within(500_000, 1_000_000, 500_000)
    assert not origin.within(1_500_001, 1_000_000, 500_000)


def test_no_signal_dir_is_direct_at_once() -> None:
    start = time.monotonic()
    assert origin.origin("", "launcher", "TERM", _now_us(), 1_000_000) == "direct"
    assert time.monotonic() - start < 0.5


def test_forwarded_marker_is_read_once(tmp_path: Path) -> None:
    (tmp_path / "forwarded.USR2").touch()
    assert origin.origin(str(tmp_path), "launcher", "USR2", _now_us(), 100_000) == "forwarded"
    assert not (tmp_path / "forwarded.USR2").exists()
    # The entry never reads the marker it leaves for its launcher.
    (tmp_path / "forwarded.USR2").touch()
    assert origin.origin(str(tmp_path), "entry", "USR2", _now_us(), 100_000) == "direct"


def test_a_peer_receipt_in_the_window_is_the_step(tmp_path: Path) -> None:
    at = _now_us()
    (tmp_path / "entry.TERM").write_text(f"{at - 300_000}\n")
    assert origin.origin(str(tmp_path), "launcher", "TERM", at, 500_000) == "step"
    (tmp_path / "launcher.USR1").write_text(f"{at + 300_000}\n")
    assert origin.origin(str(tmp_path), "entry", "USR1", at, 500_000) == "step"
    # Out of the window (an older signal's receipt): sent to this one alone.
    (tmp_path / "entry.HUP").write_text(f"{at - 900_000}\n")
    start = time.monotonic()
    assert origin.origin(str(tmp_path), "launcher", "HUP", _now_us(), 200_000) == "direct"
    assert 0.15 <= time.monotonic() - start < 2.0


def test_a_receipt_that_comes_while_waiting_counts(tmp_path: Path) -> None:
    at = _now_us()
    # The peer notes it 0.2 s later (its trap ran later), within a 5 s window.
    writer = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(0.2); "
                               "open(sys.argv[1], 'w').write(sys.argv[2] + '\\n')",
                               str(tmp_path / "entry.TERM"), str(at + 200_000)])
    try:
        start = time.monotonic()
        assert origin.origin(str(tmp_path), "launcher", "TERM", at, 5_000_000) == "step"
        assert time.monotonic() - start < 4.0  # answered when the note came, not at the window's end
    finally:
        writer.wait()


def test_the_origin_command_prints_origin_and_sender(tmp_path: Path) -> None:
    at = _now_us()
    (tmp_path / "launcher.USR1").write_text(f"{at}\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    done = subprocess.run([sys.executable, "-m", "primus_runner", "supervise", "origin", "USR1", "--role", "entry",
                           "--at", str(at), "--signal-dir", str(tmp_path), "--window-ms", "1000"],
                          env=env, capture_output=True, text=True, check=True)
    assert done.stdout == "step\tsender: Slurm (delivered to every process of the step)\n"
