"""The stop grace under Slurm (scheduler/stop_grace.py): KillWait - 3 s (- 1 s when
KillWait <= 6 s), at least 1 s; 27 s when scontrol did not answer; the user's
PRIMUS_KILL_GRACE first. The launch helper and the container plan decide it for a
launch, ``slurm-grace`` for srun's parent and an entry waiting out the grace."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner.scheduler.stop_grace import grace_of, hold_left, killwait_seconds, launch_grace, whole_seconds

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("text", "seconds"), [(" 30 sec", 30), ("2 sec", 2), ("0", 0), ("", None),
                                               ("(null)", None), (" x sec", None)])
def test_killwait_text(text: str, seconds: int | None) -> None:
    assert killwait_seconds(text) == seconds


@pytest.mark.parametrize(("kill_grace", "killwait", "grace", "why"), [
    ("", 30, 27, "stop grace 27 s (KillWait 30 s from scontrol show config, minus 3 s)"),
    ("", 7, 4, "stop grace 4 s (KillWait 7 s from scontrol show config, minus 3 s)"),
    ("", 6, 5, "stop grace 5 s (KillWait 6 s from scontrol show config, minus 1 s)"),
    ("", 2, 1, "stop grace 1 s (KillWait 2 s from scontrol show config, minus 1 s)"),
    ("", 1, 1, "stop grace 1 s (KillWait 1 s from scontrol show config, minus 0 s)"),
    ("", 0, 1, "stop grace 1 s (KillWait 0 s from scontrol show config, minus -1 s)"),
    ("", None, 27, "stop grace 27 s (scontrol show config did not answer: Slurm's default KillWait 30 s, minus 3 s)"),
    ("8", 30, "8", "stop grace 8 s (PRIMUS_KILL_GRACE)"),
])
def test_the_rule(kill_grace: str, killwait: int | None, grace: int | str, why: str) -> None:
    assert grace_of(kill_grace, killwait) == (grace, why)


@pytest.mark.parametrize(("env", "expected"), [
    ({}, None),                                                         # not under the Slurm entry
    ({"PRIMUS_SLURM_KILLWAIT": "2 sec"}, None),
    ({"PRIMUS_VIA_SLURM_ENTRY": "1"}, None),                           # the entry read nothing (dry run)
    ({"PRIMUS_VIA_SLURM_ENTRY": "1", "PRIMUS_SLURM_KILLWAIT": "2 sec"}, "1"),
    ({"PRIMUS_VIA_SLURM_ENTRY": "1", "PRIMUS_SLURM_KILLWAIT": ""}, "27"),
    ({"PRIMUS_VIA_SLURM_ENTRY": "1", "PRIMUS_SLURM_KILLWAIT": "2 sec", "PRIMUS_KILL_GRACE": "9"}, "9"),
])
def test_a_launch_decides_only_under_the_entry(env: dict[str, str], expected: str | None) -> None:
    got = launch_grace(env)
    assert (got[0] if got else None) == expected


@pytest.mark.parametrize(("grace", "seconds"), [("8", 8), (8, 8), ("x", 27), ("123456", 27), ("", 27)])
def test_whole_seconds(grace: int | str, seconds: int) -> None:
    assert whole_seconds(grace) == seconds


@pytest.mark.parametrize(("grace", "at", "now", "left"), [
    (8, 1_000_000, 2_500_000, "6.500000"), (8, 1_000_000, 9_000_000, ""), (1, 0, 999_999, "0.000001"),
])
def test_hold_left(grace: int, at: int, now: int, left: str) -> None:
    assert hold_left(grace, at, now) == left


def run(args: list[str], **env: str) -> str:
    full = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT / "python"), **env}
    return subprocess.run([sys.executable, "-m", "primus_runner", "slurm-grace", *args], env=full,
                          capture_output=True, text=True, timeout=60, check=True).stdout


def test_the_command() -> None:
    assert run([], PRIMUS_SLURM_KILLWAIT="10 sec") == (
        "7\tstop grace 7 s (KillWait 10 s from scontrol show config, minus 3 s)\n")
    assert run([], PRIMUS_KILL_GRACE="x") == "27\tstop grace x s (PRIMUS_KILL_GRACE)\n"
    assert run(["--hold", "1"], PRIMUS_KILL_GRACE="8") == "8\t\n"  # the signal was long ago
    assert run(["--hold", str(10**18)], PRIMUS_KILL_GRACE="x") == "27\t\n"  # no number: no hold
