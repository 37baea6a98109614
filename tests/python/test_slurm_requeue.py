"""primus_runner.scheduler.requeue: the requeue decision of a Slurm job's task 0."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner.scheduler import requeue

ROOT = Path(__file__).resolve().parents[2]


def never() -> bool:
    return False


def always() -> bool:
    return True


def asked_not() -> bool:
    raise AssertionError("the marker was looked for after the run's own requeue code")


def test_the_requeue_code_decides_without_looking_for_a_marker() -> None:
    assert requeue.reason({}, 85, 85, "", asked_not) == \
        "the workload exited with the requeue code 85 (PRIMUS_REQUEUE_EXIT_CODE)"


def test_another_nodes_marker_requeues() -> None:
    assert requeue.reason({}, 1, 85, "", always) == "a rank on another node exited with the requeue code 85"


@pytest.mark.parametrize(("rc", "switch", "expected"), [(0, "1", True), (0, "0", False), (143, "1", False)])
def test_a_notice_requeues_only_a_clean_end_with_slurm_requeue(rc: int, switch: str, expected: bool) -> None:
    why = requeue.reason({"PRIMUS_SLURM_REQUEUE": switch}, rc, 85, "USR1", never)
    assert why == ("preemption notice SIGUSR1, then a clean exit (slurm.requeue: true)" if expected else "")


def test_no_notice_no_code_no_marker_is_no_requeue() -> None:
    assert requeue.reason({"PRIMUS_SLURM_REQUEUE": "1"}, 0, 85, "", never) == ""


def test_the_announcement_names_the_next_restart() -> None:
    env = {"SLURM_JOB_ID": "7", "SLURM_RESTART_COUNT": "2"}
    assert requeue.announcement(env, "why") == "requeue: job 7 is being requeued (why); its next run is restart 3."
    assert requeue.announcement({"SLURM_JOB_ID": "7"}, "w").endswith("its next run is restart 1.")


def test_the_marker_lives_in_the_workspace_per_job_and_restart() -> None:
    env = {"PRIMUS_WORKSPACE": "/ws", "SLURM_JOB_ID": "7", "SLURM_RESTART_COUNT": "1"}
    assert requeue.marker_path(env) == "/ws/.primus-requeue-7-1"
    assert requeue.marker_path({"SLURM_JOB_ID": "7"}) == "./output/.primus-requeue-7-0"


@pytest.mark.parametrize(("line", "now", "expected"), [
    ("JobId=5 JobState=RUNNING Restarts=0 BatchFlag=1", 0, ("RUNNING", "")),
    ("JobId=5 JobState=COMPLETING Restarts=1 BatchFlag=1", 0, ("COMPLETING", "1")),
    ("JobId=5 JobState=PENDING Restarts=2", 2, ("PENDING", "")),
    ("JobId=5 OldJobState=RUNNING Restarts=3", 1, ("", "3")),
    ("slurm_load_jobs error: Invalid job id specified", 0, ("", "")),
])
def test_job_now_reads_state_and_a_restart_ordered_during_this_run(
        line: str, now: int, expected: tuple[str, str]) -> None:
    assert requeue.job_now(line, now) == expected


def _run(args: list[str], tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, PYTHONPATH=str(ROOT / "python"), PRIMUS_WORKSPACE=str(tmp / "ws"), SLURM_JOB_ID="9",
                **env)
    return subprocess.run([sys.executable, "-m", "primus_runner", "slurm-requeue", *args], env=full,
                          capture_output=True, text=True)


def test_another_task_leaves_the_marker_and_task_0_finds_it_removes_it_and_says_why(tmp_path: Path) -> None:
    other = _run(["reason", "--rc", "85", "--code", "85"], tmp_path, SLURM_PROCID="3")
    assert other.returncode == 0 and other.stdout == ""
    marker = tmp_path / "ws" / ".primus-requeue-9-0"
    assert marker.exists()
    first = _run(["reason", "--rc", "143", "--code", "85"], tmp_path, SLURM_PROCID="0")
    assert first.stdout.splitlines() == [
        "a rank on another node exited with the requeue code 85",
        "requeue: job 9 is being requeued (a rank on another node exited with the requeue code 85); "
        "its next run is restart 1."]
    assert not marker.exists()


def test_a_task_that_ended_otherwise_leaves_no_marker(tmp_path: Path) -> None:
    assert _run(["reason", "--rc", "1", "--code", "85"], tmp_path, SLURM_PROCID="2").stdout == ""
    assert not (tmp_path / "ws").exists()


def test_job_now_reads_stdin(tmp_path: Path) -> None:
    full = dict(os.environ, PYTHONPATH=str(ROOT / "python"), SLURM_RESTART_COUNT="0")
    done = subprocess.run([sys.executable, "-m", "primus_runner", "slurm-requeue", "job-now"], env=full,
                          input="JobId=1 JobState=COMPLETING Restarts=1\n", capture_output=True, text=True)
    assert done.stdout == "COMPLETING\t1\n"


def test_bad_calls_are_usage_errors(tmp_path: Path) -> None:
    assert _run(["reason", "--rc", "x", "--code", "85"], tmp_path).returncode == 2
    assert _run(["reason", "--bogus", "1"], tmp_path).returncode == 2
    assert _run(["again"], tmp_path).returncode == 2
