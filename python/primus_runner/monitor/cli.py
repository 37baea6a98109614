"""The run monitor's command line, as runner/lib/watchdog.sh starts it:

    python -m primus_runner.monitor LOG_FILE RUN_ID TIMEOUT ACTION LAUNCHER_PID RUN_MODE

stdin is a pipe only the launcher writes: end of file means the launch ended,
and the monitor exits. TIMEOUT is PRIMUS_HANG_TIMEOUT (the last resort: that
long without any progress signal is reported even when no verdict is
possible), ACTION is PRIMUS_HANG_ACTION (report | stop), RUN_MODE torchrun or
single. NNODES, NODE_RANK, PRIMUS_RC_DIR and PRIMUS_MONITOR_HELPERS (the
launch's helper processes, monitor/helpers.py) come from the environment. Stop
signals (INT, TERM, HUP, USR1, USR2) are ignored: the launcher's stop must not
cut the monitor's last lines; it ends with the launcher's pipe.
"""
from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Sequence

from primus_runner.facts import EXIT_INVALID
from primus_runner.monitor import helpers, verdicts
from primus_runner.monitor.act import Judge
from primus_runner.monitor.watch import OWN, Monitor, Settings

USAGE = "usage: python -m primus_runner.monitor LOG_FILE RUN_ID TIMEOUT ACTION LAUNCHER_PID RUN_MODE"


def settings(argv: Sequence[str], env: dict[str, str]) -> Settings:
    """The settings from the command line and the environment; ValueError names the culprit (pure)."""
    if len(argv) != 6:
        raise ValueError(f"expected 6 arguments, got {len(argv)}; {USAGE}")
    log_file, run_id, timeout, action, launcher, mode = argv
    if not timeout.isdigit() or not launcher.isdigit():
        raise ValueError(f"TIMEOUT ({timeout!r}) and LAUNCHER_PID ({launcher!r}) must be whole numbers; {USAGE}")
    if action not in ("report", "stop"):
        raise ValueError(f"ACTION {action!r}: accepted report or stop")
    nnodes, node = env.get("NNODES", "1"), env.get("NODE_RANK", "0")
    return Settings(log_file, run_id, float(timeout), action, int(launcher), mode,
                    int(nnodes) if nnodes.isdigit() else 1, int(node) if node.isdigit() else 0,
                    env.get("PRIMUS_RC_DIR", ""), log_file[:-4] + ".ranks" if log_file.endswith(".log")
                    else log_file + ".ranks", helpers.parse(env.get("PRIMUS_MONITOR_HELPERS", "")))


def run(monitor: Monitor, judge: Judge) -> None:
    """Look once a TICK until the launcher closes the pipe."""
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], verdicts.TICK)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            return  # end of file: the launch ended
        now = time.monotonic()
        judge.helpers()
        judge.rank_writers()
        monitor.discover(now)
        monitor.look(now)
        if monitor.stopping:
            continue
        monitor.sample(now)
        judge.tick(now)
        judge.stragglers(now)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print((__doc__ or "").strip())
        return 0
    try:
        chosen = settings(args, dict(os.environ))
    except ValueError as exc:
        sys.stderr.write(f"primus_runner.monitor: {exc}\n")
        return EXIT_INVALID
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGPIPE"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    OWN.stream = sys.stderr
    sys.stderr = OWN
    monitor = Monitor(chosen)
    judge = Judge(monitor)
    judge.note_pid()
    run(monitor, judge)
    return 0
