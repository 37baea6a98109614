"""Where a launch's time went: one waterfall line per node, and on node 0 the slowest node per phase.

The phases and what ends each one, as this process can observe it honestly:

- ``plan``: from the direct launcher's first line to the launch plan applied (the
  helper's records, the settings); ``layers``: the environment layers sourced;
  ``hooks``: the hooks and patches run; ``verdict``: the checks of the final
  environment (``env check``). The launcher notes each end with bash's
  ``EPOCHREALTIME`` (runner/lib/common.sh ``primus_phase_mark``) and hands the
  marks to this process in ``PRIMUS_LAUNCH_PHASES`` (``start=T plan=T ...``):
  no process started to time them.
- ``spawn``: the verdict's end to the start of the run's own process (the
  workload probe, the log, the run monitor's start, the command): the launcher
  writes ``phase spawn T`` on this process's stdin right after the fork
  (runner/lib/supervise.sh); a monitor restarted later reads the kernel's start
  time of the launcher's child that carries the run's ``PRIMUS_RUN_ID`` instead.
- ``rendezvous``: that start to the start of the first rank's process (run mode
  torchrun: torchrun starts its workers once every node joined the rendezvous;
  the kernel's start time of the first ``run_worker.sh`` in ``$PRIMUS_RC_DIR/worker.*``).
- ``first output``: the first rank's start to the first bytes any rank wrote
  (its pipe, which this process copies: monitor/output.py).

In run mode single the run's process is the rank and its output shares the
launcher's pipe: the line stops at ``spawn``. The line is printed once every
phase is known, or ``NO_OUTPUT_WAIT_S`` after the ranks started without a byte
(``first output`` then reads ``none yet``); a run that ended before that gets
no line (the launcher's closing line stays the last), only its record. Each phase is
a ``phase`` event in the node's run record (python/primus_runner/runrecord.py),
with ``job`` (SLURM_JOB_ID, else MASTER_ADDR:MASTER_PORT) so node 0 can tell
this job's records from older ones. With NNODES > 1, node 0 then reads the other
nodes' records beside its log (a shared filesystem, as the monitor's bundles:
monitor/nodes.py) for up to ``GATHER_WAIT_S`` and prints the slowest node per
phase, naming the nodes whose record it did not find. Standard library only.
"""
from __future__ import annotations

import contextlib
import os
import time

from primus_runner import runrecord
from primus_runner.monitor.members import parent_table
from primus_runner.procstat import read_environ

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from collections.abc import Callable, Mapping

ORDER = ("plan", "layers", "hooks", "verdict", "spawn", "rendezvous", "first_output")
LABELS = {"first_output": "first output"}
NO_OUTPUT_WAIT_S = 60.0   # after the ranks started: the line without a first output
GATHER_WAIT_S = 30.0      # node 0: for the other nodes' records
MATCH_WINDOW_S = 600.0    # a node's record counts when its launch started this close to node 0's


def label(phase: str) -> str:
    return LABELS.get(phase, phase)


def parse_marks(text: str) -> dict[str, float]:
    """``start=T plan=T ...`` (PRIMUS_LAUNCH_PHASES) as {name: Unix time}; bad words skipped (pure)."""
    marks: dict[str, float] = {}
    for word in text.split():
        name, _, value = word.partition("=")
        try:
            marks[name] = float(value.replace(",", "."))
        except ValueError:
            continue
    return marks


def spans(marks: Mapping[str, float]) -> list[tuple[str, float, float]]:
    """(phase, start, end) of each phase whose end is known, in ORDER; a phase
    starts where the last known one ended (pure)."""
    out: list[tuple[str, float, float]] = []
    if "start" not in marks:
        return out
    at = marks["start"]
    for phase in ORDER:
        end = marks.get(phase)
        if end is None:
            continue
        out.append((phase, at, max(end, at)))
        at = max(end, at)
    return out


def waterfall(found: list[tuple[str, float, float]], waiting: str = "") -> str:
    """The node's line (pure): ``launch phases: plan 0.04s | ...``; WAITING names a
    phase that did not end (``first output none yet``)."""
    parts = [f"{label(p)} {end - start:.2f}s" for p, start, end in found]
    if waiting:
        parts.append(f"{label(waiting)} none yet")
    return "launch phases: " + " | ".join(parts)


