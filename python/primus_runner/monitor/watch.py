"""The run monitor's loop: one look a second at every rank of this node's launch.

Owns the looking and the acting: it finds the ranks (diagnose/runs.py), reads
each main thread's kernel view once a second (procstat.py) and the output and
heartbeat files, samples the stacks of a rank whose signals stood still
(py-spy ``--nonblocking``: the rank is not paused) and keeps what it saw as
the views verdicts.py judges. act.py prints, dumps and acts; this module
must not decide what a verdict is (verdicts.py) nor stop anything.
"""
from __future__ import annotations

import os
import socket
import time

from primus_runner.diagnose.frames import Thread
from primus_runner.diagnose.pyspy import sample_stacks
from primus_runner.diagnose.runs import LiveRank, Run, ranks_of, scan
from primus_runner.diagnose.summary import RankPlace, main_thread, place_of
from primus_runner.monitor import verdicts
from primus_runner.procstat import Sample, read_sample
from primus_runner.records import dataclass


@dataclass
class Watched:
    """What the monitor keeps of one rank between looks."""

    rank: int
    pid: int
    faulthandler_file: str
    last: Sample | None = None
    output: tuple[float, ...] = ()
    moved_at: float = 0.0
    output_at: float = 0.0   # its output or heartbeat last changed (the last resort's clock)
    stopped_at: float = 0.0
    signature: tuple[tuple[str, str, int], ...] = ()
    same: int = 0
    next_sample: float = 0.0
    place: RankPlace | None = None
    looks: int = 0
    waits: int = 0
    unread: bool = False     # the last stack sample failed both ways


@dataclass
class Settings:
    log_file: str
    run_id: str
    timeout: float          # PRIMUS_HANG_TIMEOUT: the last resort (seconds)
    action: str             # report | stop
    launcher: int
    mode: str               # torchrun | single
    nnodes: int = 1
    node: int = 0
    rc_dir: str = ""
    ranks_dir: str = ""
    grace: int = 0          # PRIMUS_KILL_GRACE, from the command line: the guard's wait before SIGKILL (guard.py)


def _signature(threads: list[Thread]) -> tuple[tuple[str, str, int], ...]:
    thread = main_thread(threads)
    return tuple((f.name, f.filename, f.line) for f in thread.frames) if thread else ()


class Both:
    """The monitor's own lines: to the console (its stderr) and to the log file,
    each as far as it can; never a terminal (no colours in the log)."""

    def __init__(self, console: object, log_file: object) -> None:
        self.streams = (console, log_file)

    def write(self, text: str) -> int:
        for stream in self.streams:
            try:
                stream.write(text)  # type: ignore[attr-defined]
                stream.flush()  # type: ignore[attr-defined]
            except (OSError, ValueError):
                pass
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class Counted:
    """sys.stderr for the monitor: counts the bytes it writes, which land in the
    log file; in run mode single that file is also the rank's output (its own
    lines must not read as the rank's progress)."""

    def __init__(self, stream: object) -> None:
        self.stream = stream
        self.written = 0

    def write(self, text: str) -> int:
        self.written += len(text.encode("utf-8", "replace"))
        return self.stream.write(text)  # type: ignore[attr-defined, no-any-return]

    def flush(self) -> None:
        self.stream.flush()  # type: ignore[attr-defined]

    def isatty(self) -> bool:
        return bool(self.stream.isatty())  # type: ignore[attr-defined]


OWN = Counted(None)


def _mark(paths: list[str], shared: str = "", own: int = 0) -> tuple[float, ...]:
    """Size and time of each file; SHARED (the log in run mode single) by its size
    less OWN, the bytes the monitor itself wrote there."""
    out: list[float] = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            out.extend((-1.0, -1.0))
            continue
        if path == shared:
            out.extend((float(info.st_size - own), 0.0))
        else:
            out.extend((float(info.st_size), info.st_mtime))
    return tuple(out)


