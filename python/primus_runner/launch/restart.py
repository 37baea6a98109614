"""The closed loop's decision: after a run ended, restart it or not, leaving out which nodes, and why.

Pure functions only (no processes, no files): the loop driver (launch/restart_loop.py)
reads the run's console lines into an :class:`Outcome` with :func:`observe`, keeps the
job's :class:`Budget`, and asks :func:`decide`. docs/restart-on-failure.md is the user's
view; the policy and budget variables are the registry's (PRIMUS_ON_FAILURE,
PRIMUS_RESTART_MAX, PRIMUS_NODE_FAILURE_LIMIT, PRIMUS_RESTART_ON_STRAGGLER).

What restarts (with PRIMUS_ON_FAILURE=restart, within the budget):

- a hang verdict of the run monitor (the nodes of its suspect ranks are charged);
- a stopped rank that stays stopped (the monitor's ``stopped`` verdict, acted on);
- a rank that died by a signal (SIGKILL, SIGSEGV, ...) or was killed by the
  out-of-memory killer (the failure report's first failing rank, exit code 128+N);
- the run lost with torchrun (torchrun itself killed), not by a rank;
- a node whose launch failed its cluster check (:attr:`Outcome.check_failed`);
- a straggler verdict, only with PRIMUS_RESTART_ON_STRAGGLER=1.

What never restarts: success; a failure in the user's code (the first failing rank
ended with its own exit code 1-127: a Python exception, ``exit 1`` on every rank) —
it would fail again; a collective mismatch (the ranks call different collectives:
the code's own); the requeue code (the workload asked Slurm for a requeue); a stop
from outside (SIGTERM/SIGINT to the launcher, a Slurm cancel or time limit); a launch
refused before anything started (exit 1 or 2 with no rank failed).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from primus_runner.records import dataclass, fields

T = TypeVar("T")


def replace(record: T, **changes: Any) -> T:
    """A copy of the frozen RECORD with CHANGES (pure)."""
    values = {name: getattr(record, name) for name in fields(record)}
    values.update(changes)
    return type(record)(**values)

POLICIES = ("report", "stop", "restart")
RESTARTABLE = ("hang", "stopped", "signal", "lost", "cluster_check", "straggler")

# One launcher line: "[UTC] [NODE-R(host)] [LEVEL] message" (log.py's prefix; the stamp may be off).
_LINE = re.compile(r"^(?:\[[0-9T:\-]+Z\] )?\[NODE-(\d+)\(([^)]*)\)\] "
                   r"\[(?:\x1b\[[0-9;]*m)?([A-Z]+)(?:\x1b\[0m)?\] (.*)$")
_RANKS = re.compile(r"\branks? ([0-9][0-9,\-]*)")
_FAILED = re.compile(r"failure report: (?:global rank (\d+) \(local rank \d+ of node (\d+)\) failed first"
                     r"|the workload \(run mode single: global rank (\d+), the one process of node (\d+)\) failed)"
                     r", exit code (\d+)")
_LOST = re.compile(r"ended with exit code (\d+).*while \d+ process\(es\) of the run still ran|"
                   r"the run was lost with .*, not by a rank: exit code (\d+)")
_RESUMED = re.compile(r"\[train\] resumed from step (\d+): (\S.*?)\s*$")
_STEP = re.compile(r"\[train\] step (\d+)/\d+ loss")
_STILL = re.compile(r"(?:no progress for|\) for) (\d+) s")
_LOG_FILE = re.compile(r"\blog_file=(\S+\.log)\b")  # the launch summary's line
_NNODES = re.compile(r"\bNNODES=(\d+) NODE_RANK=\d+")
_LOG = re.compile(r"; log: (\S+\.log)\.?\s*$")


@dataclass(frozen=True)
class Outcome:
    """What one attempt of the run did, as its console lines and its exit code tell."""

    exit_code: int = -1                       # the launch's exit code (-1: still running)
    verdict: str = ""                         # hang | stopped | mismatch | straggler ("" none)
    verdict_text: str = ""                    # the monitor's line
    verdict_at: float = 0.0                   # when the verdict line came (0: none)
    still_s: float = 0.0                      # how long the ranks had not moved at the verdict
    suspects: tuple[int, ...] = ()            # the global ranks the verdict names
    suspect_nodes: tuple[str, ...] = ()       # the hosts whose monitor named them
    verdict_stop: bool = False                # the monitor stopped the run on the verdict
    first_rank: int = -1                      # the failure report's first failing rank
    first_code: int = 0                       # its exit code (128+N: signal N)
    first_node: str = ""                      # its host
    first_at: float = 0.0                     # when the failure report came
    failures: tuple[tuple[int, int, str], ...] = ()  # every node's report: (rank, code, host)
    exception: str = ""                       # the exception the report quotes
    lost_code: int = 0                        # the run lost with torchrun, not by a rank
    outside_stop: bool = False                # the launcher was stopped by a signal from outside
    check_failed: tuple[str, ...] = ()        # hosts whose launch failed its cluster check
    resumed_step: int = -1                    # the workload's resume line
    resumed_file: str = ""
    first_step_at: float = 0.0                # the first step done
    log_file: str = ""                        # the launch log the closing line names
    nnodes: int = 0                           # the launch's NNODES (its summary; 0: not seen)


@dataclass(frozen=True)
class Budget:
    """The job's policy and what it has spent (PRIMUS_ON_FAILURE and its budget)."""

    policy: str = "report"
    restart_max: int = 3
    node_limit: int = 1
    on_straggler: bool = False
    restarts: int = 0                         # restarts done so far
    node_failures: tuple[tuple[str, int], ...] = ()
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class Decision:
    restart: bool
    # success | user_code | mismatch | requeue | outside_stop | refused | policy | budget, or one of RESTARTABLE
    reason: str
    why: str               # one sentence for the log and the closing report
    charged: tuple[str, ...] = ()   # the hosts charged with this failure
    budget: Budget = Budget()       # the budget after it (failures counted, nodes left out)
    requeue: bool = False           # no healthy node left for the job's size: requeue excluding the left-out ones


