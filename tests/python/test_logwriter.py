"""The log writer: a log file that cannot be written (/dev/full: a real
ENOSPC) or a console that went away never fails the stream's writer."""
from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner.launch import logwriter

SCRIPT = Path(logwriter.__file__)
LINES = b"".join(b"line %d\n" % i for i in range(2000))


def _run(args: list[str], data: bytes = LINES, **kw: object) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PRIMUS_LOG_TIMESTAMP": "0", "PRIMUS_LOG_COLOR": "0"}
    return subprocess.run([sys.executable, "-I", "-S", str(SCRIPT), *args], input=data,
                          capture_output=True, env=env, timeout=60, check=False, **kw)  # type: ignore[call-overload]


def test_reason_and_prefixed_lines() -> None:
    assert logwriter.reason(OSError(errno.ENOSPC, "x")) == "no space left on device"
    out, rest = logwriter.prefixed(b"par", b"tial\nnext\nhalf", b"[default1]:")
    assert out == b"[default1]:partial\n[default1]:next\n"
    assert rest == b"half"
    assert logwriter.prefixed(b"", b"no newline", b"P:") == (b"", b"no newline")


@pytest.mark.parametrize("argv, word", [
    ([], "--log PATH is required"),
    (["--log", "a", "--log-fd", "3"], "unknown option '--log-fd'"),
    (["--log", "a", "--console-fd", "x"], "--console-fd takes a descriptor number"),
    (["--log", "a", "--stderr-fd", "5", "--warn-fd", "2x"], "--warn-fd takes a descriptor number"),
    (["--log", "a", "--stderr-console-fd", "4"], "--stderr-console-fd needs --stderr-fd"),
    (["--log"], "needs a value"),
    (["--bogus", "1"], "unknown option"),
])
def test_bad_arguments_are_exit_2(argv: list[str], word: str) -> None:
    done = _run(argv, b"")
    assert done.returncode == 2
    assert word in done.stderr.decode()


def test_full_log_file_the_console_gets_everything_and_one_warning(tmp_path: Path) -> None:
    done = _run(["--log", "/dev/full", "--console-fd", "1", "--warn-fd", "2"])
    assert done.returncode == 0
    assert done.stdout == LINES
    warning = done.stderr.decode()
    assert warning.count("cannot write the log file /dev/full: no space left on device") == 1
    assert "[WARN]" in warning


def test_one_warning_per_launch_among_writers_sharing_the_flag(tmp_path: Path) -> None:
    flag = tmp_path / "once"
    flag.touch()
    first = _run(["--log", "/dev/full", "--warn-fd", "2", "--once", str(flag)])
    second = _run(["--log", "/dev/full", "--warn-fd", "2", "--once", str(flag)])
    assert (first.returncode, second.returncode) == (0, 0)
    assert "no space left on device" in first.stderr.decode()
    assert second.stderr == b""
    assert not flag.exists()


def test_a_closed_console_never_cuts_the_log_file(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    read_end, write_end = os.pipe()
    os.close(read_end)  # the console went away (`| head` ended)
    try:
        done = _run(["--log", str(log), "--console-fd", str(write_end)], pass_fds=(write_end,))
    finally:
        os.close(write_end)
    assert done.returncode == 0
    assert done.stderr == b""
    assert log.read_bytes() == LINES


def test_one_process_copies_both_streams_to_the_log_and_each_to_its_console(tmp_path: Path) -> None:
    """The launcher's stdout (stdin here) and stderr (--stderr-fd) in one process:
    every byte of each in the log, each on its own console, until both end."""
    log = tmp_path / "run.log"
    err_r, err_w = os.pipe()
    out_console, err_console = tmp_path / "out", tmp_path / "err"
    with open(out_console, "wb") as out_c, open(err_console, "wb") as err_c:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(SCRIPT), "--log", str(log), "--console-fd", str(out_c.fileno()),
             "--stderr-fd", str(err_r), "--stderr-console-fd", str(err_c.fileno())],
            stdin=subprocess.PIPE, pass_fds=(err_r, out_c.fileno(), err_c.fileno()))
        os.close(err_r)
        assert proc.stdin is not None
        os.write(err_w, b"warning 1\n")
        proc.stdin.write(b"info 1\n")
        proc.stdin.close()            # stdout ends first: stderr is still read
        os.write(err_w, b"error 2\n")
        os.close(err_w)
        assert proc.wait(timeout=30) == 0
    assert out_console.read_bytes() == b"info 1\n"
    assert err_console.read_bytes() == b"warning 1\nerror 2\n"
    assert sorted(log.read_bytes().splitlines()) == [b"error 2", b"info 1", b"warning 1"]


def test_a_full_log_warns_once_for_both_streams(tmp_path: Path) -> None:
    err_r, err_w = os.pipe()
    os.write(err_w, b"to stderr\n")
    os.close(err_w)
    try:
        done = _run(["--log", "/dev/full", "--stderr-fd", str(err_r), "--warn-fd", "2"], pass_fds=(err_r,))
    finally:
        os.close(err_r)
    assert done.returncode == 0
    assert done.stderr.decode().count("cannot write the log file /dev/full") == 1
