"""The run monitor's writing of every rank's output (monitor/rankout.py): the
record's parsing, the console choice, and real pipes held by this process as a
wrapper would hold them: lines reach the file whole, the DONE pipe is told only
after the last line, a successor takes a pipe over, a full file never blocks."""
from __future__ import annotations

import os
import select
import time
from pathlib import Path

import pytest

from primus_runner.launch import logwriter
from primus_runner.monitor import rankout


@pytest.fixture(autouse=True)
def _one_warning_per_test() -> None:
    """A process warns once (logwriter.Writer.claim_warning): each test is a fresh launch."""
    logwriter._WARNED.clear()


def test_records_parse() -> None:
    source = rankout.parse("3", "101 12 13 1 /w/run.ranks/x/attempt_0/1/stdout.log\n")
    assert source == rankout.Source(3, 101, 12, 13, 1, "/w/run.ranks/x/attempt_0/1/stdout.log")
    spaced = rankout.parse("3", "101 12 13 1 /w/a file with spaces.log\n")
    assert spaced is not None and spaced.path == "/w/a file with spaces.log"
    assert rankout.parse("3", "101 12 13 1 /w/file") is None        # half written: no newline yet
    assert rankout.parse("3", "101 12 13 /w/file\n") is None        # a field missing
    assert rankout.parse("x", "101 12 13 1 /w/file\n") is None      # not a rank
    assert rankout.parse("3", "101 12 x3 1 /w/file\n") is None


def test_console_choice() -> None:
    assert rankout.shown("all", 5)
    assert rankout.shown("0,2", 2)
    assert not rankout.shown("0,2", 1)
    assert not rankout.shown("10", 1)
    assert not rankout.shown("", 0)


class Wrapper:
    """What run_worker.sh holds for one rank: the read end of the rank's pipe, both
    ends of the DONE pipe, and the record; the test writes as the rank."""

    def __init__(self, rc_dir: Path, rank: int, path: Path) -> None:
        self.read_fd, self.rank_w = os.pipe()
        self.done_r, self.done_w = os.pipe()
        (rc_dir / f"writer.{rank}").write_text(
            f"{os.getpid()} {self.read_fd} {self.done_w} {rank} {path}\n", encoding="utf-8")

    def done(self, wait: float) -> bytes:
        ready, _, _ = select.select([self.done_r], [], [], wait)
        return os.read(self.done_r, 16) if ready else b""

    def close(self) -> None:
        for fd in (self.read_fd, self.done_r, self.done_w):
            os.close(fd)


def wait_for(check: object, limit: float = 5.0) -> None:
    end = time.monotonic() + limit
    while not check():  # type: ignore[operator]
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_lines_reach_the_file_whole_and_done_comes_after_the_last(tmp_path: Path) -> None:
    out = tmp_path / "rank-0.log"
    out.write_bytes(b"")
    wrapper = Wrapper(tmp_path, 0, out)
    thread = rankout.RankOutput(str(tmp_path))
    thread.start()
    try:
        os.write(wrapper.rank_w, b"first line\nhalf ")
        wait_for(lambda: out.read_bytes() == b"first line\n")
        os.write(wrapper.rank_w, b"line\n")
        wait_for(lambda: out.read_bytes() == b"first line\nhalf line\n")
        assert wrapper.done(0.2) == b""           # the rank still runs: no DONE
        os.write(wrapper.rank_w, b"last, without a newline")
        os.close(wrapper.rank_w)                  # the rank ends
        assert wrapper.done(5.0) == rankout.DONE
        assert out.read_bytes() == b"first line\nhalf line\nlast, without a newline"
    finally:
        thread.stop()
        wrapper.close()
    assert not thread.is_alive()


def test_a_line_start_waits_for_its_newline_only_briefly(tmp_path: Path) -> None:
    out = tmp_path / "rank-1.log"
    wrapper = Wrapper(tmp_path, 1, out)
    thread = rankout.RankOutput(str(tmp_path))
    thread.start()
    try:
        os.write(wrapper.rank_w, b"Password? ")
        start = time.monotonic()
        wait_for(lambda: out.exists() and out.read_bytes() == b"Password? ")
        assert time.monotonic() - start < 1.0
    finally:
        os.close(wrapper.rank_w)
        thread.stop()
        wrapper.close()