class Monitor:
    def __init__(self, settings: Settings) -> None:
        self.s = settings
        self.host = socket.gethostname().split(".")[0]
        self.ranks: dict[int, Watched] = {}
        self.ended: dict[int, int] = {}
        self.next_scan = 0.0
        self.reported: set[object] = set()
        self.working_at = 0.0
        self.silent_at = 0.0
        self.round_start = time.monotonic()
        self.history: list[dict[int, float]] = []
        self.named: set[int] = set()
        self.rounds = 0
        self.stopping = False
        self.hung = False
        self.current = ""   # the verdict line of now (act.py writes it for primus-cli stacks)
        self.shared_high = -1.0   # run mode single: the log's largest size less OWN seen

    # ----- finding and looking -------------------------------------------------
    def _outputs(self, rank: int) -> list[str]:
        paths = [os.path.join(self.s.ranks_dir, f"rank-{rank}.heartbeat")]
        if self.s.mode == "single":
            paths.append(self.s.log_file)
        else:
            paths.append(os.path.join(self.s.ranks_dir, f"rank-{rank}.log"))
        return paths

    def _workers(self) -> int:
        """How many ranks torchrun has started (run_worker.sh's worker.<RANK> files)."""
        try:
            return sum(1 for name in os.listdir(self.s.rc_dir) if name.startswith("worker."))
        except OSError:
            return 0

    def _output_mark(self, rank: int) -> tuple[float, ...]:
        if self.s.mode != "single":
            return _mark(self._outputs(rank))
        mark = list(_mark(self._outputs(rank), self.s.log_file, OWN.written))
        # OWN counts our bytes as we write them to the log (watch.Both); a write
        # that failed (a full disk) leaves the log's size less OWN below what it
        # was: only growth past the largest value seen is the rank's output.
        self.shared_high = max(self.shared_high, mark[2])
        mark[2] = self.shared_high
        return tuple(mark)

    def discover(self, now: float) -> None:
        if now < self.next_scan and (self.s.mode == "single" or self._workers() == len(self.ranks) + len(self.ended)):
            return
        run: Run | None = scan().get(self.s.run_id)
        live: list[LiveRank] = []
        if run is not None:
            live, self.ended = ranks_of(run)
        found = {r.rank: r for r in live}
        for rank in list(self.ranks):
            if rank not in found or found[rank].pid != self.ranks[rank].pid:
                del self.ranks[rank]
        for rank, info in found.items():
            if rank not in self.ranks:
                self.ranks[rank] = Watched(rank, info.pid, info.faulthandler_file, moved_at=now)
        # Often until the ranks are there, then now and then (an end); a new
        # worker file (a rank starting, a restart) asks for a scan at once.
        self.next_scan = now + (10.0 if self.ranks else 1.0)

    def look(self, now: float) -> None:
        for watched in list(self.ranks.values()):
            sample = read_sample(watched.pid, last=watched.last)
            if sample is None or sample.state in ("Z", "X"):
                self.next_scan = 0.0  # gone: find out how at the next scan
                continue
            output = self._output_mark(watched.rank)
            if output != watched.output or not watched.output_at:
                watched.output_at = now
            moved = watched.last is None or sample.moved_since(watched.last) or output != watched.output
            if moved:
                watched.moved_at = now
                watched.same = 0
                watched.signature = ()
                watched.next_sample = now + verdicts.STILL_AFTER
            watched.stopped_at = (watched.stopped_at or now) if sample.stopped else 0.0
            watched.last, watched.output = sample, output
            if not sample.stopped:
                watched.looks += 1
                watched.waits += int(sample.waiting)

    def rebaseline(self) -> None:
        """After our own signals or pauses (faulthandler, a --native dump): take the
        counters as they are now without counting that as progress."""
        for watched in self.ranks.values():
            sample = read_sample(watched.pid)
            if sample is not None:
                watched.last = sample
            watched.output = self._output_mark(watched.rank)

    def sample(self, now: float) -> None:
        for watched in list(self.ranks.values()):
            if watched.stopped_at or now - watched.moved_at < verdicts.STILL_AFTER or now < watched.next_sample:
                continue
            threads, how = sample_stacks(watched.pid, watched.faulthandler_file)
            if how == "faulthandler":
                sample = read_sample(watched.pid)
                watched.last = sample if sample is not None else watched.last
            watched.next_sample = now + verdicts.SAMPLE_GAP
            signature = _signature(threads)
            watched.unread = not signature
            if not signature:
                continue
            if signature == watched.signature:
                watched.same += 1
            else:
                watched.signature, watched.same = signature, 1
                if watched.place is not None:  # a new place after an earlier one: it moved
                    watched.moved_at = now
            watched.place = place_of(watched.rank, self.s.node, self.host, threads)

    def views(self, now: float) -> list[verdicts.RankView]:
        out: list[verdicts.RankView] = []
        for w in sorted(self.ranks.values(), key=lambda x: x.rank):
            still = now - w.moved_at
            settled = still >= verdicts.STILL_AFTER and w.same >= verdicts.SETTLE_SAMPLES
            out.append(verdicts.RankView(w.rank, w.pid, still, now - w.stopped_at if w.stopped_at else 0.0,
                                         settled, w.place if settled else None,
                                         verdicts.waits_op(w.place) if settled else ""))
        out.extend(verdicts.RankView(rank, 0, exit_code=code) for rank, code in sorted(self.ended.items())
                   if rank not in self.ranks)
        return out