def parse_ranks(text: str) -> tuple[int, ...]:
    """The ranks of ``0,2-3``-style lists after 'rank'/'ranks' in TEXT (pure)."""
    out: list[int] = []
    for found in _RANKS.finditer(text):
        for part in found.group(1).strip(",-").split(","):
            if "-" in part:
                low, _, high = part.partition("-")
                if low.isdigit() and high.isdigit():
                    out.extend(range(int(low), int(high) + 1))
            elif part.isdigit():
                out.append(int(part))
    return tuple(sorted(set(out)))


def _verdict(message: str) -> tuple[str, tuple[int, ...]] | None:
    """The verdict a run-monitor message gives, and its suspect ranks (pure)."""
    if not message.startswith("run monitor: "):
        return None
    body = message[len("run monitor: "):]
    if body.startswith("hang: "):
        head = body.split(", not in the collective", 1)[0] if ", not in the collective" in body else ""
        return "hang", parse_ranks(head)
    if body.startswith("stopped: "):
        return "stopped", parse_ranks(body.split(" stopped (state T", 1)[0])
    if body.startswith("collective mismatch: "):
        return "mismatch", ()
    if body.startswith("straggler: rank "):
        return "straggler", parse_ranks(body.split(" is the one", 1)[0])
    return None


def observe(outcome: Outcome, line: str, now: float) -> Outcome:
    """OUTCOME with what one console line of the run tells (pure)."""
    line = line.rstrip("\n")
    step = _STEP.search(line)
    if step:
        return outcome if outcome.first_step_at else replace(outcome, first_step_at=now)
    resumed = _RESUMED.search(line)
    if resumed:
        return replace(outcome, resumed_step=int(resumed.group(1)), resumed_file=resumed.group(2))
    nodes = _NNODES.search(line)
    if nodes and not outcome.nnodes:
        outcome = replace(outcome, nnodes=int(nodes.group(1)))
    named = _LOG_FILE.search(line)
    if named and not outcome.log_file:
        return replace(outcome, log_file=named.group(1))
    parsed = _LINE.match(line)
    if not parsed:
        return outcome
    host, message = parsed.group(2), parsed.group(4)
    log = _LOG.search(message)
    if log and not outcome.log_file:
        outcome = replace(outcome, log_file=log.group(1))
    found = _verdict(message)
    if found:
        kind, ranks = found
        if outcome.verdict and outcome.verdict != "straggler":
            if kind == outcome.verdict and host not in outcome.suspect_nodes and ranks:
                return replace(outcome, suspects=tuple(sorted({*outcome.suspects, *ranks})),
                               suspect_nodes=(*outcome.suspect_nodes, host))
            return outcome  # the first real verdict is the one acted on
        still = _STILL.search(message)
        return replace(outcome, verdict=kind, verdict_text=message[len("run monitor: "):], verdict_at=now,
                       still_s=float(still.group(1)) if still else 0.0, suspects=ranks, suspect_nodes=(host,))
    if "PRIMUS_HANG_ACTION=stop: stopping the run on the " in message:
        return replace(outcome, verdict_stop=True)
    failed = _FAILED.search(message)
    if failed:
        rank, code = int(failed.group(1) or failed.group(3)), int(failed.group(5))
        outcome = replace(outcome, failures=(*outcome.failures, (rank, code, host)))
        # Several nodes each report their own first failure: a death by a signal (not
        # torchrun's SIGTERM to the ranks it stops) is the cause, the others' errors
        # (a peer's connection closed) its consequence.
        if outcome.first_rank < 0 or (_signal_death(code) and not _signal_death(outcome.first_code)):
            return replace(outcome, first_rank=rank, first_code=code, first_node=host,
                           first_at=outcome.first_at or now, exception="" if outcome.first_rank >= 0 else
                           outcome.exception)
        return outcome
    if message.startswith("  exception: ") or message.strip().startswith("exception: "):
        return outcome if outcome.exception else replace(outcome, exception=message.strip()[len("exception: "):])
    lost = _LOST.search(message)
    if lost:
        return replace(outcome, lost_code=int(lost.group(1) or lost.group(2)), first_node=outcome.first_node or host)
    if message.startswith("stop: SIG") and not outcome.verdict_stop:
        return replace(outcome, outside_stop=True)
    return outcome