def test_a_successor_takes_the_pipe_over_and_nothing_waiting_is_lost(tmp_path: Path) -> None:
    """The monitor killed: the rank's prints wait in the pipe the wrapper keeps
    open, and a new monitor copies them from the record."""
    out = tmp_path / "rank-2.log"
    wrapper = Wrapper(tmp_path, 2, out)
    first = rankout.RankOutput(str(tmp_path))
    first.start()
    os.write(wrapper.rank_w, b"a\n")
    wait_for(lambda: out.exists() and out.read_bytes() == b"a\n")
    first.ending.set()          # gone without reading on (as after a SIGKILL)
    first.join(5)
    os.write(wrapper.rank_w, b"b\nc\n")
    second = rankout.RankOutput(str(tmp_path))
    second.start()
    try:
        wait_for(lambda: out.read_bytes() == b"a\nb\nc\n")
        os.close(wrapper.rank_w)
        assert wrapper.done(5.0) == rankout.DONE
    finally:
        second.stop()
        wrapper.close()


def test_a_record_of_a_gone_wrapper_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "writer.0").write_text(f"999999999 5 6 0 {tmp_path / 'x.log'}\n", encoding="utf-8")
    thread = rankout.RankOutput(str(tmp_path))
    thread.scan()
    assert thread.streams == {} and thread.taken == set()


def test_a_file_that_cannot_grow_never_blocks_the_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/full: every write fails with ENOSPC; the pipe is still read to its end,
    the one warning of the launch names the file."""
    once = tmp_path / "once"
    once.write_text("")
    read_fd, rank_w = os.pipe()
    done_r, done_w = os.pipe()
    (tmp_path / "writer.0").write_text(f"{os.getpid()} {read_fd} {done_w} 0 /dev/full\n", encoding="utf-8")
    thread = rankout.RankOutput(str(tmp_path), once=str(once))
    thread.start()
    try:
        for _ in range(40):   # more than a pipe holds: a blocked copy would block here
            os.write(rank_w, b"x" * 4096 + b"\n")
        os.close(rank_w)
        ready, _, _ = select.select([done_r], [], [], 5.0)
        assert ready and os.read(done_r, 16) == rankout.DONE
    finally:
        thread.stop()
        for fd in (read_fd, done_r, done_w):
            os.close(fd)
    assert not once.exists()
    assert "cannot write the log file /dev/full: no space left on device" in capsys.readouterr().err


def test_whole_lines_holds_a_line_until_its_newline() -> None:
    assert rankout.whole_lines(b"", b"checkpoint saved: x.pt") == (b"", b"checkpoint saved: x.pt")
    assert rankout.whole_lines(b"checkpoint saved: x.pt", b"\nnext") == (b"checkpoint saved: x.pt\n", b"next")
    assert rankout.whole_lines(b"", b"a\nb\n") == (b"a\nb\n", b"")
    long = b"x" * rankout.CHUNK
    assert rankout.whole_lines(b"", long) == (long, b"")


def test_a_shown_rank_whose_file_is_full_sends_its_lines_to_the_console_prefixed(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """PRIMUS_CONSOLE_RANKS shows local rank 0: with its file full, its lines go to
    the monitor's stdout (the launcher's console), prefixed as torchrun does."""
    read_fd, rank_w = os.pipe()
    done_r, done_w = os.pipe()
    (tmp_path / "writer.4").write_text(f"{os.getpid()} {read_fd} {done_w} 0 /dev/full\n", encoding="utf-8")
    thread = rankout.RankOutput(str(tmp_path), console_ranks="0")
    thread.start()
    try:
        os.write(rank_w, b"one\ntwo\nlast without newline")
        os.close(rank_w)
        ready, _, _ = select.select([done_r], [], [], 5.0)
        assert ready and os.read(done_r, 16) == rankout.DONE
    finally:
        thread.stop()
        for fd in (read_fd, done_r, done_w):
            os.close(fd)
    captured = capfd.readouterr()
    assert captured.out.endswith("[default0]:one\n[default0]:two\n[default0]:last without newline\n")
