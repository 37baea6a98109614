"""slurm-requeue: whether a Slurm job is requeued when this node's run ends, and what
scontrol says of the job while it stops.

runner/lib/slurm_stop.sh asks it; the shell keeps the Slurm client calls
(`scontrol show job`, `scontrol requeue`) and the log lines.

  slurm-requeue reason --rc RC --code CODE [--notice SIG]
      Task 0 (SLURM_PROCID 0 or unset) prints why the job is requeued, then the
      line said before the requeue, one per line; nothing when it is not. Why:
      the run ended with CODE (PRIMUS_REQUEUE_EXIT_CODE); a task on another node
      ended with it (its marker appears within 2 s of a failed end); or a
      preemption notice SIG (USR1/USR2) came and the run ended cleanly, with
      PRIMUS_SLURM_REQUEUE=1 (slurm.requeue: true). Another task prints nothing
      and, when its run ended with CODE, leaves the marker for task 0: the file
      <PRIMUS_WORKSPACE, else ./output>/.primus-requeue-<job>-<restart>, in the
      workspace the nodes share with their logs and checkpoints; task 0
      removes it once it has decided.
  slurm-requeue job-now
      Reads one `scontrol show job -o` line on stdin and prints the job's state
      (JobState, '' when absent), a tab, and the restart number of its next run
      when the job was requeued while this run went on (Restarts=N above
      SLURM_RESTART_COUNT, else ''). scontrol counts the requeues in Restarts=N
      as soon as the requeue is ordered, before the job's processes get their
      SIGTERM (seen on the test cluster: Restarts=1 and JobState=COMPLETING
      0.1 s after `scontrol requeue`); sbatch(1): this run is restart
      SLURM_RESTART_COUNT (unset on the first run).
"""
from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Mapping

_COUNT = re.compile(r"[0-9]{1,9}", re.ASCII)
_STATE = re.compile(r"(?:^|\s)JobState=([A-Z_]+)")
_RESTARTS = re.compile(r"(?:^|\s)Restarts=([0-9]{1,9})")
MARKER_POLLS = 20
MARKER_POLL_S = 0.1

USAGE = ("usage: python3 -m primus_runner slurm-requeue reason --rc RC --code CODE [--notice SIG]\n"
         "       python3 -m primus_runner slurm-requeue job-now < LINE")


def restart_count(env: Mapping[str, str]) -> int:
    """This run's restart number (SLURM_RESTART_COUNT; 0 when unset or not a count)."""
    value = env.get("SLURM_RESTART_COUNT", "")
    return int(value, 10) if _COUNT.fullmatch(value) else 0


def marker_path(env: Mapping[str, str]) -> str:
    workspace = env.get("PRIMUS_WORKSPACE") or "./output"
    return f"{workspace}/.primus-requeue-{env.get('SLURM_JOB_ID', '')}-{env.get('SLURM_RESTART_COUNT') or '0'}"


def is_task_zero(env: Mapping[str, str]) -> bool:
    return env.get("SLURM_PROCID", "0") in ("", "0")


def reason(env: Mapping[str, str], rc: int, code: int, notice: str, marker_seen: Callable[[], bool]) -> str:
    """Task 0's reason to requeue ('' none). MARKER_SEEN is asked (it may wait) only
    when the run did not end with CODE itself."""
    if rc == code:
        return f"the workload exited with the requeue code {code} (PRIMUS_REQUEUE_EXIT_CODE)"
    if marker_seen():
        return f"a rank on another node exited with the requeue code {code}"
    if notice and rc == 0 and env.get("PRIMUS_SLURM_REQUEUE", "0") == "1":
        return f"preemption notice SIG{notice}, then a clean exit (slurm.requeue: true)"
    return ""


def announcement(env: Mapping[str, str], why: str) -> str:
    """The line said before the requeue (first: `scontrol requeue` ends this step at once)."""
    return (f"requeue: job {env.get('SLURM_JOB_ID', '')} is being requeued ({why}); its next run is "
            f"restart {restart_count(env) + 1}.")


def job_now(line: str, restarts_now: int) -> tuple[str, str]:
    """(JobState, next restart number or '') from one `scontrol show job -o` line."""
    state = _STATE.search(line)
    restarts = _RESTARTS.search(line)
    later = restarts is not None and int(restarts.group(1), 10) > restarts_now
    return (state.group(1) if state else "", str(int(restarts.group(1), 10)) if restarts and later else "")


def _marker_poll(path: str, failed: bool) -> Callable[[], bool]:
    """True once PATH exists; a failed end waits up to MARKER_POLLS x MARKER_POLL_S for it
    (the other node may still be writing it), a clean end looks once."""
    def seen() -> bool:
        import os

        for _ in range(MARKER_POLLS if failed else 1):
            if os.path.exists(path):
                return True
            if failed:
                time.sleep(MARKER_POLL_S)
        return False
    return seen


def _leave_marker(path: str) -> None:
    import os

    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError:
        pass  # task 0 then does not requeue for this node; its own end still counts


def _remove(path: str) -> None:
    import contextlib
    import os

    with contextlib.suppress(OSError):
        os.unlink(path)


def _reason_command(argv: list[str], env: Mapping[str, str]) -> int:
    options = {"--rc": "", "--code": "", "--notice": ""}
    for i in range(0, len(argv), 2):
        if argv[i] not in options or i + 1 >= len(argv):
            print(f"slurm-requeue: unknown or incomplete argument '{argv[i]}'\n{USAGE}", file=sys.stderr)
            return 2
        options[argv[i]] = argv[i + 1]
    if not (_COUNT.fullmatch(options["--rc"]) and _COUNT.fullmatch(options["--code"])):
        print(f"slurm-requeue: --rc and --code take exit codes\n{USAGE}", file=sys.stderr)
        return 2
    rc, code = int(options["--rc"], 10), int(options["--code"], 10)
    path = marker_path(env)
    if not is_task_zero(env):
        if rc == code:
            _leave_marker(path)
        return 0
    why = reason(env, rc, code, options["--notice"], _marker_poll(path, rc != 0))
    _remove(path)
    if why:
        print(why)
        print(announcement(env, why))
    return 0


def main(argv: list[str]) -> int:
    import os

    if not argv or argv[0] in ("-h", "--help"):
        print((__doc__ or "").strip() + "\n\n" + USAGE)
        return 0 if argv else 2
    if argv[0] == "reason":
        return _reason_command(argv[1:], os.environ)
    if argv[0] == "job-now" and len(argv) == 1:
        state, following = job_now(sys.stdin.read(), restart_count(os.environ))
        print(f"{state}\t{following}")
        return 0
    print(f"slurm-requeue: unknown call '{' '.join(argv)}'\n{USAGE}", file=sys.stderr)
    return 2
