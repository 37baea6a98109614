"""``python -m primus_runner restart-loop [--policy P] -- CMD...``: the closed loop around a launch.

``primus-cli direct`` hands itself to this command when PRIMUS_ON_FAILURE (or the config
key ``direct.on_failure``) is ``restart`` or ``stop`` (runner/lib/restart_loop.sh); with
``report``, the default, it is never started and nothing changes. The loop wraps the whole
launch of the ranks: one attempt is CMD (the launcher itself) run to its end, with

- ``PRIMUS_RESTART_COUNT`` (0, 1, ...) and ``PRIMUS_LEFT_OUT_NODES`` (comma list) set,
  for the launcher and the workload;
- ``PRIMUS_HANG_ACTION=stop``, so that a hang, a collective mismatch or a stopped rank
  that stays stopped ends the attempt (exit 86) once its stacks are dumped;
- on a restart of the embedded workload (``train pretrain``), ``--resume auto`` added to
  its arguments, so it goes on from its last checkpoint.

Every line of the attempt passes through unchanged (stdout to stdout, stderr to stderr)
and is read on the way (launch/restart.py: the monitor's verdicts, the failure report,
the workload's resume line and first step). When the attempt ends, launch/restart.py
decides: restart (the same command again, on the same host) or end. Every restart is one
line, ``restart N of MAX: ...`` with what failed, the verdict, the nodes left out and the
time lost (failure -> verdict -> stopped -> restarted -> first step done), written to the
console, to the attempt's log and as a ``restart`` event in its run record
(runrecord.py); the closing report sums the time lost and lists the left-out nodes. The
exit code is the last attempt's. A stop from outside (SIGTERM, SIGINT, SIGHUP to this
process) reaches the running launcher and ends the loop: it never restarts.

``--slurm`` (the batch script of ``primus-cli slurm sbatch`` with PRIMUS_ON_FAILURE=restart):
CMD is the batch script's ``srun ... primus-cli-slurm-entry.sh ...``; one attempt is one
Slurm step on the allocation's nodes minus the left-out ones (``--nodes``/``--nodelist``
set here; with PRIMUS_SLURM_SPARE_NODES=N spare nodes, the first step uses only the nodes
the job needs). A restart charges the nodes the failure names (the monitor's suspects'
nodes, the node of a rank killed by a signal), leaves a node out once it failed
PRIMUS_NODE_FAILURE_LIMIT times, runs ``primus-cli slurm doctor`` on the new node set (a
node it fails is left out too) and starts the next step. With too few healthy nodes left,
the job is requeued with the left-out nodes excluded (``scontrol update ExcNodeList``,
``scontrol requeue``), and the loop says so.

docs/restart-on-failure.md is the user's view.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from primus_runner import log, runrecord
from primus_runner.launch.restart import (
    Budget,
    Decision,
    Outcome,
    budget_from_env,
    decide,
    healthy_nodes,
    lost_text,
    observe,
    replace,
)
from primus_runner.launch.restart_slurm import doctor_pass, requeue_job, step_command
from primus_runner.masking import mask_text

PREFIX = "restart loop: "
RESUME_WORKLOADS = (("train", "pretrain"),)


def resume_args(cmd: Sequence[str]) -> list[str]:
    """What to add to CMD so that its workload resumes: ``--resume auto`` for the
    embedded workload that does not ask already, else nothing (pure)."""
    words = list(cmd)
    if "--resume" in words or any(w.startswith("--resume=") for w in words):
        return []
    for first, second in RESUME_WORKLOADS:
        if any(words[i] == first and words[i + 1] == second for i in range(len(words) - 1)):
            return ["--resume", "auto"]
    return []


def attempt_env(base: dict[str, str], attempt: int, budget: Budget) -> dict[str, str]:
    """The environment of one attempt (pure)."""
    env = dict(base)
    env["PRIMUS_RESTART_COUNT"] = str(attempt)
    env["PRIMUS_LEFT_OUT_NODES"] = ",".join(budget.left_out)
    env["PRIMUS_HANG_ACTION"] = "stop"
    env.setdefault("PRIMUS_ON_FAILURE", budget.policy)
    return env


def restart_line(attempt: int, budget: Budget, decision: Decision, outcome: Outcome, lost: float,
                 parts: str, resumed: Outcome | None) -> str:
    """The one line of a restart (pure)."""
    left = ",".join(decision.budget.left_out) or "none"
    verdict = outcome.verdict or "none"
    text = (f"{PREFIX}restart {attempt} of {budget.restart_max}: {decision.reason}: {decision.why}; "
            f"verdict: {verdict}; nodes left out: {left}; time lost {lost:.1f} s ({parts})")
    if resumed is not None and resumed.resumed_step >= 0:
        text += f"; resumed from step {resumed.resumed_step}: {resumed.resumed_file}"
    elif resumed is not None:
        text += "; the workload did not say which checkpoint it resumed from"
    return text


def closing_report(restarts: list[tuple[int, str, float]], decision: Decision, code: int) -> str:
    """The loop's closing report (pure)."""
    total = sum(lost for _, _, lost in restarts)
    left = ",".join(decision.budget.left_out)
    text = f"{PREFIX}{len(restarts)} restart(s)"
    if restarts:
        text += f" ({'; '.join(f'{n}: {reason}, {lost:.1f} s' for n, reason, lost in restarts)})"
    text += f", {total:.1f} s lost in all; "
    text += (f"left out for the rest of the job: {left} (for you to drain)" if left else "no node left out")
    if decision.reason != "success":
        text += f"; not restarted: {decision.why}"
    return text + f"; exit code {code}."


