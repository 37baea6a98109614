"""`primus-cli report` (python/primus_runner/report/): a run and a doctor run drawn as one
self-contained HTML file.

The run's record comes from the run monitor's own code: its judge (monitor/act.py) runs
its straggler rounds over four ranks of which rank 2 is the one the others wait for,
and writes what it judged into the record beside the log, as in a launch. The doctor
record comes from the fleet doctor's own ranking of four nodes, node3 slow with every
partner. The command is run as a user runs it (runner/primus-cli report), and the page
is rendered in a real headless Chromium (Debian's `chromium`): its DOM must hold the
heatmap and the straggler plot, and a screenshot of each is kept under tests/artifacts/.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from primus_runner import runrecord
from primus_runner.doctor import fleet
from primus_runner.monitor import act, straggler

ROOT = Path(__file__).resolve().parents[2]
CLI = str(ROOT / "runner" / "primus-cli")
ARTIFACTS = ROOT / "tests" / "artifacts"
T0 = 1_765_000_000.0


def _rank(rank: int) -> SimpleNamespace:
    return SimpleNamespace(rank=rank, looks=0, waits=0)


def straggler_run(log_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Node 0's log of a 4-rank run whose rank 2 straggles, and its record beside it."""
    log = log_dir / "primus-20261207T200000Z-node0.log"
    log.write_text("[INFO] the run's log\n")
    clock = [T0]
    monkeypatch.setattr(runrecord.time, "time", lambda: clock[0])
    for name, start, end in (("plan", 0.0, 0.12), ("layers", 0.12, 0.3), ("hooks", 0.3, 0.9),
                             ("verdict", 0.9, 1.1), ("spawn", 1.1, 1.4), ("rendezvous", 1.4, 4.0),
                             ("first_output", 4.0, 4.2)):
        for node, host in ((0, "node1"), (1, "node2")):
            runrecord.append(str(log), "phase", node=node, host=host, t=T0 + end, phase=name,
                             start=T0 + start + 0.05 * node, end=T0 + end + 0.05 * node)
    ranks = {r: _rank(r) for r in range(4)}
    monitor = SimpleNamespace(s=SimpleNamespace(log_file=str(log), node=0, nnodes=1), host="node1", ranks=ranks,
                              round_start=T0, history=[], rounds=0, named=set(), hung=False,
                              rebaseline=lambda: None)
    judge = act.Judge(monitor)  # type: ignore[arg-type]
    for n in range(1, 7):
        for watched in ranks.values():     # one round of looks: rank 2 rarely waits, the others often
            watched.looks = int(straggler.ROUND_S)
            watched.waits = 3 if watched.rank == 2 else 21 + watched.rank
        clock[0] = T0 + 5 + n * straggler.ROUND_S
        judge.stragglers(clock[0])
    runrecord.append(str(log), "restart", node=0, host="node1", t=clock[0] + 5, attempt=1,
                     reason="rank 2 straggled", left_out=["node2"], lost_s=12.0)
    runrecord.append(str(log), "end", node=0, host="node1", t=clock[0] + 30, exit_code=0)
    return log


def doctor_record(path: Path) -> Path:
    """The fleet doctor's JSON of four nodes, node3 slow with every partner (fleet.rank decides)."""
    figures = {("node1", "node2", 1): 1.9, ("node3", "node4", 1): 0.012, ("node1", "node3", 2): 0.011,
               ("node2", "node4", 2): 1.8, ("node1", "node3", 3): 0.012, ("node3", "node4", 3): 0.011,
               ("node2", "node3", 4): 0.011}
    reports: dict[str, dict[str, Any]] = {}
    for host in ("node1", "node2", "node3", "node4"):
        reports[host] = {"host": host, "facts": {"cpu vendor": "AuthenticAMD"}, "uniform": {},
                         "checks": [{"name": "cpu", "status": "pass", "value": "x", "wanted": "", "fix": ""}],
                         "probe": {"pairs": []}}
    for (a, b, rnd), gbps in figures.items():
        for me, peer in ((a, b), (b, a)):
            reports[me]["probe"]["pairs"].append({"round": rnd, "peer": peer, "gbps": gbps, "latency_us": 50.0})
    verdicts = fleet.rank(list(reports.values()))
    assert [v.host for v in verdicts if v.bad] == ["node3"]
    import json

    path.write_text(json.dumps(fleet.fleet_json(list(reports.values()), verdicts, fleet.DEFAULT_RATIO, None)))
    return path


def report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "report", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)


def test_the_monitor_records_its_straggler_rounds_and_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = straggler_run(tmp_path, monkeypatch)
    events = runrecord.read(runrecord.record_path(str(log)))
    rounds = [e for e in events if e["event"] == "straggler_scores"]
    assert len(rounds) == 6 and set(rounds[0]["scores"]) == {"0", "1", "2", "3"}
    assert rounds[-1]["scores"]["2"] >= straggler.THRESHOLD > rounds[-1]["scores"]["0"]
    flagged = [e for e in events if e["event"] == "verdict"]
    assert [(e["verdict"], e["ranks"]) for e in flagged] == [("straggler", [2])]
    assert flagged[0]["t"] == T0 + 5 + straggler.ROUNDS * straggler.ROUND_S  # named in the 3rd round, not before