def _signal_death(code: int) -> bool:
    return code > 128 and code != 128 + 15


def observe_lines(lines: Iterable[str], outcome: Outcome | None = None, now: float = 0.0) -> Outcome:
    """OUTCOME (default: a new one) with every line of LINES observed (pure)."""
    out = outcome or Outcome()
    for line in lines:
        out = observe(out, line, now)
    return out


def classify(outcome: Outcome, requeue_code: int = 85) -> tuple[str, tuple[str, ...], str]:
    """What ended the run: (reason, hosts to charge, why in words) (pure).

    The reason is one of :data:`RESTARTABLE` or a reason that never restarts."""
    code = outcome.exit_code
    if code == 0:
        return "success", (), "the run succeeded"
    if outcome.check_failed:
        return "cluster_check", outcome.check_failed, ("the launch failed its cluster check on "
                                                       + ", ".join(outcome.check_failed))
    if outcome.verdict in ("hang", "stopped") and (outcome.verdict_stop or outcome.first_rank < 0):
        ranks = ",".join(map(str, outcome.suspects)) or "none named"
        return outcome.verdict, outcome.suspect_nodes, (f"the run monitor's {outcome.verdict} verdict "
                                                        f"(suspect ranks {ranks}): {outcome.verdict_text}")
    if outcome.verdict == "mismatch" and outcome.verdict_stop:
        return "mismatch", (), ("a collective mismatch (the ranks call different collectives) is the code's own: "
                                "it would happen again")
    if outcome.verdict == "straggler" and outcome.first_rank < 0 and not outcome.lost_code and code != requeue_code:
        return "straggler", outcome.suspect_nodes, f"the run monitor's straggler verdict: {outcome.verdict_text}"
    if code == requeue_code and outcome.first_rank < 0:
        return "requeue", (), f"the workload asked for a requeue (exit code {code}, PRIMUS_REQUEUE_EXIT_CODE)"
    if outcome.first_rank >= 0:
        first = outcome.first_code
        where = f"rank {outcome.first_rank}" + (f" on {outcome.first_node}" if outcome.first_node else "")
        if first > 128:
            return "signal", (outcome.first_node,) if outcome.first_node else (), (
                f"{where} was killed by signal {first - 128} (exit code {first}"
                + ("; SIGKILL: often the out-of-memory killer" if first == 137 else "") + ")")
        if first == requeue_code:
            return "requeue", (), f"{where} asked for a requeue (exit code {first}, PRIMUS_REQUEUE_EXIT_CODE)"
        told = f": {outcome.exception}" if outcome.exception else ""
        return "user_code", (), (f"a failure in the workload's own code ({where} failed first with exit code "
                                 f"{first}{told}): it would fail again")
    if outcome.lost_code:
        return "lost", (outcome.first_node,) if outcome.first_node else (), (
            f"the run was lost with torchrun, not by a rank (exit code {outcome.lost_code})")
    if outcome.outside_stop or code in (128 + 1, 128 + 2, 128 + 15):
        return "outside_stop", (), f"the launch was stopped from outside (exit code {code})"
    if code in (1, 2, 3):
        return "refused", (), (f"the launch ended before the workload ran (exit code {code}: a missing file, "
                               "a bad setting or a failing hook): it would end the same way")
    if code > 128:
        return "signal", (), f"the run ended by signal {code - 128} (exit code {code})"
    return "user_code", (), f"the workload failed with exit code {code}: it would fail again"