def slowest_line(per_node: Mapping[int, Mapping[str, float]], nnodes: int, waited: float) -> str:
    """Node 0's line (pure): per phase the slowest node and its time, and the fastest
    time; the nodes with no record named."""
    parts = []
    for phase in ORDER:
        times = {node: d[phase] for node, d in per_node.items() if phase in d}
        if not times:
            continue
        node = max(sorted(times), key=lambda n: times[n])
        text = f"{label(phase)} node {node} {times[node]:.2f}s"
        if len(times) > 1:
            text += f" (fastest {min(times.values()):.2f}s)"
        parts.append(text)
    missing = [n for n in range(nnodes) if n not in per_node]
    line = f"launch phases, slowest node of {nnodes}: " + " | ".join(parts)
    if missing:
        line += (f"; no record from node(s) {', '.join(map(str, missing))} after {waited:.0f} s "
                 "(logs not on a shared filesystem, or the node started late)")
    return line


def durations(events: list[dict[str, object]], job: str, start: float,
              window: float = MATCH_WINDOW_S) -> dict[int, dict[str, float]]:
    """{node: {phase: seconds}} of the ``phase`` events of JOB whose launch began
    within WINDOW of START (pure); per node the launch closest to START."""
    best: dict[int, tuple[float, dict[str, float]]] = {}
    launches: dict[tuple[int, float], dict[str, float]] = {}
    for item in events:
        node, begun = item.get("node"), item.get("launch_start")
        s, e, phase = item.get("start"), item.get("end"), item.get("phase")
        if (item.get("event") != "phase" or item.get("job") != job or not isinstance(node, int)
                or not isinstance(begun, (int, float)) or not isinstance(s, (int, float))
                or not isinstance(e, (int, float)) or not isinstance(phase, str)):
            continue
        if abs(begun - start) > window:
            continue
        launches.setdefault((node, float(begun)), {})[phase] = float(e) - float(s)
    for (node, begun), phases in launches.items():
        if node not in best or abs(begun - start) < best[node][0]:
            best[node] = (abs(begun - start), phases)
    return {node: phases for node, (_, phases) in best.items()}


def read_others(log_dir: str, own_record: str) -> list[dict[str, object]]:
    """Every event of every other record in LOG_DIR."""
    events: list[dict[str, object]] = []
    try:
        names = os.listdir(log_dir)
    except OSError:
        return events
    for name in names:
        path = os.path.join(log_dir, name)
        if name.endswith(runrecord.SUFFIX) and path != own_record:
            events.extend(runrecord.read(path))
    return events


def _clock_ticks() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        return 100


