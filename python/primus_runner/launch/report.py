"""The failure report of a launch: which rank failed first, and why.

Called by ``python -m primus_runner supervise end`` (monitor/supervise.py,
run by runner/lib/supervise.sh as the run ends) when the workload failed; also
a command of its own::

    python3 -m primus_runner.launch.report --rc-dir DIR --log LOG_FILE --code TORCHRUN_RC \
        [--requeue-code N] [--mode torchrun|single]

In run mode single (``--mode single``, else ``RUN_MODE=single`` in the
environment) there is no torchrun and one process per node: the report names
that process (global rank NODE_RANK), its exit code, its exception and last
lines (read from the launcher log, which holds its output) and the same
out-of-memory hint (launch/oom.py); the launch's code is the workload's own.

Inputs, all written during the run into the launcher's exit-code directory:

* ``failed-<RANK>``: one per worker that exited non-zero, written by
  ``runner/helpers/run_worker.sh`` as NUL-terminated fields ``code``, ``time``
  (microseconds since the epoch, taken when the worker ended), ``rank``,
  ``local_rank``, ``stdout``, ``stderr`` (the files torchrun redirected the
  worker's output to, read from ``/proc/self/fd``) and ``error_file``
  (torchrun's ``TORCHELASTIC_ERROR_FILE``, written by ``@record``).
* ``torchrun.err``: the traceback torchrun raised, kept out of the console by
  ``runner/helpers/torchrun_quiet.py``; it is appended to the log file here.

The first failing rank is the one that ended first: the others are usually
the ranks torchrun stopped because of it. The requeue code (``--requeue-code``:
the launcher passes ``PRIMUS_REQUEUE_EXIT_CODE`` as supervise.sh reads it) wins,
as it decides what Slurm does next.

Output: the short report on stderr (secrets masked, as every log line), and
the launch's exit code on stdout: the first failing rank's own code, else
torchrun's.
"""
from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from primus_runner import log
from primus_runner.records import dataclass

TAIL_LINES = 12
FIELDS = ("code", "time", "rank", "local_rank", "stdout", "stderr", "error_file")
SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 7: "SIGBUS", 9: "SIGKILL", 11: "SIGSEGV",
                13: "SIGPIPE", 15: "SIGTERM"}
# A line prefix put before each line of a traceback: torch's excepthook after
# init_process_group ("[rank1]: "), torchrun's --tee ("[default0]:"), or both.
_LINE_PREFIX = re.compile(r"^(?:\[(?:rank|default)\d+\]:[ ]?)+")
# The head of a traceback: plain, or an exception group's ("  + Exception Group Traceback").
_TRACEBACK = re.compile(r"^(\s*\+ )?(Exception Group )?Traceback \(most recent call last\):")
# The box column of an exception group's lines ("  | ", "    | ").
_GROUP_BOX = re.compile(r"^\s*[|+]( |-|$)")


@dataclass(frozen=True)
class Failure:
    """One worker that exited non-zero."""

    code: int
    time_us: int
    rank: int
    local_rank: int
    stdout: str
    stderr: str
    error_file: str


def parse_record(data: bytes) -> Failure | None:
    """A ``failed-<RANK>`` record, or None when it is not one."""
    parts = data.decode("utf-8", "replace").split("\0")
    if len(parts) < len(FIELDS):
        return None
    values = dict(zip(FIELDS, parts[:len(FIELDS)], strict=True))
    try:
        return Failure(int(values["code"]), int(values["time"]), int(values["rank"]),
                       int(values["local_rank"]), values["stdout"], values["stderr"],
                       values["error_file"])
    except ValueError:
        return None


def first_failure(failures: Sequence[Failure], requeue_code: int | None) -> Failure | None:
    """The failure that decides the launch: the requeue code if a rank gave it,
    else the rank that ended first (ties: the lower rank)."""
    if not failures:
        return None
    ordered = sorted(failures, key=lambda f: (f.time_us, f.rank))
    for failure in ordered:
        if requeue_code is not None and failure.code == requeue_code:
            return failure
    return ordered[0]


def describe_code(code: int) -> str:
    """``exit code 1``, or ``exit code 137 (killed by SIGKILL)``."""
    if code > 128 and code - 128 in SIGNAL_NAMES:
        return f"exit code {code} (killed by {SIGNAL_NAMES[code - 128]})"
    if code > 128 and code < 160:
        return f"exit code {code} (killed by signal {code - 128})"
    return f"exit code {code}"


def strip_line_prefix(line: str) -> str:
    """LINE without the rank prefixes torch and torchrun put before it."""
    return _LINE_PREFIX.sub("", line)


