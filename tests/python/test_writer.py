"""One stream's Writer (monitor/writer.py): a log file that cannot be written
(/dev/full: a real ENOSPC) or a console that went away never fails the stream's
writer; one warning per process, and per launch with a shared flag file."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from primus_runner.monitor import writer
from primus_runner.monitor.writer import Writer

LINES = b"".join(b"line %d\n" % i for i in range(2000))


@pytest.fixture(autouse=True)
def _fresh_process() -> None:
    """Each test is a process of its own for the one warning (Writer.claim_warning)."""
    writer._WARNED.clear()


def test_reason_and_prefixed_lines() -> None:
    assert writer.reason(OSError(errno.ENOSPC, "x")) == "no space left on device"
    out, rest = writer.prefixed(b"par", b"tial\nnext\nhalf", b"[default1]:")
    assert out == b"[default1]:partial\n[default1]:next\n"
    assert rest == b"half"
    assert writer.prefixed(b"", b"no newline", b"P:") == (b"", b"no newline")


def feed_all(w: Writer, data: bytes = LINES) -> None:
    for start in range(0, len(data), 4096):
        w.feed(data[start:start + 4096])
    w.finish()


def test_full_log_file_the_console_gets_everything_and_one_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    console = tmp_path / "console"
    with open(console, "wb") as out:
        full = os.open("/dev/full", os.O_WRONLY)
        try:
            feed_all(Writer(full, "/dev/full", out.fileno()))
        finally:
            os.close(full)
    assert console.read_bytes() == LINES
    assert capsys.readouterr().err.count("cannot write the log file /dev/full: no space left on device") == 1


def test_one_warning_per_launch_among_writers_sharing_the_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flag = tmp_path / "once"
    flag.touch()
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        feed_all(Writer(full, "/dev/full", None, once=str(flag)))
        assert "no space left on device" in capsys.readouterr().err
        writer._WARNED.clear()          # another process of the same launch
        feed_all(Writer(full, "/dev/full", None, once=str(flag)))
        assert capsys.readouterr().err == ""
    finally:
        os.close(full)
    assert not flag.exists()


def test_one_warning_per_process_without_a_flag(capsys: pytest.CaptureFixture[str]) -> None:
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        feed_all(Writer(full, "/dev/full", None))
        feed_all(Writer(full, "/dev/full", None))   # the launcher's other stream
    finally:
        os.close(full)
    assert capsys.readouterr().err.count("cannot write the log file") == 1


def test_a_closed_console_never_cuts_the_log_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    read_end, write_end = os.pipe()
    os.close(read_end)  # the console went away (`| head` ended)
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        feed_all(Writer(log_fd, str(log), write_end))
    finally:
        os.close(write_end)
        os.close(log_fd)
    assert log.read_bytes() == LINES
    assert capsys.readouterr().err == ""


def test_a_rank_whose_file_is_full_sends_its_lines_on_prefixed(tmp_path: Path) -> None:
    console = tmp_path / "console"
    console.touch()
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        feed_all(Writer(full, "/dev/full", None, str(console), b"[default0]:"), b"one\ntwo\nlast without newline")
    finally:
        os.close(full)
    assert console.read_text() == "[default0]:one\n[default0]:two\n[default0]:last without newline\n"