def _charge(budget: Budget, hosts: Iterable[str], can_leave_out: bool) -> Budget:
    counts = dict(budget.node_failures)
    left = list(budget.left_out)
    for host in dict.fromkeys(hosts):
        counts[host] = counts.get(host, 0) + 1
        if can_leave_out and counts[host] >= budget.node_limit and host not in left:
            left.append(host)
    return replace(budget, node_failures=tuple(sorted(counts.items())), left_out=tuple(left))


def decide(outcome: Outcome, budget: Budget, *, can_leave_out: bool = False, pool: Iterable[str] = (),
           needed: int = 0, requeue_code: int = 85) -> Decision:
    """Restart or not after OUTCOME, with BUDGET (pure).

    CAN_LEAVE_OUT: nodes can be left out (Slurm: a new step on other nodes); on one
    host (direct, srun) the restart reuses the same nodes. POOL: the allocation's hosts
    and NEEDED the job's node count: when fewer than NEEDED hosts of POOL are not left
    out, the decision is a requeue with the left-out hosts excluded."""
    reason, hosts, why = classify(outcome, requeue_code)
    if reason not in RESTARTABLE:
        return Decision(False, reason, why, budget=budget)
    if reason == "straggler" and not budget.on_straggler:
        return Decision(False, "policy", why + "; a straggler restarts only with PRIMUS_RESTART_ON_STRAGGLER=1",
                        budget=budget)
    if budget.policy != "restart":
        return Decision(False, "policy", f"{why}; PRIMUS_ON_FAILURE={budget.policy}: no restart", budget=budget)
    if not can_leave_out and outcome.nnodes > 1:
        return Decision(False, "multi_node", (f"{why}; a launch of {outcome.nnodes} nodes is not restarted node by "
                                              "node (the others would wait for it): under Slurm, submit with "
                                              "'primus-cli slurm sbatch', whose batch script restarts the job's "
                                              "steps"), budget=budget)
    after = _charge(budget, hosts, can_leave_out)
    if budget.restarts >= budget.restart_max:
        return Decision(False, "budget", (f"{why}; the restart budget is spent: {budget.restarts} of "
                                          f"PRIMUS_RESTART_MAX={budget.restart_max} restarts done"),
                        hosts, after)
    after = replace(after, restarts=budget.restarts + 1)
    pool_hosts = list(dict.fromkeys(pool))
    if can_leave_out and needed and pool_hosts:
        healthy = [h for h in pool_hosts if h not in after.left_out]
        if len(healthy) < needed:
            return Decision(False, reason, (f"{why}; {len(healthy)} healthy node(s) left of {len(pool_hosts)}, "
                                            f"{needed} needed: requeue with {','.join(after.left_out)} excluded"),
                            hosts, after, requeue=True)
    return Decision(True, reason, why, hosts, after)


def healthy_nodes(pool: Iterable[str], budget: Budget, needed: int) -> list[str]:
    """The first NEEDED hosts of POOL not left out (pure)."""
    return [h for h in dict.fromkeys(pool) if h not in budget.left_out][:needed]


def budget_from_env(env: Mapping[str, str], policy: str = "") -> Budget:
    """The budget from PRIMUS_ON_FAILURE / PRIMUS_RESTART_MAX / PRIMUS_NODE_FAILURE_LIMIT /
    PRIMUS_RESTART_ON_STRAGGLER (already checked by the registry); POLICY wins when given (pure)."""
    def number(name: str, default: int) -> int:
        value = (env.get(name) or "").strip()
        return int(value) if value.isdigit() else default

    chosen = policy or (env.get("PRIMUS_ON_FAILURE") or "report").strip() or "report"
    return Budget(policy=chosen, restart_max=number("PRIMUS_RESTART_MAX", 3),
                  node_limit=max(1, number("PRIMUS_NODE_FAILURE_LIMIT", 1)),
                  on_straggler=(env.get("PRIMUS_RESTART_ON_STRAGGLER") or "0").strip() == "1")


def lost_text(failed_at: float, verdict_at: float, stopped_at: float, restarted_at: float,
              first_step_at: float) -> tuple[float, str]:
    """Time lost by one restart, and its parts in words: failure -> verdict -> stopped ->
    restarted -> first step done (a part not seen is left out) (pure)."""
    marks = [("verdict", verdict_at), ("stopped", stopped_at), ("restarted", restarted_at),
             ("first step done", first_step_at)]
    parts = []
    prev = failed_at
    for name, when in marks:
        if when and prev:
            parts.append(f"{name} +{max(0.0, when - prev):.1f} s")
            prev = when
    last = first_step_at or restarted_at or stopped_at or verdict_at
    total = max(0.0, last - failed_at) if last and failed_at else 0.0
    return total, "failure -> " + (" -> ".join(parts) if parts else "(no marks)")
