"""The launcher's signals, decided: a notice forwarded, a stop, what a run left.

The launcher's shell traps the signals (only it can) and notes when each came
(runner/lib/signal_origin.sh); this command decides and does the rest, one
short-lived process per signal. How a signal came (forwarded by slurm-entry,
Slurm's delivery to every process of the step, or sent to this process alone)
is monitor/origin.py's:

    python -m primus_runner supervise notice SIG ...
        USR1/USR2 sent once to every rank process of this node (torchrun does
        not forward them); one line; the launcher keeps waiting.
    python -m primus_runner supervise stop NUMBER ...
        the ranks still running; the signal delivered once (torchrun mode: to
        torchrun, which sends it to each worker's process group; single: to the
        workload's process group), unless Slurm already delivered it to every
        process of the step; the grace; SIGKILL to what is left. stdout: the
        launch's exit code, then the closing line, which the launcher prints
        once it has reaped the run.
    python -m primus_runner supervise end CODE ...
        the run's own process ended with CODE. After a failure, what the run
        left running (torchrun killed before it could end its workers, a
        single workload's children) gets SIGTERM, the grace, SIGKILL, said;
        torchrun's own log lines go to the log; the failure report
        (launch/report.py) names the rank that failed first; the last line
        says how the workload ended. stdout: the launch's exit code.

    python -m primus_runner supervise watch-container RUNTIME NAME LAUNCHER GRACE
        the container launcher's parent-death guard (monitor/container_guard.py).
    python -m primus_runner supervise origin SIG --role launcher|entry ...
        stdout: how SIG came and the sender text of a line, tab-separated, for
        the container launcher and the Slurm entry (their own traps).

The run's processes and the grace are monitor/members.py's. docs/stopping-and-requeue.md "Stopping,
preemption and requeue" is the user's view.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from pathlib import Path

from primus_runner import log, runrecord
from primus_runner.facts import EXIT_HANG_STOPPED, RUN_MODES
from primus_runner.launch.report import keep_torchrun_log, report
from primus_runner.monitor.container_guard import ignore_group_signals, read_pipe, stop_container
from primus_runner.monitor.members import describe, kill_after_grace, members, rank_pids, running_ranks
from primus_runner.monitor.origin import ROLES, origin, sender_text

MODES = RUN_MODES  # the registry's (data/variables.yaml shared_facts run_modes)


def signal_name(number: int) -> str:
    """TERM, INT, HUP, ... for NUMBER; the number itself when it has no name (pure)."""
    try:
        return signal.Signals(number).name.removeprefix("SIG")
    except ValueError:
        return str(number)


def running_text(ranks: list[int]) -> str:
    """'ranks 0, 1 still running' ('rank 0 ...', 'no rank ...') (pure)."""
    if not ranks:
        return "no rank still running"
    if len(ranks) == 1:
        return f"rank {ranks[0]} still running"
    return f"ranks {', '.join(map(str, ranks))} still running"


def closing_line(name: str, sender: str, running: str, stopped: int, grace: int,
                 killed: str, code: int, log_file: str) -> str:
    """The one closing line of a stop on this node (pure)."""
    text = f"stop: SIG{name}, {sender}; {running} at the stop; {stopped} process(es) stopped"
    if killed:
        text += f", killed after the {grace} s grace: {killed}"
    else:
        text += f" within the {grace} s grace, none killed"
    return text + f"; exit status {code}" + (f"; log: {log_file}" if log_file else "") + "."


def run_process_text(mode: str, run_pid: int) -> str:
    """How the run's own process is named in a line (pure)."""
    if mode == "single":
        return f"the workload (pid {run_pid})"
    return f"torchrun (pid {run_pid}, in spawn.py)"


def stop_code(rc_dir: str, number: int) -> int:
    """The launch's exit code after a stop: 86 when the run monitor stopped the
    run on a verdict (PRIMUS_HANG_ACTION=stop leaves ``hang-stop``), else 128+N."""
    if rc_dir and os.path.isfile(os.path.join(rc_dir, "hang-stop")):
        return EXIT_HANG_STOPPED
    return 128 + number


def _origin(opts: argparse.Namespace, sig: str, role: str = "launcher") -> str:
    return origin(opts.signal_dir, role, sig, opts.at, opts.window_ms * 1000)