def test_report_of_a_run_draws_phases_verdicts_scores_and_restarts(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    log = straggler_run(tmp_path, monkeypatch)
    done = report(str(log))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "primus-20261207T200000Z-node0.report.html"
    assert done.stdout == f"report: wrote {log.with_suffix('')}.report.html (23 event(s) from 1 record(s))\n"
    html = out.read_text()
    assert "<script" not in html and not re.search(r"(src|href)=", html)     # nothing fetched, no script
    assert len(re.findall(r'<rect class="phase"', html)) == 14                # 7 phases x 2 nodes
    assert len(re.findall(r'class="straggler-series" data-rank="(\d)"', html)) == 4
    assert re.search(r'class="verdict verdict-straggler"[^>]*><title>node 0: run monitor: straggler: rank 2 ', html)
    assert 'id="threshold"' in html and "restart 1: rank 2 straggled; left out node2" in html
    # The log directory gives the same run; the record itself too.
    assert report(str(tmp_path), "--out", str(tmp_path / "dir.html")).returncode == 0
    assert (tmp_path / "dir.html").read_text().count('class="straggler-series"') == 4


def test_report_of_a_four_node_doctor_run_draws_the_heatmap_with_the_excluded_node(tmp_path: Path) -> None:
    record = doctor_record(tmp_path / "fleet.json")
    done = report(str(record))
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "fleet.report.html").read_text()
    assert len(re.findall(r'<rect class="cell"', html)) == 16
    assert html.count('class="excluded-row"') == 1
    assert re.search(r'<text class="excluded"[^>]*>node3 \(excluded\)</text>', html)
    assert "node1 - node2: 1.9 GB/s" in html and "node1 - node4: not measured" in html


def test_report_refuses_what_is_no_record(tmp_path: Path) -> None:
    missing = report(str(tmp_path / "nothing.log"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    (tmp_path / "other.json").write_text('{"x": 1}')
    wrong = report(str(tmp_path / "other.json"))
    assert wrong.returncode == 2 and "not a doctor record" in wrong.stderr
    (tmp_path / "a.log").write_text("x\n")
    bare = report(str(tmp_path / "a.log"))
    assert bare.returncode == 1 and "no run record beside" in bare.stderr


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    browser = shutil.which("chromium")
    assert browser, "Debian's chromium is needed (Makefile APT_PACKAGES; apt-get install chromium)"
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-dev-shm-usage", "--user-data-dir=" + str(ARTIFACTS / ".chromium"), *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("kind", ["run", "doctor"])
def test_headless_chromium_renders_the_report(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if kind == "run":
        target, element = straggler_run(tmp_path, monkeypatch), "stragglers"
    else:
        target, element = doctor_record(tmp_path / "fleet.json"), "heatmap"
    out = tmp_path / f"{kind}.html"
    assert report(str(target), "--out", str(out)).returncode == 0
    ARTIFACTS.mkdir(exist_ok=True)
    dom = chromium("--dump-dom", out.as_uri())
    assert dom.returncode == 0, dom.stderr
    assert f'<svg id="{element}"' in dom.stdout and "</html>" in dom.stdout
    if kind == "run":
        assert dom.stdout.count('class="straggler-series"') == 4 and '<svg id="waterfall"' in dom.stdout
    else:
        assert dom.stdout.count('class="cell"') == 16 and "node3 (excluded)" in dom.stdout
    shot = ARTIFACTS / f"report-{kind}.png"
    shot.unlink(missing_ok=True)
    done = chromium(f"--screenshot={shot}", "--window-size=1000,1300", "--hide-scrollbars", out.as_uri())
    assert done.returncode == 0, done.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_a_real_launch_names_its_report_and_the_report_draws_it(tmp_path: Path) -> None:
    # A real launch of the embedded workload: its closing line names the command that draws it.
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PRIMUS_", "MASTER_", "NNODES"))}
    env.update({"PRIMUS_WORKSPACE": str(tmp_path / "output"), "HOME": str(tmp_path), "PRIMUS_LOG_COLOR": "0",
                "PRIMUS_SYSFS_ROOT": str(ROOT / "tests/fixtures/sysfs/no-accel"),
                "PRIMUS_DEV_ROOT": str(ROOT / "tests/fixtures/sysfs/no-accel"),
                "PRIMUS_WORKLOAD_PYTHON": str(ROOT / ".venv" / "bin" / "python")})
    done = subprocess.run([CLI, "direct", "--module", "primus_runner", "--", "preflight"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    match = re.search(r"workload finished successfully; log: (\S+); drawn by: primus-cli report (\S+)$", last)
    assert match and match.group(1) == match.group(2), last
    drawn = subprocess.run([CLI, "report", match.group(2)], cwd=tmp_path, capture_output=True, text=True,
                           timeout=60, check=False)
    assert drawn.returncode == 0, drawn.stderr
    html = Path(drawn.stdout.split("report: wrote ", 1)[1].split(" (", 1)[0]).read_text()
    assert "exit codes: node 0: 0." in html