def exception_line(text: str) -> str:
    """The exception of the last Python traceback in TEXT, else ''.

    Any form: plain, with torch's ``[rankN]: `` prefix on every line (an error
    raised after init_process_group), with torchrun's ``[defaultN]:`` prefix,
    chained (the last traceback's), or an exception group (its own line).
    The exception line is the first line at column 0 after the traceback's
    head: frames and source lines are indented, whatever the exception's name.
    """
    lines = [strip_line_prefix(line) for line in text.splitlines()]
    start = -1
    for index in range(len(lines) - 1, -1, -1):
        if _TRACEBACK.match(lines[index]):
            start = index
            break
    if start < 0:
        return ""
    group = lines[start].lstrip().startswith("+")
    for line in lines[start + 1:]:
        if group:
            if not _GROUP_BOX.match(line):
                continue
            line = line.lstrip()[1:].removeprefix(" ")
        if line.strip() and not line.startswith((" ", "\t")):
            return line.strip()
    return ""


def error_file_message(data: str) -> str:
    """The message torchrun's ``@record`` wrote to TORCHELASTIC_ERROR_FILE."""
    try:
        content = json.loads(data)
    except ValueError:
        return ""
    message = content.get("message") if isinstance(content, dict) else None
    if isinstance(message, dict):
        message = message.get("message")
    if not isinstance(message, str):
        return ""
    return message.strip().splitlines()[-1] if message.strip() else ""


def tail(text: str, count: int) -> list[str]:
    """The last COUNT non-empty-trailing lines of TEXT."""
    lines = text.rstrip("\n").splitlines()
    return lines[-count:] if lines and lines != [""] else []


def format_report(first: Failure, others: Sequence[Failure], exception: str,
                  last_lines: Sequence[str], log_file: str, node: str,
                  hints: Sequence[str] = ()) -> list[str]:
    """The lines of the report (pure)."""
    where = f"local rank {first.local_rank} of node {node}"
    lines = [f"failure report: global rank {first.rank} ({where}) failed first, {describe_code(first.code)}."]
    if exception:
        lines.append(f"  exception: {exception}")
    log_path = first.stderr or first.stdout
    if last_lines:
        lines.append(f"  last lines of rank {first.rank}'s output:")
        lines.extend(f"    | {line}" for line in last_lines)
    if first.stderr and first.stdout and first.stderr != first.stdout:
        lines.append(f"  full output of rank {first.rank}: {first.stderr} (stdout: {first.stdout})")
    elif log_path:
        lines.append(f"  full output of rank {first.rank}: {log_path}")
    if others:
        ended = ", ".join(f"{f.rank} ({describe_code(f.code)})" for f in sorted(others, key=lambda f: f.rank))
        lines.append(f"  ranks of this node that ended after it: {ended}")
    lines.extend(f"  {hint}" for hint in hints)
    if log_file:
        lines.append(f"  launcher log (with torchrun's own error report): {log_file}")
    return lines


def _read(path: str, limit: int = 1 << 20) -> str:
    """The last LIMIT bytes of a regular file, '' when it cannot be read."""
    if not path or not os.path.isfile(path):
        return ""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def read_failures(rc_dir: Path) -> list[Failure]:
    """Every ``failed-*`` record of RC_DIR."""
    found = []
    for path in sorted(rc_dir.glob("failed-*")):
        try:
            record = parse_record(path.read_bytes())
        except OSError:
            continue
        if record is not None:
            found.append(record)
    return found


def keep_torchrun_log(rc_dir: str, log_file: str) -> None:
    """Append torchrun's own log lines (its elastic agent's "Sending process N
    closing signal", "failed (exitcode: 1)"), which runner/helpers/torchrun_quiet.py
    keeps off the console in RC_DIR/torchrun.log (masked), to the log once."""
    lines = os.path.join(rc_dir, "torchrun.log")
    if not rc_dir or not log_file:
        return
    try:
        with open(lines, encoding="utf-8", errors="replace") as source:
            text = source.read()
    except OSError:
        return
    if not text:
        return
    try:
        with open(log_file, "a", encoding="utf-8") as handle:
            handle.write("----- torchrun's own log lines (not shown on the console) -----\n")
            handle.write(text if text.endswith("\n") else text + "\n")
            handle.write("----- end of torchrun's log lines -----\n")
        with open(lines, "w", encoding="utf-8"):
            pass
    except OSError:
        pass


