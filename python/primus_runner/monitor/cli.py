"""The run monitor's command line, as runner/lib/watchdog.sh starts it:

    python -m primus_runner.monitor LOG_FILE RUN_ID TIMEOUT ACTION LAUNCHER_PID RUN_MODE GRACE

One process per node beside the workload: the run monitor, the run's
parent-death guard and the writer of every output stream of the run
(monitor/output.py, a thread): the launcher's stdout and stderr (torchrun's,
and the workload's in run mode single) to the console and the log file, and in
run mode torchrun each rank's output to its file under ``<log>.ranks/``. Its
stdout and stderr are the launcher's console; its own lines go to the console
and the log. stdin is a pipe only the launcher writes: it writes ``done``
before it ends on purpose, and the monitor copies what the pipes still hold
and exits; ``phase NAME UNIX_TIME`` lines before it are launch phase ends
(monitor/phases.py). End of file without it, with the launcher gone (SIGKILL, the OOM
killer), makes it the guard (monitor/guard.py): the ranks got SIGTERM from the
parent-death signal; it waits GRACE seconds (PRIMUS_KILL_GRACE), SIGKILLs what
is left of the run and writes the closing line. TIMEOUT is PRIMUS_HANG_TIMEOUT
(the last resort: that long without any progress signal is reported even when
no verdict is possible; 0 turns the verdicts off, the guard and the output
stay), ACTION is PRIMUS_HANG_ACTION (report | stop), RUN_MODE torchrun or
single. NNODES, NODE_RANK, PRIMUS_RC_DIR, PRIMUS_MONITOR_OUTPUT (the
launcher's pipes: ``OUT_FD ERR_FD SILENT``), PRIMUS_CONSOLE_RANKS and
PRIMUS_LOG_ONCE (output.py) and PRIMUS_LAUNCH_PHASES (the launcher's phase
marks, monitor/phases.py: the waterfall line) come from the environment. Stop signals (INT, TERM,
HUP, USR1, USR2) are ignored: the launcher's stop must not cut the monitor's
last lines; it ends with the launcher's ``done``.
"""
from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Sequence

from primus_runner.facts import EXIT_INVALID
from primus_runner.monitor import guard, verdicts
from primus_runner.monitor.act import Judge
from primus_runner.monitor.output import LauncherPipes, Output, open_launcher, parse_pipes
from primus_runner.monitor.phases import Phases
from primus_runner.monitor.watch import OWN, Both, Monitor, Settings

USAGE = "usage: python -m primus_runner.monitor LOG_FILE RUN_ID TIMEOUT ACTION LAUNCHER_PID RUN_MODE GRACE"


def settings(argv: Sequence[str], env: dict[str, str]) -> Settings:
    """The settings from the command line and the environment; ValueError names the culprit (pure)."""
    if len(argv) != 7:
        raise ValueError(f"expected 7 arguments, got {len(argv)}; {USAGE}")
    log_file, run_id, timeout, action, launcher, mode, grace = argv
    if not timeout.isdigit() or not launcher.isdigit() or not grace.isdigit():
        raise ValueError(f"TIMEOUT ({timeout!r}), LAUNCHER_PID ({launcher!r}) and GRACE ({grace!r}) "
                         f"must be whole numbers; {USAGE}")
    if action not in ("report", "stop"):
        raise ValueError(f"ACTION {action!r}: accepted report or stop")
    nnodes, node = env.get("NNODES", "1"), env.get("NODE_RANK", "0")
    return Settings(log_file, run_id, float(timeout), action, int(launcher), mode,
                    int(nnodes) if nnodes.isdigit() else 1, int(node) if node.isdigit() else 0,
                    env.get("PRIMUS_RC_DIR", ""), log_file[:-4] + ".ranks" if log_file.endswith(".log")
                    else log_file + ".ranks", int(grace))


def run(monitor: Monitor, judge: Judge, phases: Phases | None = None) -> bool:
    """Look once a TICK until the launcher's pipe ends: True when it said ``done``."""
    said = b""
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], verdicts.TICK)
        if ready:
            data = os.read(sys.stdin.fileno(), 4096)
            if not data:
                return False  # end of file without "done": the launcher died
            *lines, said = (said + data).split(b"\n")
            said = said[-256:]
            for line in lines:
                if line == b"done":
                    return True
                if phases is not None:
                    phases.told(line)   # "phase NAME UNIX_TIME" (monitor/phases.py)
        now = time.monotonic()
        if phases is not None:
            phases.tick(now)
        if monitor.s.timeout <= 0:
            continue  # PRIMUS_HANG_TIMEOUT=0: no verdicts
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
    pipes = parse_pipes(os.environ.get("PRIMUS_MONITOR_OUTPUT", ""))
    close_inherited(pipes)
    output = start_output(chosen, pipes)
    OWN.stream = Both(sys.stderr, own_log(chosen.log_file))
    sys.stderr = OWN
    monitor = Monitor(chosen)
    judge = Judge(monitor)
    phases = Phases(os.environ, chosen.log_file, chosen.run_id, chosen.launcher, chosen.mode,
                    chosen.rc_dir, chosen.nnodes, chosen.node, lambda: output.first_rank_output, judge.say)
    ended = run(monitor, judge, phases)
    phases.finish()
    if not ended and guard.launcher_ended(chosen.launcher):
        guard.stop_orphaned_run(chosen.run_id, chosen.launcher, chosen.grace, judge.say)
    output.stop()
    return 0


def own_log(path: str) -> object:
    """The log file for the monitor's own lines (appending), or a sink when it cannot be opened."""
    try:
        return open(path, "a", encoding="utf-8", errors="replace")
    except OSError:
        return open(os.devnull, "w", encoding="utf-8")


def close_inherited(pipes: LauncherPipes | None) -> None:
    """Whatever the launcher had open when it started this process (a copy of a
    pipe's write end would keep that pipe from ever ending): only stdin (the
    launcher's pipe), stdout and stderr (the console) and the read ends of the
    launcher's output pipes stay."""
    keep = {0, 1, 2} | ({pipes.out_fd, pipes.err_fd} if pipes else set())
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            with contextlib.suppress(OSError):
                os.close(int(name))


def start_output(chosen: Settings, pipes: LauncherPipes | None) -> Output:
    """The thread that writes the launcher's and the ranks' output (monitor/output.py)."""
    once = os.environ.get("PRIMUS_LOG_ONCE") or None
    launcher = open_launcher(pipes, chosen.log_file, once) if pipes else []
    output = Output(chosen.rc_dir if chosen.mode == "torchrun" else "", os.environ.get("PRIMUS_CONSOLE_RANKS", ""),
                    once, launcher)
    output.start()
    return output
