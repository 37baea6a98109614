"""The hang diagnosis's pure parts (python/primus_runner/diagnose): reading py-spy's
JSON and faulthandler's text, the place of a rank, the grouping, the suspect and the
summary lines, the merge across nodes. The live parts (py-spy on real torchrun ranks,
the watchdog, the stop) are in tests/bats/hang.bats and tests/slurm/hang_live.bats."""
from __future__ import annotations

import json

from primus_runner.diagnose.cli import merge_lines
from primus_runner.diagnose.frames import Frame, Thread, parse_faulthandler, parse_pyspy_json, render
from primus_runner.diagnose.summary import (
    RankPlace,
    from_json,
    groups,
    place_of,
    rank_list,
    summary_lines,
    suspect,
    to_json,
)

TORCH = "/venv/lib/python3.11/site-packages/torch/distributed"
SLEEPING = [
    {"thread_name": "MainThread", "os_thread_id": 11, "frames": [
        {"name": "clock_nanosleep", "filename": "/usr/lib/libc.so.6", "line": 0},
        {"name": "time_sleep", "filename": "/usr/lib/libpython3.11.so.1.0", "line": 0},
        {"name": "stuck_here", "filename": "/work/train.py", "line": 42},
        {"name": "main", "filename": "/work/train.py", "line": 60},
        {"name": "<module>", "filename": "/work/train.py", "line": 70}]},
    {"thread_name": "Thread-1", "os_thread_id": 12, "frames": [
        {"name": "wait", "filename": "/usr/lib/python3.11/threading.py", "line": 320}]},
]
REDUCING = [
    {"thread_name": "MainThread", "os_thread_id": 21, "frames": [
        {"name": "c10d::Work::wait", "filename": "/venv/torch/lib/libtorch_cpu.so", "line": 0},
        {"name": "all_reduce", "filename": f"{TORCH}/distributed_c10d.py", "line": 3252},
        {"name": "_exception_logger.<locals>.wrapper", "filename": f"{TORCH}/c10d_logger.py", "line": 83},
        {"name": "main", "filename": "/work/train.py", "line": 57}]},
]


def threads(data: object) -> list[Thread]:
    return parse_pyspy_json(json.dumps(data))


def test_pyspy_json_is_read_innermost_first_and_rendered():
    parsed = threads(SLEEPING)
    assert [t.name for t in parsed] == ["MainThread", "Thread-1"]
    assert parsed[0].frames[0] == Frame("clock_nanosleep", "/usr/lib/libc.so.6", 0)
    assert parsed[0].frames[0].native and not parsed[0].frames[2].native
    text = render(parsed)
    assert 'Thread 11: "MainThread"' in text and "    stuck_here (/work/train.py:42)" in text
    assert parse_pyspy_json("not json") == [] and parse_pyspy_json("{}") == []


def test_faulthandler_text_is_read():
    text = ('Thread 0x00007f0000000002 (most recent call first):\n'
            '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n\n'
            'Current thread 0x00007f0000000001 (most recent call first):\n'
            '  File "/work/train.py", line 42 in stuck_here\n'
            '  File "/work/train.py", line 60 in main\n')
    parsed = parse_faulthandler(text)
    assert len(parsed) == 2 and parsed[1].main and not parsed[0].main
    place = place_of(1, 0, "n1", parsed)
    assert place.where == "stuck_here (train.py:42)"


def test_place_is_the_innermost_workload_frame_and_what_it_called():
    sleeping = place_of(1, 0, "n1", threads(SLEEPING))
    assert (sleeping.where, sleeping.callee, sleeping.waiting) == (
        "stuck_here (train.py:42)", "time_sleep (libpython3.11.so.1.0)", False)
    reducing = place_of(0, 0, "n1", threads(REDUCING))
    # The decorator's wrapper says nothing: the collective is named.
    assert (reducing.where, reducing.callee, reducing.waiting) == (
        "main (train.py:57)", "all_reduce (torch/distributed/distributed_c10d.py:3252)", True)
    assert place_of(2, 0, "n1", []).error


