"""The stop grace under Slurm: how long a launcher waits between its SIGTERM and SIGKILL.

Facts (Debian 12 slurm-wlm 22.05, slurm.conf(5)): KillWait is "the interval, in
seconds, given to a job's processes between the SIGTERM and SIGKILL signals",
default 30 s. So that the launcher's SIGKILL never comes before a checkpoint
could finish and Slurm's never comes before the launcher's, the grace is, when
PRIMUS_KILL_GRACE is unset: KillWait - 3 s (KillWait - 1 s when KillWait <= 6 s),
at least 1 s; 27 s (Slurm's default 30 - 3) when ``scontrol show config`` did
not answer.

The Slurm entry (runner/primus-cli-slurm-entry.sh) reads KillWait once
(runner/lib/slurm_stop.sh) into PRIMUS_SLURM_KILLWAIT, the text after
``KillWait =`` ('' when scontrol did not answer), and the Python every launch
already runs decides from it: the launch helper (launch/helper.py: env
PRIMUS_KILL_GRACE and the note the launcher logs) and the container plan
(launch/container.py, for the host side). ``slurm-grace`` answers the stop
paths that run no launcher: `primus-cli slurm srun`'s parent on SIGTERM
(runner/lib/slurm_srun.sh) and an entry waiting out the grace after a stop sent
to its step alone (``--hold SIGNAL_AT_US``).
"""
from __future__ import annotations

import sys
import time
from collections.abc import Mapping

DEFAULT_KILLWAIT = 30  # slurm.conf(5)
KILLWAIT_VARIABLE = "PRIMUS_SLURM_KILLWAIT"


def killwait_seconds(text: str) -> int | None:
    """KillWait in seconds from the text after ``KillWait =`` ('30 sec'); None when it says none."""
    words = text.split()
    if words and words[0].isascii() and words[0].isdigit():
        return int(words[0])
    return None


def grace_of(kill_grace: str, killwait: int | None) -> tuple[int | str, str]:
    """(grace, why): PRIMUS_KILL_GRACE when set (as given), else from KILLWAIT
    (None: scontrol did not answer)."""
    if kill_grace:
        return kill_grace, f"stop grace {kill_grace} s (PRIMUS_KILL_GRACE)"
    if killwait is None:
        return (DEFAULT_KILLWAIT - 3,
                f"stop grace {DEFAULT_KILLWAIT - 3} s (scontrol show config did not answer: "
                f"Slurm's default KillWait {DEFAULT_KILLWAIT} s, minus 3 s)")
    grace = max(1, killwait - 3 if killwait > 6 else killwait - 1)
    return grace, (f"stop grace {grace} s (KillWait {killwait} s from scontrol show config, "
                   f"minus {killwait - grace} s)")


def launch_grace(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(PRIMUS_KILL_GRACE, why) for a launch the Slurm entry started
    (PRIMUS_VIA_SLURM_ENTRY=1): the user's PRIMUS_KILL_GRACE, else the one
    KillWait gives when the entry read it; None otherwise (a dry run, or no
    Slurm entry: the launcher's own default applies)."""
    if env.get("PRIMUS_VIA_SLURM_ENTRY") != "1":
        return None
    if env.get("PRIMUS_KILL_GRACE"):
        grace, why = grace_of(env["PRIMUS_KILL_GRACE"], None)
    elif KILLWAIT_VARIABLE in env:
        grace, why = grace_of("", killwait_seconds(env[KILLWAIT_VARIABLE]))
    else:
        return None
    return str(grace), why


def whole_seconds(grace: int | str) -> int:
    """The grace as a number of seconds; a PRIMUS_KILL_GRACE that is not (the
    launchers refuse it) counts as 27 s."""
    text = str(grace)
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 5 else DEFAULT_KILLWAIT - 3


def hold_left(grace: int, signal_at_us: int, now_us: int) -> str:
    """Seconds ('S.UUUUUU') until GRACE has passed since the signal; '' when it has."""
    left = signal_at_us + grace * 1_000_000 - now_us
    return f"{left // 1_000_000}.{left % 1_000_000:06d}" if left > 0 else ""


def main(argv: list[str]) -> int:
    """slurm-grace [--hold SIGNAL_AT_US]: one line, ``GRACE<TAB>WHY`` or, with
    --hold, ``GRACE<TAB>LEFT`` (LEFT '' when the grace has passed), from
    PRIMUS_KILL_GRACE and PRIMUS_SLURM_KILLWAIT."""
    import os

    if argv and (argv[0] != "--hold" or len(argv) != 2 or not argv[1].isdigit()):
        print("usage: python3 -m primus_runner slurm-grace [--hold SIGNAL_AT_US]", file=sys.stderr)
        return 2
    grace, why = grace_of(os.environ.get("PRIMUS_KILL_GRACE", ""),
                          killwait_seconds(os.environ.get(KILLWAIT_VARIABLE, "")))
    seconds = whole_seconds(grace)
    if argv:
        valid = str(seconds) == str(grace)  # a grace that is no number holds nothing
        left = hold_left(seconds, int(argv[1]), time.time_ns() // 1000) if valid else ""
        print(f"{seconds}\t{left}")
    else:
        print(f"{seconds}\t{why}")
    return 0