class Attempt:
    """One run of the command: its lines passed through and observed."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.outcome = Outcome()
        self.started = time.time()
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL)
        self.ended = 0.0

    def pump(self, on_first_step: Any = None) -> int:
        """Copy the command's output through, line by line observed; its exit code."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        sel = selectors.DefaultSelector()
        pending: dict[int, bytes] = {}
        targets = {self.proc.stdout.fileno(): sys.stdout.buffer, self.proc.stderr.fileno(): sys.stderr.buffer}
        for fd in targets:
            os.set_blocking(fd, True)
            sel.register(fd, selectors.EVENT_READ)
            pending[fd] = b""
        while sel.get_map():
            for key, _ in sel.select():
                fd = int(key.fd)
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    sel.unregister(fd)
                    if pending[fd]:
                        self._see(pending[fd], on_first_step)
                    continue
                with contextlib.suppress(OSError, ValueError):
                    targets[fd].write(chunk)
                    targets[fd].flush()
                *lines, pending[fd] = (pending[fd] + chunk).split(b"\n")
                for line in lines:
                    self._see(line, on_first_step)
        code = self.proc.wait()
        self.ended = time.time()
        code = 128 - code if code < 0 else code
        self.outcome = Outcome(**{**_values(self.outcome), "exit_code": code})
        return code

    def _see(self, raw: bytes, on_first_step: Any) -> None:
        had = self.outcome.first_step_at
        self.outcome = observe(self.outcome, raw.decode("utf-8", "replace"), time.time())
        if not had and self.outcome.first_step_at and on_first_step is not None:
            on_first_step(self)


def _values(outcome: Outcome) -> dict[str, Any]:
    from primus_runner.records import fields

    return {name: getattr(outcome, name) for name in fields(outcome)}


def failed_at(outcome: Outcome, ended: float) -> float:
    """When the failure began, as well as the lines tell (pure)."""
    if outcome.verdict_at:
        return outcome.verdict_at - outcome.still_s
    if outcome.first_at:
        return outcome.first_at
    return ended