def forward_notice(opts: argparse.Namespace) -> int:
    how = _origin(opts, opts.signal)
    if how == "step":
        log.info(f"SIG{opts.signal}: {sender_text(how)}; every rank already has it, not sent again.")
        return 0
    ranks = rank_pids(opts.mode, opts.run_pid, opts.rc_dir)
    number = signal.Signals[f"SIG{opts.signal}"]
    for pid in ranks:
        with contextlib.suppress(OSError):
            os.kill(pid, number)
    text = describe(ranks)
    log.info(f"SIG{opts.signal} ({sender_text(how)}): forwarded once to {len(ranks)} of {opts.nproc} local rank "
             f"process(es){': ' + text if text else ''}; the launcher keeps waiting.")
    return 0


def stop_run(opts: argparse.Namespace) -> int:
    name = signal_name(opts.number)
    how = _origin(opts, name)
    sender = sender_text(how)
    running = running_ranks(opts.mode, opts.run_pid, opts.rc_dir, opts.rank)
    found = members(opts.run_id, opts.run_pid)
    log.warn(f"SIG{name} received ({sender}): stopping the run ({len(found)} process(es)), "
             f"SIGKILL after {opts.grace} s.")
    if how != "step":
        with contextlib.suppress(OSError):
            if opts.mode == "single":
                os.killpg(opts.run_pid, opts.number)
            else:
                os.kill(opts.run_pid, opts.number)
    killed = kill_after_grace(opts.grace, opts.run_id, opts.run_pid)
    keep_torchrun_log(opts.rc_dir, opts.log)
    code = stop_code(opts.rc_dir, opts.number)
    text = closing_line(name, sender, running_text(running), len(found), opts.grace, killed, code, opts.log)
    if opts.signal_dir and os.path.isdir(opts.signal_dir):
        with contextlib.suppress(OSError), open(os.path.join(opts.signal_dir, "closing"), "w",
                                                encoding="utf-8") as handle:
            handle.write(text + "\n")
    print(code)
    print(text)
    return 0


def stop_orphans(opts: argparse.Namespace) -> str:
    """SIGTERM, the grace and SIGKILL to what the run left; in torchrun mode the
    line that says the run was lost, not by a rank ('' when nothing was left)."""
    left = members(opts.run_id)
    if not left:
        return ""
    how = f" (killed by SIG{signal_name(opts.code - 128)})" if opts.code > 128 else ""
    log.error(f"{run_process_text(opts.mode, opts.run_pid)} ended with exit code {opts.code}{how} while "
              f"{len(left)} process(es) of the run still ran: {describe(left)}; stopping them (SIGTERM, SIGKILL "
              f"after {opts.grace} s) so that nothing of the run outlives the launch.")
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    killed = kill_after_grace(opts.grace, opts.run_id)
    if killed:
        log.error(f"killed after the {opts.grace} s grace: {killed}")
    if opts.mode == "single":
        return ""
    # The ranks did not fail first: the failure report must not blame one.
    return f"the run was lost with {run_process_text(opts.mode, opts.run_pid)}, not by a rank: exit code {opts.code}"


def end_run(opts: argparse.Namespace) -> int:
    code = opts.code
    lost = stop_orphans(opts) if code else ""  # a clean run pays no /proc scan
    keep_torchrun_log(opts.rc_dir, opts.log)
    if lost:
        log.error(lost)
    elif code and not (opts.mode == "single" and code == opts.requeue_code):
        # One failure report for both run modes; a requeue request of the one
        # process in run mode single is no failure.
        code = report(Path(opts.rc_dir), opts.log, code, opts.requeue_code, os.environ.get("NODE_RANK", "0"),
                      opts.mode)
    with contextlib.suppress(OSError, ValueError):  # the run's record beside the log: every run has one
        runrecord.append(opts.log, "end", exit_code=code)
    drawn = f"; drawn by: primus-cli report {opts.log}"
    if lost:
        pass
    elif code == 0 and opts.spool_lost:
        log.warn("workload finished successfully (exit code 0), but the log lacks some of the launcher's own "
                 "lines from before the workload started (its copy to the log died; they are on the console); "
                 f"log: {opts.log}{drawn}")
    elif code == 0:
        log.info(f"workload finished successfully; log: {opts.log}{drawn}")
    elif code == opts.requeue_code:
        log.warn(f"workload exited with the requeue code {code} (PRIMUS_REQUEUE_EXIT_CODE); log: {opts.log}{drawn}")
    else:
        log.error(f"workload failed with exit code {code}; log: {opts.log}{drawn}")
    print(code)
    return 0


