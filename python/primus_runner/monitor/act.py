"""The run monitor's judging and acting, on top of the loop's looks (watch.py).

Owns what happens with a verdict: printed once per episode (one line on the
launcher's stderr, which is its console and its log), every rank's stacks
dumped (``--native``) into a private bundle before anything is acted on (on a hang,
mismatch or multi-node wait also each rank's flight recorder, torch's analyzer on it
and the Neuron runtime's timeouts: monitor/flightrec.py), node 0 of a multi-node
launch gathering the other nodes' bundles into one table and one job-wide
flight-recorder verdict (monitor/nodes.py), and
with PRIMUS_HANG_ACTION=stop the launcher asked to stop the run (a file
``hang-stop`` in its rc directory, then SIGTERM: it exits 86). Also the last
resort (PRIMUS_HANG_TIMEOUT seconds with no signal at all) and the straggler
rounds. It must not decide what a verdict is (verdicts.py, straggler.py).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time

from primus_runner import log, runrecord
from primus_runner.diagnose.bundle import dump_run, new_bundle
from primus_runner.diagnose.cli import gather
from primus_runner.diagnose.pyspy import sample_stacks
from primus_runner.diagnose.runs import scan
from primus_runner.diagnose.summary import RankPlace, place_of
from primus_runner.facts import EXIT_HANG_STOPPED
from primus_runner.monitor import flightrec, nodes, straggler, verdicts
from primus_runner.monitor.watch import OWN, Counted, Monitor

PREFIX = "run monitor: "


def log_only(path: str, message: str, level: str = "INFO") -> None:
    """One line in the launcher's format to the log file only (not the console)."""
    try:
        handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        return
    saved = sys.stderr
    counted = Counted(handle)
    try:
        sys.stderr = counted
        log.emit(level, message)
    finally:
        sys.stderr = saved
        handle.close()
        OWN.written += counted.written


