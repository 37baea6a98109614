"""The run monitor's writing of every rank's output (monitor/output.py): the
record's parsing, the console choice, and real pipes held by this process as a
wrapper would hold them: lines reach the file whole, the DONE pipe is told only
after the last line, a successor takes a pipe over, a full file never blocks."""
from __future__ import annotations

import os
import select
import time
from pathlib import Path

import pytest

from primus_runner.monitor import output, writer


@pytest.fixture(autouse=True)
def _one_warning_per_test() -> None:
    """A process warns once (writer.Writer.claim_warning): each test is a fresh launch."""
    writer._WARNED.clear()


def test_records_parse() -> None:
    source = output.parse("3", "101 12 13 1 /w/run.ranks/x/attempt_0/1/stdout.log\n")
    assert source == output.Source(3, 101, 12, 13, 1, "/w/run.ranks/x/attempt_0/1/stdout.log")
    spaced = output.parse("3", "101 12 13 1 /w/a file with spaces.log\n")
    assert spaced is not None and spaced.path == "/w/a file with spaces.log"
    assert output.parse("3", "101 12 13 1 /w/file") is None        # half written: no newline yet
    assert output.parse("3", "101 12 13 /w/file\n") is None        # a field missing
    assert output.parse("x", "101 12 13 1 /w/file\n") is None      # not a rank
    assert output.parse("3", "101 12 x3 1 /w/file\n") is None


def test_console_choice() -> None:
    assert output.shown("all", 5)
    assert output.shown("0,2", 2)
    assert not output.shown("0,2", 1)
    assert not output.shown("10", 1)
    assert not output.shown("", 0)


class Wrapper:
    """What run_worker.sh holds for one rank: the read end of the rank's pipe, both
    ends of the DONE pipe, and the record; the test writes as the rank."""

    def __init__(self, rc_dir: Path, rank: int, path: Path) -> None:
        self.read_fd, self.rank_w = os.pipe()
        self.done_r, self.done_w = os.pipe()
        (rc_dir / f"writer.{rank}").write_text(
            f"{os.getpid()} {self.read_fd} {self.done_w} {rank} {path}\n", encoding="utf-8")

    def done(self, wait: float) -> bytes:
        """What the monitor said on the DONE pipe within WAIT seconds ("t" when it took
        the pipe, "d" once every line is written), up to the first "d"."""
        said = b""
        end = time.monotonic() + wait
        while not said.endswith(output.DONE):
            ready, _, _ = select.select([self.done_r], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                break
            said += os.read(self.done_r, 16)
        return said

    def close(self) -> None:
        for fd in (self.read_fd, self.done_r, self.done_w):
            os.close(fd)


def said(fd: int, wait: float = 5.0) -> bytes:
    """What was written to FD within WAIT seconds, up to the first DONE."""
    out = b""
    end = time.monotonic() + wait
    while not out.endswith(output.DONE):
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            break
        out += os.read(fd, 16)
    return out


def wait_for(check: object, limit: float = 5.0) -> None:
    end = time.monotonic() + limit
    while not check():  # type: ignore[operator]
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_lines_reach_the_file_whole_and_done_comes_after_the_last(tmp_path: Path) -> None:
    out = tmp_path / "rank-0.log"
    out.write_bytes(b"")
    wrapper = Wrapper(tmp_path, 0, out)
    thread = output.Output(str(tmp_path))
    thread.start()
    try:
        os.write(wrapper.rank_w, b"first line\nhalf ")
        wait_for(lambda: out.read_bytes() == b"first line\n")
        os.write(wrapper.rank_w, b"line\n")
        wait_for(lambda: out.read_bytes() == b"first line\nhalf line\n")
        assert wrapper.done(0.2) == output.TAKEN     # the rank still runs: taken, not done
        os.write(wrapper.rank_w, b"last, without a newline")
        os.close(wrapper.rank_w)                  # the rank ends
        assert wrapper.done(5.0) == output.DONE
        assert out.read_bytes() == b"first line\nhalf line\nlast, without a newline"
    finally:
        thread.stop()
        wrapper.close()
    assert not thread.is_alive()


def test_a_line_start_waits_for_its_newline_only_briefly(tmp_path: Path) -> None:
    out = tmp_path / "rank-1.log"
    wrapper = Wrapper(tmp_path, 1, out)
    thread = output.Output(str(tmp_path))
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
    first = output.Output(str(tmp_path))
    first.start()
    os.write(wrapper.rank_w, b"a\n")
    wait_for(lambda: out.exists() and out.read_bytes() == b"a\n")
    first.ending.set()          # gone without reading on (as after a SIGKILL)
    first.join(5)
    os.write(wrapper.rank_w, b"b\nc\n")
    second = output.Output(str(tmp_path))
    second.start()
    try:
        wait_for(lambda: out.read_bytes() == b"a\nb\nc\n")
        os.close(wrapper.rank_w)
        assert wrapper.done(5.0) == output.TAKEN + output.TAKEN + output.DONE   # each monitor took it
    finally:
        second.stop()
        wrapper.close()


def test_a_record_of_a_gone_wrapper_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "writer.0").write_text(f"999999999 5 6 0 {tmp_path / 'x.log'}\n", encoding="utf-8")
    thread = output.Output(str(tmp_path))
    thread.scan()
    assert thread.streams == {} and thread.taken == set()