def started_at(pid: int, proc: str = "/proc") -> float | None:
    """PID's start as a Unix time (the kernel's start time in clock ticks since boot,
    placed against /proc/uptime); None when it is gone."""
    try:
        with open(f"{proc}/{pid}/stat", encoding="ascii", errors="replace") as handle:
            text = handle.read()
        with open(f"{proc}/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        now = time.time()
        ticks = int(text[text.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None
    return now - (uptime - ticks / _clock_ticks())


def job_key(env: Mapping[str, str]) -> str:
    """What ties the nodes of one job together (pure): the Slurm job, else the rendezvous address."""
    if env.get("SLURM_JOB_ID"):
        return f"slurm:{env['SLURM_JOB_ID']}"
    return f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}"


class Phases:
    """The monitor's side: ``tick`` once a monitor tick, ``finish`` at the run's end."""

    def __init__(self, env: Mapping[str, str], log_file: str, run_id: str, launcher: int, mode: str,
                 rc_dir: str, nnodes: int, node: int, first_output: Callable[[], float],
                 say: Callable[[str, str], None]) -> None:
        self.marks = parse_marks(env.get("PRIMUS_LAUNCH_PHASES", ""))
        self.log_file, self.run_id, self.launcher = log_file, run_id, launcher
        self.mode, self.rc_dir, self.nnodes, self.node = mode, rc_dir, nnodes, node
        self.first_output, self.say = first_output, say
        self.job = job_key(env)
        self.record = runrecord.record_path(log_file)
        self.printed = "verdict" not in self.marks or self._already_written()
        self.gather_until = 0.0   # node 0, NNODES > 1: looking for the other nodes' records until then
        self.gather_from = 0.0

    def _already_written(self) -> bool:
        """A restarted monitor: this launch's phases are in the record already."""
        return any(e.get("event") == "phase" and e.get("launch_start") == self.marks.get("start")
                   for e in runrecord.read(self.record))

    def _run_start(self) -> float | None:
        for pid, (ppid, _) in parent_table().items():
            if ppid != self.launcher or pid == os.getpid():
                continue
            env = read_environ(pid)
            if env is not None and env.get("PRIMUS_RUN_ID") == self.run_id:
                return started_at(pid)
        return None

    def _first_rank_start(self) -> float | None:
        starts = []
        try:
            names = [n for n in os.listdir(self.rc_dir) if n.startswith("worker.")] if self.rc_dir else []
        except OSError:
            names = []
        for name in names:
            try:
                with open(os.path.join(self.rc_dir, name), encoding="ascii") as handle:
                    pid = handle.read().strip()
            except OSError:
                continue
            at = started_at(int(pid)) if pid.isdigit() else None
            if at is not None:
                starts.append(at)
        return min(starts) if starts else None

    def told(self, line: bytes) -> None:
        """A line the launcher wrote on stdin: ``phase NAME UNIX_TIME``."""
        words = line.split()
        if len(words) == 3 and words[0] == b"phase" and words[1].decode("ascii", "replace") in ORDER:
            with contextlib.suppress(ValueError):
                self.marks[words[1].decode()] = float(words[2].replace(b",", b"."))

    def tick(self, now: float) -> None:
        if not self.printed:
            self._observe(now, ending=False)
        if self.gather_until:
            self._gather(now)

    def finish(self) -> None:
        """The launch ended: what is known goes to the record, no line (the launcher's
        closing line stays the last one)."""
        if not self.printed:
            self._observe(time.monotonic(), ending=True)
        self.gather_until = 0.0

    def _observe(self, now: float, ending: bool) -> None:
        if "spawn" not in self.marks:
            at = self._run_start()
            if at is None and not ending:
                return
            if at is not None:
                self.marks["spawn"] = at
        waiting = ""
        if self.mode == "torchrun" and "spawn" in self.marks:
            if "rendezvous" not in self.marks:
                at = self._first_rank_start()
                if at is None and not ending:
                    return
                if at is not None:
                    self.marks["rendezvous"] = at
            if "rendezvous" in self.marks:
                first = self.first_output()
                if first:
                    self.marks["first_output"] = first
                elif not ending and time.time() - self.marks["rendezvous"] < NO_OUTPUT_WAIT_S:
                    return
                else:
                    waiting = "first_output"
        self._publish(waiting, ending)

    def _publish(self, waiting: str, ending: bool = False) -> None:
        self.printed = True
        found = spans(self.marks)
        if not ending:  # the launcher's closing line stays the last line of the run
            self.say("INFO", waterfall(found, waiting))
        for phase, start, end in found:
            try:
                runrecord.append(self.log_file, "phase", phase=phase, start=start, end=end, job=self.job,
                                 launch_start=self.marks["start"], node=self.node)
            except OSError:
                break
        if self.node == 0 and self.nnodes > 1:
            self.gather_from = time.monotonic()
            self.gather_until = self.gather_from + GATHER_WAIT_S

    def _gather(self, now: float) -> None:
        others = durations(read_others(os.path.dirname(self.record) or ".", self.record), self.job,
                           self.marks["start"])
        others.pop(self.node, None)
        if len(others) < self.nnodes - 1 and now < self.gather_until:
            return
        self.gather_until = 0.0
        own = {phase: end - start for phase, start, end in spans(self.marks)}
        self.say("INFO", slowest_line({self.node: own, **others}, self.nnodes, now - self.gather_from))
