"""The exit status of a Slurm step the launcher started: the task that ended first decides.

srun returns the highest exit status of its tasks (srun(1), "RETURN VALUE"), and
with ``--kill-on-bad-exit`` it ends every other task with SIGKILL as soon as one
exits non-zero (seen on Slurm 22.05: "task 0: Killed"). So when one node's
launcher refuses (exit 2) or a hook fails (exit 3), srun says 137 or 143: the
code of the nodes it killed, not of the failure. The launcher's exit codes are a
table (docs/exit-codes.md "Exit codes"), so the step's status follows the rule of the
failure report (launch/report.py): the task that ended first decides.

Both callers, ``primus-cli slurm srun`` (runner/lib/slurm_srun.sh) and the batch
script of ``primus-cli slurm sbatch`` (runner/lib/slurm_commands.sh), run it
through runner/helpers/step_exit.sh::

    step_exit.sh start               -> prints DIR (created; empty: none)
    step_exit.sh end DIR SRUN_STATUS -> prints the step's exit status; removes DIR

Between the two, srun's tasks see DIR as ``PRIMUS_STEP_EXITS``; the Slurm entry
(runner/primus-cli-slurm-entry.sh) writes ``task-<SLURM_PROCID>`` there when its
launcher ended non-zero on its own (not stopped by a signal): one line
``<end time, us since the epoch> <status> <node rank> <host>``. DIR lies in the
workspace (``PRIMUS_WORKSPACE``, else ./output), which the nodes share with their
logs and checkpoints; where it is not shared, no node writes there and srun's
own status stands.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from primus_runner import log
from primus_runner.records import dataclass

PREFIX = ".primus-step-exits."


@dataclass(frozen=True)
class TaskExit:
    """One task whose launcher ended non-zero on its own."""

    time_us: int
    code: int
    node: str
    host: str
    task: str


def parse(task: str, text: str) -> TaskExit | None:
    words = text.split()
    if len(words) != 4 or not words[0].isdigit() or not words[1].isdigit():
        return None
    return TaskExit(int(words[0]), int(words[1]), words[2], words[3], task)


def read_exits(directory: str) -> list[TaskExit]:
    found = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    for name in names:
        if not name.startswith("task-"):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as handle:
                record = parse(name[len("task-"):], handle.read())
        except OSError:
            continue
        if record is not None and record.code != 0:
            found.append(record)
    return found


def decide(srun_status: int, exits: Sequence[TaskExit]) -> tuple[int, str]:
    """(the step's exit status, the line that explains a change or '')."""
    if srun_status == 0 or not exits:
        return srun_status, ""
    first = min(exits, key=lambda e: (e.time_us, e.task))
    if first.code == srun_status:
        return srun_status, ""
    return first.code, (
        f"srun exit status {srun_status} is that of the tasks srun ended after the first failure: "
        f"task {first.task} (node {first.node}, {first.host}) ended first, its launcher with exit "
        f"status {first.code} (docs/exit-codes.md); exit status {first.code}.")


def start(env: Mapping[str, str]) -> str:
    """A new records directory in the workspace ('' when none can be made)."""
    import tempfile

    workspace = os.path.abspath(env.get("PRIMUS_WORKSPACE") or "output")
    try:
        os.makedirs(workspace, exist_ok=True)
        return tempfile.mkdtemp(prefix=PREFIX, dir=workspace)
    except OSError:
        return ""


def end(directory: str, srun_status: int) -> int:
    status, why = decide(srun_status, read_exits(directory))
    if why:
        log.warn(why)
    if os.path.basename(directory).startswith(PREFIX):
        import shutil

        shutil.rmtree(directory, ignore_errors=True)
    return status


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if args == ["start"]:
        print(start(os.environ))
        return 0
    if len(args) == 3 and args[0] == "end" and args[2].isdigit():
        print(end(args[1], int(args[2])) if args[1] else int(args[2]))
        return 0
    print("usage: step_exit start | step_exit end DIR SRUN_STATUS", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