def keep_torchrun_error(rc_dir: Path, log_file: str) -> str:
    """Append torchrun's traceback (kept off the console) to the log; its summary line."""
    from primus_runner.masking import mask_text

    # A worker's exception message is quoted in torchrun's table: masked, as
    # everything the launcher writes.
    text = mask_text(_read(str(rc_dir / "torchrun.err")))
    if not text:
        return ""
    if log_file:
        try:
            with open(log_file, "a", encoding="utf-8") as handle:
                handle.write("----- torchrun's error report (not shown on the console) -----\n")
                handle.write(text if text.endswith("\n") else text + "\n")
                handle.write("----- end of torchrun's error report -----\n")
        except OSError:
            pass
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


# A line the launcher itself logged ("[time] [NODE-0(host)] [INFO] ..."), not the workload.
_LAUNCHER_LINE = re.compile(r"^(\[[0-9T:Z-]+\] )?\[NODE-\d+\([^)]*\)\] \[(DEBUG|INFO|WARN|ERROR)\] ")


def single_report(code: int, log_file: str, node: str) -> int:
    """The report of run mode single (no torchrun, no per-rank records): the
    one process of this node, read from the launcher log. Returns CODE."""
    from primus_runner.launch.oom import oom_hint

    output = "\n".join(line for line in _read(log_file).splitlines() if not _LAUNCHER_LINE.match(line))
    first = Failure(code, 0, int(node) if node.isdigit() else 0, 0, log_file, log_file, "")
    hints = oom_hint(code, os.environ.get("PRIMUS_SYSFS_ROOT") or "/",
                     os.environ.get("PRIMUS_DEV_ROOT") or "/")
    lines = format_report(first, [], exception_line(output), tail(output, TAIL_LINES), "", node, hints)
    lines[0] = (f"failure report: the workload (run mode single: global rank {first.rank}, the one "
                f"process of node {node}) failed, {describe_code(code)}.")
    for line in lines:
        log.error(line)
    return code


def report(rc_dir: Path, log_file: str, torchrun_code: int, requeue_code: int | None = None,
           node: str = "0", mode: str = "torchrun") -> int:
    """Print the report; return the launch's exit code."""
    if mode == "single":
        return single_report(torchrun_code, log_file, node)
    torchrun_line = keep_torchrun_error(rc_dir, log_file)
    failures = read_failures(rc_dir)
    first = first_failure(failures, requeue_code)
    if first is None:
        where = f"; see {log_file}" if log_file else ""
        reason = f": {torchrun_line}" if torchrun_line else ""
        log.error(f"failure report: torchrun failed with exit code {torchrun_code} before any rank "
                  f"of this node failed{reason}{where}")
        return torchrun_code
    # stderr holds the traceback; a rank that wrote nothing there shows its stdout.
    output = _read(first.stderr)
    if not output and first.stdout != first.stderr:
        output = _read(first.stdout)
    exception = error_file_message(_read(first.error_file)) or exception_line(output)
    flat = os.path.join(os.environ.get("PRIMUS_RANK_LOG_DIR", ""), f"rank-{first.rank}.log")
    if os.environ.get("PRIMUS_RANK_LOG_DIR") and os.path.isfile(flat):
        # The predictable name run_worker.sh links (stderr joined stdout there).
        first = Failure(first.code, first.time_us, first.rank, first.local_rank, flat, flat,
                        first.error_file)
    others = [f for f in failures if f.rank != first.rank]
    from primus_runner.launch.oom import oom_hint

    hints = oom_hint(first.code, os.environ.get("PRIMUS_SYSFS_ROOT") or "/",
                     os.environ.get("PRIMUS_DEV_ROOT") or "/")
    for line in format_report(first, others, exception, tail(output, TAIL_LINES), log_file, node, hints):
        log.error(line)
    # The other ranks' stacks, read by run_worker.sh when the first rank failed.
    stacks = _read(str(rc_dir / "failure-stacks")).rstrip("\n")
    if stacks:
        log.error(stacks)
    return first.code


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print((__doc__ or "").strip())
        return 0
    options = {"--rc-dir": "", "--log": "", "--code": "1", "--requeue-code": "",
               "--mode": os.environ.get("RUN_MODE") or "torchrun"}
    while args:
        name = args.pop(0)
        if name not in options or not args:
            print(f"report: unknown option or missing value: {name}; see --help", file=sys.stderr)
            return 2
        options[name] = args.pop(0)
    requeue = options["--requeue-code"]
    if not options["--rc-dir"] or not options["--code"].isdigit() or (requeue and not requeue.isdigit()):
        print("report: --rc-dir DIR and a numeric --code (and --requeue-code) are required; see --help",
              file=sys.stderr)
        return 2
    print(report(Path(options["--rc-dir"]), options["--log"], int(options["--code"]),
                 int(requeue) if requeue else None, os.environ.get("NODE_RANK", "0"),
                 options["--mode"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