def say_origin(opts: argparse.Namespace) -> int:
    how = _origin(opts, opts.signal, opts.role)
    print(f"{how}\t{sender_text(how)}")
    return 0


def watch_container(opts: argparse.Namespace) -> int:
    ignore_group_signals()
    done, client = read_pipe(sys.stdin)
    if not done:
        stop_container(opts.runtime, opts.name, opts.launcher, opts.grace, client, log.warn)
    return 0


def _parser() -> argparse.ArgumentParser:
    run = argparse.ArgumentParser(add_help=False)
    run.add_argument("--mode", choices=MODES, required=True, help="the run mode")
    run.add_argument("--run-pid", type=int, required=True, help="the run's own process (spawn.py)")
    run.add_argument("--rc-dir", default="", help="the run's PRIMUS_RC_DIR (worker.<RANK>, failed-<RANK>)")
    run.add_argument("--run-id", default="", help="the run's PRIMUS_RUN_ID")
    run.add_argument("--grace", type=int, default=0, help="seconds between the signal and SIGKILL")
    came = argparse.ArgumentParser(add_help=False)
    came.add_argument("--at", type=int, default=0, help="when this process received it (microseconds)")
    came.add_argument("--signal-dir", default="", help="slurm-entry's PRIMUS_SIGNAL_DIR (the receipts)")
    came.add_argument("--window-ms", type=int, default=0, help="PRIMUS_SIGNAL_WINDOW_MS: one delivery's window")
    parser = argparse.ArgumentParser(prog="primus_runner supervise",
                                     description="internal: the launcher's signals and the stop of a run "
                                                 "(runner/lib/supervise.sh)")
    sub = parser.add_subparsers(dest="action", required=True)
    notice = sub.add_parser("notice", parents=[run, came], help="send USR1/USR2 once to every rank of this node")
    notice.add_argument("signal", choices=("USR1", "USR2"))
    notice.add_argument("--nproc", type=int, default=1, help="the rank processes of this node")
    stop = sub.add_parser("stop", parents=[run, came], help="stop the run: the signal once, the grace, SIGKILL")
    stop.add_argument("number", type=int, help="the signal's number (15 for TERM)")
    stop.add_argument("--rank", type=int, default=0, help="run mode single: this node's RANK")
    stop.add_argument("--log", default="", help="the launch log the closing line names")
    end = sub.add_parser("end", parents=[run],
                         help="the run's own process ended: what it left, the report, the exit code")
    end.add_argument("code", type=int, help="the exit code the run's own process ended with")
    end.add_argument("--log", default="", help="the launch log")
    end.add_argument("--requeue-code", type=int, required=True,
                     help="PRIMUS_REQUEUE_EXIT_CODE, as the launcher reads it")
    end.add_argument("--spool-lost", action="store_true",
                     help="the launcher's early copy of its console to the log died (runner/lib/log_spool.sh)")
    said = sub.add_parser("origin", parents=[came], help="how a signal came, and the sender text of a line")
    said.add_argument("signal", help="its name: TERM, USR1, ...")
    said.add_argument("--role", choices=ROLES, required=True, help="who received it")
    watch = sub.add_parser("watch-container",
                           help="stdin: the container launcher's pipe; its end without 'done': stop the container")
    watch.add_argument("runtime", help="the runtime's path (podman, docker)")
    watch.add_argument("name", help="the container's name")
    watch.add_argument("launcher", type=int, help="the container launcher's pid")
    watch.add_argument("grace", type=int, help="seconds between the container's SIGTERM and SIGKILL")
    return parser


def main(argv: list[str]) -> int:
    opts = _parser().parse_args(argv)
    action = {"notice": forward_notice, "stop": stop_run, "end": end_run, "origin": say_origin,
              "watch-container": watch_container}[opts.action]
    code = action(opts)
    sys.stdout.flush()
    return code