class Loop:
    def __init__(self, cmd: list[str], budget: Budget, slurm: bool = False) -> None:
        self.cmd = cmd
        self.budget = budget
        self.current: Attempt | None = None
        self.stopped_by: int = 0
        self.restarts: list[tuple[int, str, float]] = []
        self.slurm = slurm
        self.pool: list[str] = []
        self.needed = 0
        if slurm:
            from primus_runner.scheduler import hostlist

            self.pool = hostlist.expand(os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST", ""))
            spares = int(os.environ.get("PRIMUS_SLURM_SPARE_NODES") or 0)
            self.needed = max(1, len(self.pool) - spares)

    def command(self, extra: list[str]) -> list[str]:
        if not self.slurm:
            return self.cmd + extra
        hosts = healthy_nodes(self.pool, self.budget, self.needed)
        log.info(f"{PREFIX}step on {len(hosts)} node(s): {','.join(hosts)}"
                 + (f" (left out: {','.join(self.budget.left_out)})" if self.budget.left_out else "")
                 + (f"; spare: {spare}" if (spare := ",".join(h for h in self.pool if h not in hosts
                                                             and h not in self.budget.left_out)) else ""))
        return step_command(self.cmd, hosts) + extra

    def doctor(self) -> None:
        """``primus-cli slurm doctor`` on the next step's nodes; a node it fails is left out."""
        hosts = healthy_nodes(self.pool, self.budget, self.needed)
        bad = doctor_pass(hosts)
        if bad:
            self.budget = replace(self.budget, left_out=tuple(dict.fromkeys([*self.budget.left_out, *bad])))

    def requeue(self, decision: Decision) -> int:
        """No healthy nodes left for the job's size: requeue it, the left-out nodes excluded."""
        return requeue_job(os.environ.get("SLURM_JOB_ID", ""), decision.budget.left_out)

    def on_signal(self, number: int, _frame: Any) -> None:
        self.stopped_by = number
        if self.current is not None and self.current.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.current.proc.send_signal(number)

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, self._handler(sig))
        # A job requeued by this loop (or by Slurm) starts again with SLURM_RESTART_COUNT > 0:
        # its restarts count against the same budget and the workload resumes.
        attempt = self.budget.restarts
        extra: list[str] = resume_args(self.cmd) if attempt else []
        pending: tuple[Decision, Outcome, float, float] | None = None  # the restart waiting for a first step
        base = dict(os.environ)
        while True:
            env = attempt_env(base, attempt, self.budget)
            if self.slurm and attempt:
                self.doctor()
                left = len(healthy_nodes(self.pool, self.budget, self.needed))
                if left < self.needed:
                    short = Decision(False, "doctor", f"after the doctor pass {left} healthy node(s) are left, "
                                     f"{self.needed} needed", budget=self.budget, requeue=True)
                    log.error(closing_report(self.restarts, short, 3))
                    return self.requeue(short) or 3
            cmd = self.command(extra)
            self.current = Attempt(cmd, env)
            restarted_at = self.current.started
            recorded: list[bool] = [False]

            def first_step(run: Attempt, pending: Any = pending, attempt: int = attempt,
                           restarted_at: float = restarted_at, recorded: list[bool] = recorded) -> None:
                if pending is not None:
                    self._record(attempt, pending, restarted_at, run.outcome.first_step_at, run.outcome)
                    recorded[0] = True

            code = self.current.pump(first_step)
            outcome = self.current.outcome
            if pending is not None and not recorded[0]:
                self._record(attempt, pending, restarted_at, 0.0, outcome)
            if self.stopped_by:
                outcome = Outcome(**{**_values(outcome), "outside_stop": True, "verdict_stop": False})
            decision = decide(outcome, self.budget, can_leave_out=self.slurm, pool=self.pool, needed=self.needed)
            if self.stopped_by and decision.restart:
                decision = Decision(False, "outside_stop", f"the loop was stopped by signal {self.stopped_by}",
                                    budget=self.budget)
            if decision.requeue:
                line = closing_report(self.restarts, decision, code)
                log.error(line)
                self._log_line(outcome.log_file, line, "ERROR")
                return self.requeue(decision) or code
            if not decision.restart:
                line = closing_report(self.restarts, decision, code)
                (log.info if code == 0 else log.error)(line)
                self._log_line(outcome.log_file, line, "INFO" if code == 0 else "ERROR")
                return code
            line = (f"{PREFIX}attempt {attempt} ended with exit code {code}: {decision.why}; restarting "
                    f"({decision.budget.restarts} of PRIMUS_RESTART_MAX={self.budget.restart_max})"
                    + (" with --resume auto" if resume_args(self.cmd) else ""))
            log.warn(line)
            self._log_line(outcome.log_file, line, "WARN")
            pending = (decision, outcome, failed_at(outcome, self.current.ended), self.current.ended)
            self.budget = decision.budget
            extra = resume_args(self.cmd)
            attempt += 1

    def _handler(self, sig: signal.Signals) -> Any:
        if sig in (signal.SIGUSR1, signal.SIGUSR2):
            def notice(_n: int, _f: Any) -> None:
                if self.current is not None and self.current.proc.poll() is None:
                    with contextlib.suppress(OSError):
                        self.current.proc.send_signal(sig)
            return notice
        return self.on_signal

    def _record(self, attempt: int, pending: tuple[Decision, Outcome, float, float], restarted_at: float,
                first_step_at: float, now: Outcome) -> None:
        decision, outcome, failed, stopped = pending
        lost, parts = lost_text(failed, outcome.verdict_at, stopped, restarted_at, first_step_at)
        line = restart_line(attempt, self.budget, decision, outcome, lost, parts, now)
        log.warn(line)
        self.restarts.append((attempt, decision.reason, lost))
        target = now.log_file or outcome.log_file
        self._log_line(target, line, "WARN")
        if target:
            with contextlib.suppress(OSError):
                runrecord.append(target, "restart", attempt=attempt, reason=decision.reason,
                                 left_out=list(decision.budget.left_out), lost_s=round(lost, 3),
                                 verdict=outcome.verdict, resumed_step=now.resumed_step,
                                 resumed_file=now.resumed_file)

    @staticmethod
    def _log_line(log_file: str, line: str, level: str) -> None:
        if not log_file:
            return
        stamp = time.strftime("[%Y-%m-%dT%H:%M:%SZ] ", time.gmtime())
        with contextlib.suppress(OSError), open(log_file, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp}{log.prefix()} [{level}] {mask_text(line)}\n")


def main(argv: list[str]) -> int:
    from primus_runner.usertext import plain

    parser = argparse.ArgumentParser(prog="python3 -m primus_runner restart-loop", description=plain(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", choices=("report", "stop", "restart"), default="",
                        help="PRIMUS_ON_FAILURE's value as the launcher resolved it (env > config)")
    parser.add_argument("--slurm", action="store_true",
                        help="CMD is the batch script's srun: each attempt a step on the healthy nodes")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the launch command")
    opts = parser.parse_args(argv)
    cmd = opts.cmd[1:] if opts.cmd[:1] == ["--"] else opts.cmd
    if not cmd:
        parser.error("no command after --")
    budget = budget_from_env(os.environ, opts.policy)
    requeued = (os.environ.get("SLURM_RESTART_COUNT") or "0").strip()
    if opts.slurm and requeued.isdigit() and int(requeued) > 0:
        budget = replace(budget, restarts=int(requeued))
    if budget.policy == "stop":
        budget = Budget(policy="stop", restart_max=0, node_limit=budget.node_limit)
    return Loop(cmd, budget, slurm=opts.slurm).run()