def test_rank_lists():
    assert rank_list([0, 2, 3, 4, 5, 6, 7]) == "0,2-7"
    assert rank_list([1, 0]) == "0,1"
    assert rank_list([5]) == "5"
    assert rank_list([]) == ""


def test_the_smallest_group_not_waiting_is_the_suspect_and_summary_lines():
    places = [place_of(r, 0, "n1", threads(REDUCING)) for r in (0, 2, 3, 4, 5, 6, 7)]
    places.append(place_of(1, 0, "n1", threads(SLEEPING)))
    places.append(RankPlace(8, 0, "n1", exit_code=0))
    places.append(RankPlace(9, 0, "n1", error="py-spy: Permission denied; no faulthandler file"))
    grouped = groups(places)
    assert [len(g) for g in grouped] == [1, 7]
    assert suspect(grouped) == 0
    lines = summary_lines(places, "/logs/x.hang-1", ["flight recorder: /logs/fr-0"])
    assert lines[0] == "  SUSPECT rank 1: stuck_here (train.py:42) <- time_sleep (libpython3.11.so.1.0)"
    assert lines[1].startswith("          ranks 0,2-7: main (train.py:57) <- all_reduce")
    assert "  exited: rank 8 (exit code 0)" in lines
    assert "  no stack: rank 9: py-spy: Permission denied; no faulthandler file" in lines
    assert lines[-2:] == ["  flight recorder: /logs/fr-0", "  bundle: /logs/x.hang-1"]


def test_when_every_group_waits_only_a_strictly_smallest_group_is_suspect():
    a = [place_of(r, 0, "n", threads(REDUCING)) for r in (0, 1, 2)]
    odd = RankPlace(3, 0, "n", "other (train.py:9)", "barrier (torch/distributed/x.py:1)", True)
    assert suspect(groups([*a, odd])) == 0 and groups([*a, odd])[0][0].rank == 3
    tie = [a[0], odd]
    assert suspect(groups(tie)) == -1


def test_merge_across_nodes_names_node_and_host():
    node0 = {"node": 0, "places": to_json([place_of(r, 0, "node1", threads(REDUCING)) for r in (0, 1)]),
             "bundle": "/l/n0.stacks-1"}
    node1 = {"node": 1, "places": to_json([place_of(2, 1, "node2", threads(REDUCING)),
                                           place_of(3, 1, "node2", threads(SLEEPING))]),
             "bundle": "/l/n1.stacks-1"}
    lines = merge_lines([node1, node0, "garbage"])
    assert lines[0] == "  SUSPECT rank 3 (node 1 node2): stuck_here (train.py:42) <- time_sleep (libpython3.11.so.1.0)"
    assert lines[1].startswith("          ranks 0,1 (node 0 node1), 2 (node 1 node2): main (train.py:57)")
    assert lines[2:] == ["  bundle node 0: /l/n0.stacks-1", "  bundle node 1: /l/n1.stacks-1"]
    assert from_json("x") == [] and from_json([{"rank": "bad"}]) == []


def test_gather_merges_the_newest_bundle_of_each_node_and_names_the_missing(tmp_path, capsys, monkeypatch):
    from primus_runner.diagnose.cli import cmd_gather

    monkeypatch.setenv("PRIMUS_LOG_TIMESTAMP", "0")
    monkeypatch.setenv("PRIMUS_LOG_COLOR", "0")
    for name, node, ranks, sleeping in (("a-node0.hang-1", 0, (0, 1), ()), ("a-node1.hang-1", 1, (2,), ()),
                                        ("a-node1.hang-2", 1, (2,), (3,))):
        bundle = tmp_path / name
        bundle.mkdir()
        places = [place_of(r, node, f"n{node + 1}", threads(REDUCING)) for r in ranks]
        places += [place_of(r, node, f"n{node + 1}", threads(SLEEPING)) for r in sleeping]
        (bundle / "summary.json").write_text(json.dumps({"node": node, "places": to_json(places)}))
    older = tmp_path / "a-node1.hang-1" / "summary.json"
    import os
    os.utime(older, (1, 1))
    assert cmd_gather(["--log", str(tmp_path / "a-node0.log"), "--nodes", "2", "--since", "0", "--wait", "0"]) == 0
    err = capsys.readouterr().err
    assert "stacks across 2 node(s), 2 bundle(s) found:" in err
    assert "SUSPECT rank 3 (node 1 n2): stuck_here (train.py:42)" in err
    assert f"bundle node 1: {tmp_path / 'a-node1.hang-2'}" in err
    assert cmd_gather(["--log", str(tmp_path / "a-node0.log"), "--nodes", "3", "--since", "0", "--wait", "0"]) == 0
    assert "node 2: no bundle of this hang" in capsys.readouterr().err


