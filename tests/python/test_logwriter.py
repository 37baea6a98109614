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
    ([], "exactly one of --log"),
    (["--log", "a", "--log-fd", "3"], "exactly one of --log"),
    (["--log", "a", "--console-fd", "x"], "--console-fd takes a descriptor number"),
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


def test_a_rank_whose_file_is_full_sends_its_lines_on_prefixed(tmp_path: Path) -> None:
    console = tmp_path / "console"
    console.touch()
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        done = _run(["--log-fd", str(full), "--fallback", str(console), "--prefix", "[default0]:",
                     "--warn", str(console)], b"one\ntwo\nlast without newline", pass_fds=(full,))
    finally:
        os.close(full)
    assert done.returncode == 0
    text = console.read_text()
    assert "cannot write the log file /dev/full: no space left on device" in text
    assert text.endswith("[default0]:one\n[default0]:two\n[default0]:last without newline\n")


def test_whole_lines_holds_a_line_until_its_newline():
    from primus_runner.launch.logwriter import CHUNK, whole_lines

    assert whole_lines(b"", b"checkpoint saved: x.pt") == (b"", b"checkpoint saved: x.pt")
    assert whole_lines(b"checkpoint saved: x.pt", b"\nnext") == (b"checkpoint saved: x.pt\n", b"next")
    assert whole_lines(b"", b"a\nb\n") == (b"a\nb\n", b"")
    long = b"x" * CHUNK
    assert whole_lines(b"", long) == (long, b"")


def test_lines_mode_writes_whole_lines_and_a_prompt_after_a_pause(tmp_path):
    """A print under python -u is two writes (text, then newline); the lines arrive whole
    and a last line without a newline still arrives (after the writer's short wait)."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    writer = Path(__file__).resolve().parents[2] / "python" / "primus_runner" / "launch" / "logwriter.py"
    out = tmp_path / "rank.log"
    proc = subprocess.Popen([sys.executable, "-I", "-S", str(writer), "--log", str(out), "--lines"],
                            stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"checkpoint saved: x.pt")
    proc.stdin.flush()
    proc.stdin.write(b"\nprompt> ")
    proc.stdin.flush()
    def content() -> bytes:
        return out.read_bytes() if out.exists() else b""

    deadline = time.monotonic() + 10
    while content() != b"checkpoint saved: x.pt\nprompt> " and time.monotonic() < deadline:
        time.sleep(0.05)
    assert content() == b"checkpoint saved: x.pt\nprompt> "
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
