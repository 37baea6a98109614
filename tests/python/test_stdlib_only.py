"""What runs inside a user's container runs on the standard library alone.

The run monitor, the supervise helpers, the launch helper and the rest of
primus_runner start on the container's own Python, which may hold only the
standard library and the user's packages (README: running in a container). A
subprocess whose import system refuses psutil and PyYAML imports every module
of the package, then runs the /proc paths the monitor uses on real processes:
a launch found by its PRIMUS_RUN_ID, a rank under its wrapper, a SIGSTOPped
rank seen as stopped, the registry read from its JSON copy.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

REFUSE = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('psutil', 'yaml', '_yaml'):
            raise ImportError('refused in this test: ' + name)
        return None
sys.meta_path.insert(0, Refuse())
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT / "python"), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([sys.executable, "-c", REFUSE + code, *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_the_refusal_itself_works() -> None:
    out = _run("import yaml")
    assert out.returncode != 0
    assert "refused in this test: yaml" in out.stderr


def test_every_module_imports_without_psutil_and_pyyaml() -> None:
    code = """
import importlib, json, pkgutil, sys
import primus_runner
failed = {}
names = []
for info in pkgutil.walk_packages(primus_runner.__path__, 'primus_runner.'):
    if info.name.endswith('__main__'):
        continue
    names.append(info.name)
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed[info.name] = repr(exc)
print(json.dumps({'names': names, 'failed': failed,
                  'loaded': sorted(m for m in sys.modules if m.split('.')[0] in ('psutil', 'yaml'))}))
"""
    out = _run(code)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["failed"] == {}
    assert result["loaded"] == []
    for name in ("primus_runner.monitor.cli", "primus_runner.monitor.act", "primus_runner.monitor.supervise",
                 "primus_runner.monitor.members", "primus_runner.diagnose.runs", "primus_runner.launch.helper",
                 "primus_runner.launch.spawn", "primus_runner.config.files"):
        assert name in result["names"]


def test_the_proc_paths_find_a_run_its_ranks_and_a_stopped_rank(tmp_path: Path) -> None:
    rc_dir = tmp_path / "rc"
    rc_dir.mkdir()
    env = {**os.environ, "PRIMUS_RUN_ID": f"stdlib-{os.getpid()}", "PRIMUS_RC_DIR": str(rc_dir),
           "PRIMUS_RUN_LOG": str(tmp_path / "run.log"), "LOCAL_RANK": "1", "NODE_RANK": "0"}
    env.pop("SLURM_JOB_ID", None)
    # A wrapper (as run_worker.sh is for a rank) whose child is the rank; `; :`
    # keeps sh from exec-ing it.
    wrapper = subprocess.Popen(["sh", "-c", "sleep 60; :"], env=env)
    rank_pid = 0
    try:
        (rc_dir / "worker.3").write_text(f"{wrapper.pid}\n")
        code = """
import json, os, signal, sys, time
from primus_runner.diagnose.runs import scan, ranks_of
from primus_runner import procstat
from primus_runner.monitor import members
from primus_runner.env import registry
run_id, wrapper = sys.argv[1], int(sys.argv[2])
for _ in range(100):
    run = scan().get(run_id)
    live, ended = ranks_of(run) if run else ([], {})
    if live:
        break
    time.sleep(0.05)
rank = live[0]
before = procstat.read_sample(rank.pid)
os.kill(rank.pid, signal.SIGSTOP)
for _ in range(100):
    after = procstat.read_sample(rank.pid)
    if after.stopped:
        break
    time.sleep(0.02)
os.kill(rank.pid, signal.SIGCONT)
table = members.parent_table()
print(json.dumps({'rank': rank.rank, 'local': rank.local_rank, 'pid': rank.pid, 'ended': ended,
                  'processes': sorted(run.processes), 'launcher': run.launcher_pid,
                  'stopped_before': before.stopped, 'stopped_after': after.stopped,
                  'parent': table[rank.pid][0], 'name': table[rank.pid][1],
                  'alive': procstat.alive(rank.pid), 'timeout': registry.load().get('PRIMUS_HANG_TIMEOUT').default,
                  'loaded': sorted(m for m in sys.modules if m.split('.')[0] in ('psutil', 'yaml'))}))
"""
        out = _run(code, env["PRIMUS_RUN_ID"], str(wrapper.pid))
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        rank_pid = got["pid"]
        assert got["rank"] == 3 and got["local"] == 1
        assert got["parent"] == wrapper.pid and got["name"] == "sleep"
        assert got["processes"] == sorted([wrapper.pid, got["pid"]])
        assert got["launcher"] == os.getpid()
        assert got["stopped_before"] is False and got["stopped_after"] is True
        assert got["alive"] is True and got["ended"] == {}
        assert got["timeout"] == "1800"
        assert got["loaded"] == []
    finally:
        wrapper.kill()
        wrapper.wait()
        if rank_pid:
            os.kill(rank_pid, signal.SIGKILL)
    # Once the wrapper is gone the rank counts as ended, with no failed-<RANK> record: code 0.
    code = """
import json, sys
from primus_runner.diagnose.runs import Run, ranks_of
run = Run(sys.argv[1], sys.argv[2], '', 0)
print(json.dumps(ranks_of(run)[1]))
"""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = _run(code, "x", str(rc_dir))
        if out.stdout.strip() == '{"3": 0}':
            break
        time.sleep(0.1)
    assert out.stdout.strip() == '{"3": 0}', out.stderr