PYSPY_DENIED = """Error: Failed to get process executable name. Check that the process is running.

Caused by:
    0: Permission denied (os error 13)
    1: Permission denied (os error 13)

Stack backtrace:
   0: <E as anyhow::context::ext::StdError>::ext_context
  10: main
"""


def test_pyspy_error_keeps_the_error_and_its_cause():
    from primus_runner.diagnose.pyspy import pyspy_error

    assert pyspy_error(PYSPY_DENIED) == ("Error: Failed to get process executable name. Check that the process "
                                         "is running. (Permission denied (os error 13))")
    assert pyspy_error("") == ""


def test_without_ptrace_the_stack_comes_from_faulthandler(tmp_path):
    """Real py-spy without CAP_SYS_PTRACE (setpriv drops it from the bounding set) on a
    rank that made itself non-dumpable: py-spy is refused, the faulthandler that
    runner/helpers/pystartup/sitecustomize.py registered answers on SIGURG."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "rank.py"
    script.write_text("import ctypes, time\nctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0\n\n\n"
                      "def stuck_here():\n    time.sleep(120)\n\n\nprint('ready', flush=True)\nstuck_here()\n")
    fh_file = tmp_path / "faulthandler.txt"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root / "runner/helpers/pystartup"),
           "PRIMUS_FAULTHANDLER_FILE": str(fh_file)}
    rank = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert rank.stdout is not None and rank.stdout.readline().strip() == "ready"
        code = ("import json, sys\nfrom primus_runner.diagnose.pyspy import read_stacks\n"
                "t, how, problems = read_stacks(int(sys.argv[1]), sys.argv[2])\n"
                "print(json.dumps([how, problems, [f.name for f in t[0].frames] if t else []]))\n")
        done = subprocess.run(["setpriv", "--bounding-set=-sys_ptrace", sys.executable, "-c", code,
                               str(rank.pid), str(fh_file)], env={**env, "PYTHONPATH": str(root / "python")},
                              capture_output=True, text=True, timeout=120)
    finally:
        rank.kill()
        rank.wait()
    how, problems, names = json.loads(done.stdout)
    assert how == "faulthandler (py-spy could not attach)"
    assert "Permission denied" in problems
    assert names[0] == "stuck_here"


def test_a_rank_lets_the_launchers_descendants_trace_it(tmp_path):
    """sitecustomize.py calls prctl(PR_SET_PTRACER, <launcher pid>) from PRIMUS_PTRACER_PID
    (Yama's ptrace_scope=1 refuses a non-ancestor otherwise) and drops the variable."""
    import importlib.util
    import os
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("primus_site", root / "runner/helpers/pystartup/sitecustomize.py")
    assert spec is not None and spec.loader is not None
    calls: list[tuple[int, ...]] = []
    saved = dict(os.environ)
    os.environ["PRIMUS_PTRACER_PID"] = "4242"
    try:
        module = importlib.util.module_from_spec(spec)
        sys.modules["primus_site"] = module
        spec.loader.exec_module(module)  # _primus_setup ran with the real prctl: no error either way
        assert "PRIMUS_PTRACER_PID" not in os.environ
        assert module._primus_ptracer(4242, lambda *args: calls.append(args) or 0) is True
        assert calls == [(0x59616D61, 4242, 0, 0, 0)]
        assert module._primus_ptracer(1, lambda *args: -1) is False
    finally:
        sys.modules.pop("primus_site", None)
        os.environ.clear()
        os.environ.update(saved)
