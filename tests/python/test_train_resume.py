"""Resume, measured: the embedded workload under real torchrun (gloo, 2 processes).

An unfaulted run and a run killed mid-way then resumed with ``--resume auto`` end with
the same loss (the printed 4 decimals: tolerance 1e-4, docs/restart-on-failure.md).
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner.errors import UsageError
from primus_runner.workload.train import fault_plan, latest_checkpoint, step_of

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "cpu_pretrain.yaml"
STEPS = 12
TOLERANCE = 1e-4
FINAL = re.compile(rf"\[train\] step {STEPS}/{STEPS} loss (\d+\.\d+)")


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
            "--master_port", str(_port()), "-m", "primus_runner", "train", "pretrain", "--config", str(CONFIG),
            "--steps", str(STEPS), "--checkpoint_every", "4", *extra]


def _env(workspace: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "python")
    env["PRIMUS_WORKSPACE"] = str(workspace)
    env["OMP_NUM_THREADS"] = "1"
    return env


def _descendants(pid: int) -> list[int]:
    """PID's descendants, from /proc (torchrun starts each worker in a session of its own)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _final_loss(text: str) -> float:
    found = FINAL.search(text)
    assert found, text[-2000:]
    return float(found.group(1))


def test_a_run_killed_mid_way_resumes_from_its_last_checkpoint_to_the_same_loss(tmp_path: Path) -> None:
    straight = subprocess.run(_command(), env=_env(tmp_path / "a"), capture_output=True, text=True, timeout=120,
                              check=False)
    assert straight.returncode == 0, straight.stderr[-2000:]
    expected = _final_loss(straight.stdout)

    work = tmp_path / "b"
    proc = subprocess.Popen(_command(), env=_env(work), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    seen = []
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("[train] step 6/"):
            for pid in [proc.pid, *_descendants(proc.pid)]:  # every rank and torchrun, mid-run
                os.kill(pid, signal.SIGKILL)
            break
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "".join(seen)
    assert not any(line.startswith(f"[train] step {STEPS}/") for line in seen)
    checkpoints = sorted(p.name for p in (work / "cpu_pretrain" / "checkpoints").iterdir())
    assert "ckpt-step00000004.pt" in checkpoints and not any(name.startswith(".") for name in checkpoints)

    resumed = subprocess.run(_command("--resume", "auto"), env=_env(work), capture_output=True, text=True,
                             timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert re.search(r"^\[train\] resumed from step 4: .*/ckpt-step00000004\.pt$", resumed.stdout, re.M), \
        resumed.stdout + resumed.stderr
    assert "[train] step 4/" not in resumed.stdout and "[train] step 5/" in resumed.stdout
    assert abs(_final_loss(resumed.stdout) - expected) <= TOLERANCE


def test_the_test_only_fault_acts_on_the_first_attempt_unless_always() -> None:
    assert fault_plan("", "") == ("", -1, 0)
    assert fault_plan("hang:1:12", "") == ("hang", 1, 12)
    assert fault_plan("kill:3:4", "0") == ("kill", 3, 4)
    assert fault_plan("kill:3:4", "1") == ("", -1, 0)
    assert fault_plan("kill:3:4:always", "2") == ("kill", 3, 4)
    with pytest.raises(UsageError, match="PRIMUS_TRAIN_FAULT='sleep:1'"):
        fault_plan("sleep:1", "")


def test_the_latest_checkpoint_is_the_highest_step_and_a_temporary_file_never_counts(tmp_path: Path) -> None:
    for name in ("ckpt-step00000004.pt", "ckpt-step00000012.pt", ".ckpt-step00000016.pt.77.tmp",
                 "20261207T000000Z-step8.pt"):
        (tmp_path / name).write_bytes(b"x")
    assert latest_checkpoint(tmp_path) == tmp_path / "ckpt-step00000012.pt"
    assert step_of("20261207T000000Z-step30-1.pt") == 30 and step_of("notes.txt") == -1
    assert latest_checkpoint(tmp_path / "none") is None
