"""The out-of-memory hint of the failure report (python/primus_runner/launch/oom.py)."""
from __future__ import annotations

from pathlib import Path

from primus_runner.launch import oom


def test_cgroup_path_v2_v1_and_hybrid() -> None:
    assert oom.cgroup_path("0::/user.slice/job-7\n") == ("2", "/user.slice/job-7")
    assert oom.cgroup_path("4:memory:/slurm/uid_0/job_9\n1:cpu:/\n") == ("1", "/slurm/uid_0/job_9")
    assert oom.cgroup_path("5:cpuacct,memory:/a\n0::/\n") == ("1", "/a")  # hybrid: memory is v1's
    assert oom.cgroup_path("garbage") is None


def test_parse_counters_and_kernel_lines() -> None:
    events = "low 0\nhigh 0\nmax 4\noom 2\noom_kill 1\noom_group_kill 0\n"
    assert oom.parse_counters(events)["oom_kill"] == 1
    kmsg = ("6,100,5,-;eth0: link up\n"
            "3,101,6,-;Out of memory: Killed process 4242 (python) total-vm:9kB\n"
            "6,102,7,-;oom_reaper: reaped process 4242 (python)\n")
    assert oom.kernel_oom_lines(kmsg) == ["Out of memory: Killed process 4242 (python) total-vm:9kB",
                                          "oom_reaper: reaped process 4242 (python)"]
    assert oom.kernel_oom_lines("6,1,1,-;nothing\n") == []


def test_hint_only_for_sigkill() -> None:
    assert oom.oom_hint(1) == [] and oom.oom_hint(143) == []


def test_hint_with_a_fake_cgroup_and_kernel_log(tmp_path: Path) -> None:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("0::/job.slice/run-1\n")
    events = tmp_path / "sys/fs/cgroup/job.slice/run-1"
    events.mkdir(parents=True)
    (events / "memory.events").write_text("oom 1\noom_kill 1\n")
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/kmsg").write_text("3,5,9,-;Memory cgroup out of memory: Killed process 77 (python)\n")
    lines = oom.oom_hint(137, str(tmp_path), str(tmp_path))
    assert "out-of-memory killer" in lines[0]
    assert "  cgroup /job.slice/run-1 memory.events: oom_kill 1 (the OOM killer did kill in this job's cgroup)" in lines
    assert "  kernel log: Memory cgroup out of memory: Killed process 77 (python)" in lines


def test_hint_when_nothing_is_readable(tmp_path: Path) -> None:
    lines = oom.oom_hint(137, str(tmp_path), str(tmp_path))
    assert len(lines) == 2 and "kernel log: not readable here" in lines[1]