class Judge:
    """Verdicts into lines, dumps and (with stop) the launcher's stop."""

    def __init__(self, monitor: Monitor) -> None:
        self.m = monitor

    def say(self, level: str, message: str) -> None:
        """A line of the monitor's own: its stderr is the console and the log file (cli.py, watch.Both)."""
        log.emit(level, message)

    def record(self, event: str, **fields: object) -> None:
        """One event in the run's record beside the log (runrecord.py), for `primus-cli report`."""
        with contextlib.suppress(OSError, ValueError):
            runrecord.append(self.m.s.log_file, event, node=self.m.s.node, host=self.m.host, **fields)

    def verdict(self, verdict: verdicts.Verdict) -> None:
        self.record("verdict", verdict=verdict.kind, ranks=list(verdict.suspects), text=verdict.line)

    def current(self, verdict: verdicts.Verdict | None) -> None:
        """$PRIMUS_RC_DIR/verdict.json: the verdict of now, for `primus-cli stacks`."""
        line = verdict.line if verdict is not None else ""
        if not self.m.s.rc_dir or line == self.m.current:
            return
        self.m.current = line
        doc = {"kind": verdict.kind if verdict else "", "line": line, "suspects": list(verdict.suspects) if verdict
               else [], "time": time.time()}
        path = os.path.join(self.m.s.rc_dir, "verdict.json")
        with contextlib.suppress(OSError):
            with open(path + ".tmp", "w", encoding="utf-8") as handle:
                json.dump(doc, handle)
            os.replace(path + ".tmp", path)

    def tick(self, now: float) -> None:
        views = self.m.views(now)
        stopped = verdicts.stopped_verdict(views)
        self.current(stopped or verdicts.settled_verdict(views, self.m.s.nnodes)
                     or verdicts.working_verdict(views, {}))
        if stopped is not None:
            key: object = ("stopped", stopped.suspects)
            if key not in self.m.reported:
                self.m.reported.add(key)
                self.say("WARN", PREFIX + stopped.line)
                self.verdict(stopped)
            if stopped.actionable:
                self.act(stopped)
            return
        self.m.reported = {k for k in self.m.reported if not (isinstance(k, tuple) and k[0] == "stopped")}
        settled = verdicts.settled_verdict(views, self.m.s.nnodes)
        self.m.hung = settled is not None
        if settled is not None:
            key = ("settled", tuple((w.rank, w.signature) for w in self.m.ranks.values()))
            if key not in self.m.reported:
                self.m.reported.add(key)
                self.say("WARN", "\n".join([PREFIX + settled.line,
                                             *verdicts.table(views, self.m.s.node, self.m.host)]))
                self.verdict(settled)
                self.dump(f"{PREFIX}stacks of every local rank ({settled.kind} verdict)", now,
                          recorder=settled.kind in ("hang", "mismatch", "waiting"))
                if settled.actionable:
                    self.act(settled)
            return
        self.working(views, now)
        self.last_resort(views, now)

    def working(self, views: list[verdicts.RankView], now: float) -> None:
        if now < self.m.working_at:
            return
        busy = [v for v in views if v.exit_code < 0 and v.still_for < verdicts.STILL_AFTER]
        if verdicts.working_verdict(views, {}) is None:
            return
        places: dict[int, RankPlace] = {}
        for view in busy:
            watched = self.m.ranks.get(view.rank)
            threads, _ = sample_stacks(view.pid, watched.faulthandler_file if watched else "")
            if threads:
                places[view.rank] = place_of(view.rank, self.m.s.node, self.m.host, threads)
        self.m.rebaseline()
        verdict = verdicts.working_verdict(views, places)
        if verdict is not None:
            self.say("INFO", PREFIX + verdict.line)
            self.verdict(verdict)
            self.m.working_at = now + verdicts.WORKING_REPEAT

    def last_resort(self, views: list[verdicts.RankView], now: float) -> None:
        live = [v for v in views if v.exit_code < 0]
        if not live or self.m.s.timeout <= 0:
            return
        # Silence: no output and no heartbeat (CPU may still move: a spinning GPU wait
        # keeps a hung rank's host thread busy, which no verdict may call hung).
        silent = min(now - w.output_at for w in self.m.ranks.values()) if self.m.ranks else 0.0
        if silent < self.m.s.timeout or now < self.m.silent_at:
            return
        self.m.silent_at = now + self.m.s.timeout
        unread = [w.rank for w in self.m.ranks.values() if w.unread]
        busy = [v.rank for v in live if v.still_for < verdicts.STILL_AFTER]
        if all(v.settled for v in live):
            why = "every rank is idle outside a collective"
        elif busy:
            why = (f"rank(s) {','.join(map(str, busy))} still use CPU, switch or do I/O (a long silent step, or a "
                   "host thread spinning in a GPU wait: a hung collective on a GPU can look busy)")
        elif unread:
            why = f"the stacks of rank(s) {','.join(map(str, sorted(unread)))} cannot be read (py-spy, faulthandler)"
        else:
            why = (f"the stacks were not yet the same in {verdicts.SETTLE_SAMPLES} samples "
                   f"{verdicts.SAMPLE_GAP:.0f} s apart")
        self.say("WARN", f"{PREFIX}no output and no heartbeat from any local rank for {silent:.0f} s "
                 f"(PRIMUS_HANG_TIMEOUT={self.m.s.timeout:.0f}) and no hang verdict: {why}; "
                 "a report only, nothing is stopped")
        self.dump(f"{PREFIX}stacks of every local rank (no output for {silent:.0f} s)", now)

    def dump(self, heading: str, now: float, recorder: bool = False) -> None:
        """Every local rank's stacks into a new bundle; with RECORDER (a hang, mismatch or
        multi-node wait verdict) also each rank's flight recorder (asked first: it is
        written while the stacks are read), torch's analyzer on it, and on Neuron the
        runtime's timeouts. Node 0 of several then gathers the other nodes' bundles."""
        run = scan().get(self.m.s.run_id)
        if run is None:
            return
        since = time.time()
        asked = flightrec.request(run) if recorder else []
        bundle = new_bundle(run.log or self.m.s.log_file, "hang")
        if recorder:
            flightrec.mark(bundle, asked)  # before summary.json: node 0 then waits for the dumps
        places, lines, _ = dump_run(run, bundle)
        live = sum(1 for p in places if p.exit_code < 0)
        self.say("WARN", "\n".join([f"{heading}: {live} live rank(s)", *lines]))
        if recorder:
            found = [flightrec.flight_recorder(run, bundle, asked, since)]
            if self.m.s.nnodes > 1:
                # This node's ranks alone leave the analyzer short of the others'.
                found[0] += ("; this node's ranks only: node 0 gives the verdict over every node's dumps "
                             "('flight recorder, all nodes')")
            with contextlib.suppress(OSError):
                neuron = flightrec.record_neuron(run, bundle)
                if neuron:
                    found.append(neuron)
            self.summary(bundle, found)
        self.m.rebaseline()
        if self.m.s.nnodes > 1 and self.m.s.node == 0:
            start = min((w.moved_at for w in self.m.ranks.values()), default=now)
            since = time.time() - (time.monotonic() - start) - 60.0
            bundles: dict[int, str] = {}
            with contextlib.suppress(OSError):  # its lines go to stderr: gone with its writer
                found_nodes = gather(self.m.s.log_file, self.m.s.nnodes, since, nodes.GATHER_WAIT_S)
                bundles = {n: str(doc["bundle"]) for n, doc in found_nodes.items()}
            if recorder:
                python = flightrec.interpreter(asked[0].pid) if asked else sys.executable
                self.summary(bundle, [nodes.job_flight_recorder(self.m.s.nnodes, bundles, bundle, python)])
            self.m.rebaseline()

    def summary(self, bundle: str, found: list[str]) -> None:
        """FOUND appended to BUNDLE's summary.txt, and each a line on the console."""
        with contextlib.suppress(OSError), open(os.path.join(bundle, "summary.txt"), "a") as handle:
            handle.write("".join(f"  {line}\n" for line in found))
        for line in found:
            self.say("WARN", PREFIX + line)

    def act(self, verdict: verdicts.Verdict) -> None:
        if self.m.s.action != "stop" or self.m.stopping:
            return
        self.m.stopping = True
        if self.m.s.rc_dir and os.path.isdir(self.m.s.rc_dir):
            with contextlib.suppress(OSError):
                open(os.path.join(self.m.s.rc_dir, "hang-stop"), "w").close()
        self.say("WARN", f"{PREFIX}PRIMUS_HANG_ACTION=stop: stopping the run on the {verdict.kind} verdict "
                 f"(SIGTERM to the launcher, pid {self.m.s.launcher}); exit code {EXIT_HANG_STOPPED}.")
        with contextlib.suppress(OSError):
            os.kill(self.m.s.launcher, signal.SIGTERM)

    def stragglers(self, now: float) -> None:
        if now - self.m.round_start < straggler.ROUND_S:
            return
        self.m.round_start = now
        shares = {w.rank: w.waits / w.looks for w in self.m.ranks.values() if w.looks >= straggler.ROUND_S / 2}
        for watched in self.m.ranks.values():
            watched.looks = watched.waits = 0
        if self.m.hung:  # a hang is no straggler: the rounds start again after it
            self.m.history = []
            return
        if len(shares) < 2:
            return
        scores = straggler.scores(shares)
        self.m.history = [*self.m.history[-(straggler.ROUNDS - 1):], scores]
        self.m.rounds += 1
        self.record("straggler_scores", scores={str(r): round(v, 3) for r, v in scores.items()})
        if self.m.rounds % straggler.TABLE_ROUNDS == 0:
            log_only(self.m.s.log_file, f"{PREFIX}straggler scores (last {straggler.ROUND_S:.0f} s): "
                     + straggler.table(shares, scores))
        for rank in straggler.flagged(self.m.history):
            if rank not in self.m.named:
                self.m.named.add(rank)
                self.say("WARN", f"{PREFIX}straggler: rank {rank} is the one the others wait for: its score "
                         f"stayed at or above {straggler.THRESHOLD} for {straggler.ROUNDS} rounds of "
                         f"{straggler.ROUND_S:.0f} s "
                         f"(now {scores[rank]:.2f}: the others wait in "
                         f"{straggler.median([v for r, v in shares.items() if r != rank]):.0%} "
                         f"of their looks, it in {shares[rank]:.0%}); " + straggler.table(shares, scores))
                self.record("verdict", verdict="straggler", ranks=[rank],
                            text=f"{PREFIX}straggler: rank {rank} (score {scores[rank]:.2f})")