def rank_to_full(tmp_path: Path, chunks: list[bytes], console_ranks: str = "", once: str | None = None) -> None:
    """Local rank 0 whose file is /dev/full (every write: ENOSPC) writes CHUNKS and
    ends; a blocked copy would block the writes, and the monitor must answer."""
    read_fd, rank_w = os.pipe()
    done_r, done_w = os.pipe()
    (tmp_path / "writer.0").write_text(f"{os.getpid()} {read_fd} {done_w} 0 /dev/full\n", encoding="utf-8")
    thread = output.Output(str(tmp_path), console_ranks, once)
    thread.start()
    try:
        for chunk in chunks:
            os.write(rank_w, chunk)
        os.close(rank_w)
        assert said(done_r) == output.TAKEN + output.DONE
    finally:
        thread.stop()
        for fd in (read_fd, done_r, done_w):
            os.close(fd)


def test_a_file_that_cannot_grow_never_blocks_the_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/full: every write fails with ENOSPC; the pipe is still read to its end,
    the one warning of the launch names the file."""
    once = tmp_path / "once"
    once.write_text("")
    rank_to_full(tmp_path, [b"x" * 4096 + b"\n"] * 40, once=str(once))  # more than a pipe holds
    assert not once.exists()
    assert "cannot write the log file /dev/full: no space left on device" in capsys.readouterr().err


def test_whole_lines_holds_a_line_until_its_newline() -> None:
    assert output.whole_lines(b"", b"checkpoint saved: x.pt") == (b"", b"checkpoint saved: x.pt")
    assert output.whole_lines(b"checkpoint saved: x.pt", b"\nnext") == (b"checkpoint saved: x.pt\n", b"next")
    assert output.whole_lines(b"", b"a\nb\n") == (b"a\nb\n", b"")
    long = b"x" * writer.CHUNK
    assert output.whole_lines(b"", long) == (long, b"")


def test_a_shown_rank_whose_file_is_full_sends_its_lines_to_the_console_prefixed(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """PRIMUS_CONSOLE_RANKS shows local rank 0: with its file full, its lines go to
    the monitor's stdout (the launcher's console), prefixed as torchrun does."""
    rank_to_full(tmp_path, [b"one\ntwo\nlast without newline"], console_ranks="0")
    captured = capfd.readouterr()
    assert captured.out.endswith("[default0]:one\n[default0]:two\n[default0]:last without newline\n")


def test_launcher_pipes_parse() -> None:
    assert output.parse_pipes("11 12 0") == output.LauncherPipes(11, 12, False)
    assert output.parse_pipes("11 12 1") == output.LauncherPipes(11, 12, True)
    assert output.parse_pipes("") is None
    assert output.parse_pipes("11 12") is None
    assert output.parse_pipes("11 x 0") is None
    assert output.parse_pipes("11 12 2") is None


def test_the_launchers_streams_reach_the_log_and_their_consoles_and_a_successor_takes_over(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """This process is the launcher: it holds both pipes' read ends (by number, as
    PRIMUS_MONITOR_OUTPUT names them); what waits in a pipe while no monitor
    runs is taken over by the next one."""
    log = tmp_path / "run.log"
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pipes = output.LauncherPipes(out_r, err_r, False)
    first = output.Output("", launcher=output.open_launcher(pipes, str(log), None))
    first.start()
    os.write(out_w, b"info line\n")
    os.write(err_w, b"warn line\n")
    wait_for(lambda: log.exists() and len(log.read_bytes().splitlines()) == 2)
    first.ending.set()            # gone (as after a SIGKILL): the pipes stay open here
    first.join(5)
    os.write(out_w, b"while nobody reads\n")
    second = output.Output("", launcher=output.open_launcher(pipes, str(log), None))
    second.start()
    wait_for(lambda: b"while nobody reads" in log.read_bytes())
    os.close(out_w)
    os.close(err_w)
    second.stop()
    assert not second.is_alive()
    os.close(out_r)
    os.close(err_r)
    assert sorted(log.read_bytes().splitlines()) == [b"info line", b"warn line", b"while nobody reads"]
    captured = capfd.readouterr()
    assert "info line\n" in captured.out and "while nobody reads\n" in captured.out
    assert "warn line\n" in captured.err and "info line" not in captured.err


def test_silent_keeps_stdout_off_the_console(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    thread = output.Output("", launcher=output.open_launcher(
        output.LauncherPipes(out_r, err_r, True), str(log), None))
    thread.start()
    os.write(out_w, b"to the file only\n")
    os.close(out_w)
    os.close(err_w)
    thread.stop()
    os.close(out_r)
    os.close(err_r)
    assert log.read_bytes() == b"to the file only\n"
    assert "to the file only" not in capfd.readouterr().out
