"""The failure report of a launch, torchrun and single mode (python/primus_runner/launch/report.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from primus_runner.launch import report
from primus_runner.launch.report import Failure


def record(code: int, time_us: int, rank: int, local_rank: int = 0, stdout: str = "",
           stderr: str = "", error_file: str = "") -> bytes:
    """A failed-<RANK> record as run_worker.sh writes it (NUL-terminated fields)."""
    fields = [str(code), str(time_us), str(rank), str(local_rank), stdout, stderr, error_file]
    return "".join(f"{field}\0" for field in fields).encode()


def failure(code: int, time_us: int, rank: int) -> Failure:
    return Failure(code, time_us, rank, rank, "", "", "")


def test_parse_record_reads_every_field_including_spaces() -> None:
    parsed = report.parse_record(record(7, 1700000000123456, 3, 1, "/l o g/3/stdout.log",
                                        "/l o g/3/stderr.log", "/tmp/err 1.json"))
    assert parsed == Failure(7, 1700000000123456, 3, 1, "/l o g/3/stdout.log",
                             "/l o g/3/stderr.log", "/tmp/err 1.json")


@pytest.mark.parametrize("data", [b"", b"7\x00123\x00", b"x\x001\x002\x000\x00\x00\x00\x00"])
def test_parse_record_refuses_short_or_non_numeric_records(data: bytes) -> None:
    assert report.parse_record(data) is None


def test_first_failure_is_the_earliest_not_the_lowest_rank() -> None:
    early, late = failure(1, 100, 5), failure(143, 200, 0)
    assert report.first_failure([late, early], 85) is early


def test_first_failure_ties_go_to_the_lower_rank() -> None:
    assert report.first_failure([failure(1, 100, 4), failure(1, 100, 2)], 85).rank == 2


def test_the_requeue_code_wins_even_when_it_came_later() -> None:
    chosen = report.first_failure([failure(1, 100, 0), failure(85, 300, 3)], 85)
    assert chosen is not None and chosen.code == 85 and chosen.rank == 3


def test_no_failure_gives_none() -> None:
    assert report.first_failure([], 85) is None


@pytest.mark.parametrize(("code", "text"), [
    (1, "exit code 1"),
    (137, "exit code 137 (killed by SIGKILL)"),
    (143, "exit code 143 (killed by SIGTERM)"),
    (138, "exit code 138 (killed by signal 10)"),
    (200, "exit code 200"),
])
def test_describe_code(code: int, text: str) -> None:
    assert report.describe_code(code) == text


def test_exception_line_is_the_last_tracebacks_exception() -> None:
    text = "\n".join([
        "step 1",
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in <module>',
        "KeyError: 'first'",
        "retrying",
        "Traceback (most recent call last):",
        '  File "train.py", line 9, in <module>',
        '    raise ValueError("boom")',
        "ValueError: boom",
    ])
    assert report.exception_line(text) == "ValueError: boom"


def test_exception_line_with_dotted_name_and_none_without_traceback() -> None:
    text = "Traceback (most recent call last):\n  File \"x\", line 1\ntorch.OutOfMemoryError: CUDA out of memory\n"
    assert report.exception_line(text) == "torch.OutOfMemoryError: CUDA out of memory"
    assert report.exception_line("ValueError: not in a traceback\n") == ""


def test_error_file_message_reads_torchelastic_record() -> None:
    content = {"message": {"message": "Traceback...\nRuntimeError: bad shard", "extraInfo": {}}}
    assert report.error_file_message(json.dumps(content)) == "RuntimeError: bad shard"
    assert report.error_file_message("not json") == ""
    assert report.error_file_message(json.dumps({"message": 5})) == ""


def test_tail_keeps_the_last_lines() -> None:
    assert report.tail("a\nb\nc\n", 2) == ["b", "c"]
    assert report.tail("", 5) == []


def test_format_report_names_rank_node_code_exception_and_others() -> None:
    first = Failure(7, 100, 5, 1, "/r/5/stdout.log", "/r/5/stderr.log", "")
    others = [failure(143, 300, 6), failure(143, 200, 4)]
    lines = report.format_report(first, others, "ValueError: boom", ["x", "y"], "/logs/run.log", "1")
    assert lines[0] == "failure report: global rank 5 (local rank 1 of node 1) failed first, exit code 7."
    assert "  exception: ValueError: boom" in lines
    assert "    | y" in lines
    assert any("/r/5/stderr.log" in line for line in lines)
    assert ("  ranks of this node that ended after it: 4 (exit code 143 (killed by SIGTERM)), "
            "6 (exit code 143 (killed by SIGTERM))") in lines
    assert lines[-1].endswith("/logs/run.log")


def test_report_end_to_end_picks_the_rank_and_appends_torchrun_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc_dir, log_file = tmp_path / "rc", tmp_path / "run.log"
    rc_dir.mkdir()
    err = tmp_path / "1.err"
    err.write_text("hello\nTraceback (most recent call last):\n  File \"t.py\"\nValueError: boom\n")
    (rc_dir / "failed-1").write_bytes(record(3, 100, 1, 1, stderr=str(err)))
    (rc_dir / "failed-0").write_bytes(record(143, 900, 0))
    (rc_dir / "torchrun.err").write_text("Traceback\nChildFailedError: table\n")
    log_file.write_text("before\n")
    assert report.report(rc_dir, str(log_file), 1, 85, "0") == 3
    stderr = capsys.readouterr().err
    assert "global rank 1 (local rank 1 of node" in stderr
    assert "exception: ValueError: boom" in stderr
    assert "| hello" in stderr
    kept = log_file.read_text()
    assert kept.startswith("before\n") and "ChildFailedError: table" in kept


def test_report_without_failed_rank_keeps_torchruns_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "torchrun.err").write_text("Traceback\nRuntimeError: address already in use\n")
    assert report.report(tmp_path, "", 1) == 1
    assert "before any rank of this node failed: RuntimeError: address already in use" in capsys.readouterr().err


def test_cli_prints_the_code_and_refuses_bad_options(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert report.main(["--rc-dir", str(tmp_path), "--code", "9"]) == 0
    assert capsys.readouterr().out.strip() == "9"
    assert report.main(["--bogus", "x"]) == 2
    assert "unknown option" in capsys.readouterr().err
    assert report.main(["--help"]) == 0
    assert "--rc-dir" in capsys.readouterr().out


def test_torchruns_traceback_is_masked_in_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_reportSecret123")
    (tmp_path / "torchrun.err").write_text("Traceback\nRuntimeError: bad token hf_reportSecret123\n")
    log_file = tmp_path / "run.log"
    assert report.report(tmp_path, str(log_file), 1) == 1
    kept = log_file.read_text()
    assert "hf_reportSecret123" not in kept and "bad token ****" in kept
    assert "hf_reportSecret123" not in capsys.readouterr().err


def test_cli_requeue_code_wins_over_an_earlier_failure(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "failed-0").write_bytes(record(1, 100, 0))
    (tmp_path / "failed-1").write_bytes(record(42, 200, 1))
    assert report.main(["--rc-dir", str(tmp_path), "--code", "1", "--requeue-code", "42"]) == 0
    assert capsys.readouterr().out.strip() == "42"
    assert report.main(["--rc-dir", str(tmp_path), "--code", "1"]) == 0
    assert capsys.readouterr().out.strip() == "1"
    assert report.main(["--rc-dir", str(tmp_path), "--code", "1", "--requeue-code", "x"]) == 2


def test_exception_line_after_init_process_group_has_torchs_rank_prefix() -> None:
    # Seen with torch 2.13 (gloo): after init_process_group every line of the
    # uncaught exception's traceback is prefixed "[rankN]: ".
    text = "\n".join([
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/tmp/t.py", line 6, in <module>',
        "[rank1]:     f()",
        '[rank1]:   File "/tmp/t.py", line 5, in f',
        '[rank1]:     raise Boom("bad shard 7")',
        "[rank1]: Boom: bad shard 7",
    ])
    assert report.exception_line(text) == "Boom: bad shard 7"


@pytest.mark.parametrize(("text", "expected"), [
    # torchrun's --tee prefix, with and without torch's own.
    ("[default0]:Traceback (most recent call last):\n[default0]:  File \"t.py\"\n"
     "[default0]:KeyError: 'w'\n", "KeyError: 'w'"),
    ("[default1]:[rank1]: Traceback (most recent call last):\n[default1]:[rank1]:   File \"t\"\n"
     "[default1]:[rank1]: RuntimeError: NCCL timeout\n", "RuntimeError: NCCL timeout"),
    # An exception whose name has no Error suffix, and one with no message.
    ("Traceback (most recent call last):\n  File \"t\"\nmypkg.Boom\n", "mypkg.Boom"),
    ("Traceback (most recent call last):\n  File \"t\"\nShardMissing: 7\n", "ShardMissing: 7"),
    # A syntax error: the caret lines are indented.
    ("Traceback (most recent call last):\n  File \"t.py\", line 3\n    foo(\n       ^\n"
     "SyntaxError: '(' was never closed\n", "SyntaxError: '(' was never closed"),
    # Chained: the last traceback's exception.
    ("Traceback (most recent call last):\n  File \"a\"\nKeyError: 'a'\n\nDuring handling of the "
     "above exception, another exception occurred:\n\nTraceback (most recent call last):\n"
     "  File \"b\"\nRuntimeError: second\n", "RuntimeError: second"),
    # An exception group (Python 3.11+).
    ("  + Exception Group Traceback (most recent call last):\n  |   File \"t\", line 1\n"
     "  | ExceptionGroup: eg (1 sub-exception)\n  +-+---------------- 1 ----------------\n"
     "    | ValueError: x\n    +------------------------------------\n",
     "ExceptionGroup: eg (1 sub-exception)"),
])
def test_exception_line_from_any_traceback_form(text: str, expected: str) -> None:
    assert report.exception_line(text) == expected


LAUNCHER_LOG = ("[2026-01-01T00:00:00Z] [NODE-0(host)] [INFO] launch configuration:\n"
                "step 1 loss 2.0\n"
                "Traceback (most recent call last):\n"
                '  File "train.py", line 3, in <module>\n'
                "RuntimeError: shard 7 missing\n"
                "[NODE-0(host)] [WARN] not a line of the workload\n")


def test_single_mode_report_names_the_process_its_exception_and_the_oom_hint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text(LAUNCHER_LOG)
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("0::/job\n")
    (tmp_path / "sys/fs/cgroup/job").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/job/memory.events").write_text("oom_kill 2\n")
    monkeypatch.setenv("PRIMUS_SYSFS_ROOT", str(tmp_path))
    monkeypatch.setenv("PRIMUS_DEV_ROOT", str(tmp_path))
    monkeypatch.setenv("NODE_RANK", "3")
    monkeypatch.delenv("RUN_MODE", raising=False)
    # No per-rank records, no torchrun: the mode says whose failure it is.
    assert report.main(["--rc-dir", str(tmp_path), "--log", str(log), "--code", "137",
                        "--mode", "single"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "137"
    assert ("failure report: the workload (run mode single: global rank 3, the one process of "
            "node 3) failed, exit code 137 (killed by SIGKILL).") in err
    assert "exception: RuntimeError: shard 7 missing" in err
    assert "| step 1 loss 2.0" in err and "not a line of the workload" not in err
    assert "launch configuration" not in err
    assert "hint: a rank killed by SIGKILL that the launcher did not stop was most often killed " \
           "by the kernel's out-of-memory killer" in err
    assert "cgroup /job memory.events: oom_kill 2" in err
    assert "torchrun" not in err


def test_single_mode_from_run_mode_and_its_own_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text("only output\n")
    monkeypatch.setenv("RUN_MODE", "single")
    monkeypatch.setenv("NODE_RANK", "0")
    assert report.main(["--rc-dir", str(tmp_path), "--log", str(log), "--code", "7"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "7"
    assert "global rank 0, the one process of node 0) failed, exit code 7." in err
    assert "hint:" not in err  # the out-of-memory hint is for SIGKILL only
