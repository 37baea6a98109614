"""The flight recorder on a hang: every rank asked for a dump now, torch's analyzer
run on the dumps, and (on Neuron) the runtime's timeouts, all into the hang bundle.

Owns the asking (one byte into a FIFO per rank), the waiting for the dumps, their
copy into ``<bundle>/flight-recorder/fr-rank-<R>`` (mode 0600), the analyzer's run
(``python -m torch.distributed.flight_recorder.fr_trace DIR -p fr-rank-
--allow-incomplete-ranks`` with the rank's own interpreter, output kept in
``<bundle>/flight-recorder.txt``) and its one-line verdict (``verdict_of``: pure,
from the analyzer's text alone). It must not decide when (monitor/act.py) nor what
a hang is (monitor/verdicts.py).

How a rank is asked:
* NCCL/RCCL: ProcessGroupNCCL creates the FIFO ``$TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe``
  itself (mkfifo, then read with O_NONBLOCK by its monitoring thread; it dumps to
  ``$TORCH_FR_DUMP_TEMP_FILE<rank>`` when a read returns data; only with a trace
  buffer size > 0): struct DumpPipe in torch/include/torch/csrc/distributed/c10d/
  ProcessGroupNCCL.hpp of the installed torch (2.13). runner/lib/flight_recorder.sh
  sets the stem on ROCm/CUDA hosts (a user value kept).
* any other backend (gloo has a flight recorder but no pipe): the FIFO
  ``$PRIMUS_FR_TRIGGER`` (``$PRIMUS_RC_DIR/fr-trigger-<RANK>``, runner/helpers/run_worker.sh)
  of the dump thread that runner/helpers/pystartup/sitecustomize.py starts in the
  rank; it writes ``$TORCH_FR_DUMP_TEMP_FILE<rank>`` (or the older name's file, else
  ``<the FIFO's directory>/flight-recorder-rank-<rank>``).
The byte is written with O_NONBLOCK: a FIFO nobody reads (the rank's thread never
started) is ENXIO at once, never a wait.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time

from primus_runner.diagnose.bundle import private_text
from primus_runner.diagnose.runs import Run, ranks_of
from primus_runner.records import dataclass

BUNDLE_DIR = "flight-recorder"        # <bundle>/flight-recorder/fr-rank-<R>
BUNDLE_PREFIX = "fr-rank-"
OUTPUT_FILE = "flight-recorder.txt"   # the analyzer's output, in the bundle
MARK_FILE = "flight-recorder.json"    # the ranks asked and copied, for node 0's job-wide run (monitor/nodes.py)
NEURON_FILE = "neuron-timeouts.txt"
DEFAULT_NAME = "flight-recorder-rank-"  # the dump thread's file without TORCH_FR_DUMP_TEMP_FILE (sitecustomize.py)
DUMP_WAIT_S = 15.0      # for the dumps after the ask (a gloo rank writes within ~1 s, measured)
ANALYZER_TIMEOUT_S = 60.0
ANALYZER = "torch.distributed.flight_recorder.fr_trace"


@dataclass(frozen=True)
class Asked:
    rank: int
    pid: int
    dump: str      # the file the dump lands in
    how: str       # "pipe" (torch's own) | "thread" (the dump thread) | "" (not asked)
    problem: str   # why this rank was not asked ("" when it was)


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def _poke(path: str) -> str:
    """One byte into the FIFO PATH without waiting; "" or why not."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as error:
        return f"nobody reads {path} ({error.strerror})"
    try:
        os.write(fd, b"1")
    except OSError as error:
        return f"cannot write {path} ({error.strerror})"
    finally:
        os.close(fd)
    return ""


def dump_file(env: dict[str, str], rank: int) -> str:
    """Where RANK's dump lands: TORCH_FR_DUMP_TEMP_FILE (or its older name) + rank, else
    the dump thread's default beside its FIFO."""
    prefix = env.get("TORCH_FR_DUMP_TEMP_FILE") or env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    if not prefix and env.get("PRIMUS_FR_TRIGGER"):
        prefix = os.path.join(os.path.dirname(env["PRIMUS_FR_TRIGGER"]), DEFAULT_NAME)
    return f"{prefix}{rank}" if prefix else ""


def request(run: Run) -> list[Asked]:
    """Ask every live rank of RUN on this node for a flight-recorder dump now."""
    asked: list[Asked] = []
    live, _ = ranks_of(run)
    for rank in live:
        env = run.processes.get(rank.pid, (0, {}))[1]
        dump = dump_file(env, rank.rank)
        stem, trigger = env.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", ""), env.get("PRIMUS_FR_TRIGGER", "")
        pipe = f"{stem}{rank.rank}.pipe" if stem else ""
        if not dump:
            asked.append(Asked(rank.rank, rank.pid, "", "", "no dump file (TORCH_FR_DUMP_TEMP_FILE unset)"))
        elif pipe and _is_fifo(pipe):
            problem = _poke(pipe)
            asked.append(Asked(rank.rank, rank.pid, dump, "" if problem else "pipe", problem))
        elif trigger and _is_fifo(trigger):
            problem = _poke(trigger)
            asked.append(Asked(rank.rank, rank.pid, dump, "" if problem else "thread", problem))
        else:
            asked.append(Asked(rank.rank, rank.pid, dump, "", "no dump pipe and no dump thread"))
    return asked


def collect(asked: list[Asked], since: float, bundle: str,
            wait_s: float = DUMP_WAIT_S) -> tuple[str, list[int], float]:
    """Copy each asked rank's dump written since SINCE (epoch seconds) into the bundle
    (mode 0600) once its size stood still for one look; (the directory, ranks copied,
    the last copied dump's modification time)."""
    directory = os.path.join(bundle, BUNDLE_DIR)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    pending = {a.rank: a for a in asked if a.how}
    sizes: dict[int, int] = {}
    copied: list[int] = []
    written = since
    end = time.monotonic() + wait_s
    while pending:
        for rank, one in list(pending.items()):
            try:
                info = os.stat(one.dump)
            except OSError:
                continue
            if info.st_mtime < since - 1 or info.st_size == 0 or sizes.get(rank) != info.st_size:
                sizes[rank] = info.st_size
                continue
            del pending[rank]
            with contextlib.suppress(OSError), open(one.dump, "rb") as source:
                fd = os.open(os.path.join(directory, f"{BUNDLE_PREFIX}{rank}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                             0o600)
                os.fchmod(fd, 0o600)  # whatever the umask
                with os.fdopen(fd, "wb") as sink:
                    shutil.copyfileobj(source, sink)
                copied.append(rank)
                written = max(written, info.st_mtime)
        if not pending or time.monotonic() >= end:
            break
        time.sleep(0.2)
    return directory, sorted(copied), written


def interpreter(pid: int) -> str:
    """The rank's own Python (it has torch): the path it was started by (a virtual
    environment's bin/python: /proc/PID/exe would name the base interpreter behind
    its symlink, without the environment's packages), else its executable, else this one."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            first = handle.read().split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        if os.path.isabs(first) and os.access(first, os.X_OK):
            return first
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return sys.executable


def analyze(python: str, directory: str, timeout: float = ANALYZER_TIMEOUT_S) -> tuple[str, int | None]:
    """Run torch's analyzer on DIRECTORY: (its stdout and stderr, its exit code; None: timed out)."""
    command = [python, "-m", ANALYZER, directory, "-p", BUNDLE_PREFIX, "--allow-incomplete-ranks"]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as expired:
        out = expired.output or b""
        return (out.decode("utf-8", "replace") if isinstance(out, bytes) else str(out)), None
    except OSError as error:
        return f"cannot run {python}: {error.strerror}\n", 127
    return done.stdout.decode("utf-8", "replace"), done.returncode


# -- the analyzer's output into one line (pure) --------------------------------
_ERROR = re.compile(r"error msg: (.*)")
_CULPRIT = re.compile(r"Culprit rank (\d+); Error type: (\w+), (.*)")
_MISSING = re.compile(r"missing ranks: \{([\d, ]*)\}")
_NOT_JOINING = re.compile(r"Not all ranks joining collective, sequence number: (\d+)")
_UNDECIDED = re.compile(r"missed FR dumps from ranks \(\{([\d, ]*)\}\)")
_COLLECTIVE = re.compile(r"^collective: (\S+)", re.MULTILINE)


def _ranks(text: str) -> str:
    return ",".join(r.strip() for r in text.split(",") if r.strip())


def verdict_of(output: str, code: int | None, timeout: float = ANALYZER_TIMEOUT_S) -> str:
    """One line from fr_trace's output and exit code (None: it did not end in TIMEOUT s)."""
    if code is None:
        return f"analyzer failed: no answer in {timeout:.0f} s"
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if code != 0:
        last = lines[-1] if lines else f"exit code {code}, no output"
        return f"analyzer failed: {last}"
    found: list[str] = []
    collective = _COLLECTIVE.search(output)
    where = f" in {collective.group(1)}" if collective else ""
    for line in lines:
        error = _ERROR.match(line)
        if error:
            for part in error.group(1).split("Culprit rank ")[1:]:
                culprit = _CULPRIT.match("Culprit rank " + part.rstrip("; "))
                if culprit:
                    found.append(f"{culprit.group(2)}: culprit rank {culprit.group(1)}{where}: {culprit.group(3)}")
            continue
        missing = _MISSING.match(line)
        if missing:
            joining = _NOT_JOINING.search(output)
            seq = f" (collective sequence number {joining.group(1)})" if joining else ""
            found.append(f"missing ranks {_ranks(missing.group(1))}: not all ranks joined the collective{where}{seq}")
    if found:
        extra = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
        return found[0] + extra
    undecided = _UNDECIDED.search(output)
    if undecided:
        return (f"undecided: no dump from rank(s) {_ranks(undecided.group(1))} "
                "(the analyzer cannot tell what is wrong without them)")
    if any("has an empty op list" in line for line in lines):
        return "no entries: a rank's recorder holds no collective"
    return "no mismatch and no missing rank in the dumps"


# -- the whole step, for the Judge ---------------------------------------------
def mark(bundle: str, asked: list[Asked], copied: list[int] | None = None) -> None:
    """<bundle>/flight-recorder.json: the ranks ASKED ("done": false, written before the
    bundle's summary.json), then with COPIED the ranks whose dump is in the bundle and
    why each other one is not ("done": true). Node 0 of a multi-node run waits for it."""
    why = {str(a.rank): a.problem or f"asked, no dump within {DUMP_WAIT_S:.0f} s" for a in asked
           if copied is not None and a.rank not in copied}
    doc = {"asked": [a.rank for a in asked], "done": copied is not None, "copied": copied or [], "problems": why}
    path = os.path.join(bundle, MARK_FILE)
    with contextlib.suppress(OSError):
        private_text(path + ".tmp", json.dumps(doc))
        os.replace(path + ".tmp", path)  # never read half-written


def flight_recorder(run: Run, bundle: str, asked: list[Asked], since: float) -> str:
    """Collect the dumps ASKED for at SINCE into BUNDLE, run the analyzer; the summary line."""
    if not asked:
        mark(bundle, asked, [])
        return "flight recorder: no live rank to ask"
    directory, copied, written = collect(asked, since, bundle)
    mark(bundle, asked, copied)
    if not copied:
        why = "; ".join(f"rank {a.rank}: {a.problem or 'asked, no dump within ' + format(DUMP_WAIT_S, '.0f') + ' s'}"
                        for a in asked)
        with contextlib.suppress(OSError):
            os.rmdir(directory)
        return f"flight recorder: no dump ({why})"
    output, code = analyze(interpreter(asked[0].pid), directory)
    path = os.path.join(bundle, OUTPUT_FILE)
    with contextlib.suppress(OSError):
        private_text(path, output)
    missing = [a.rank for a in asked if a.rank not in copied]
    note = f"; no dump from rank(s) {','.join(map(str, missing))}" if missing else ""
    return (f"flight recorder: torch's analyzer (fr_trace) on the dumps of rank(s) {','.join(map(str, copied))} "
            f"(written {max(0.0, written - since):.1f} s after the ask): {verdict_of(output, code)}{note}; "
            f"its output: {path}")


# -- Neuron --------------------------------------------------------------------
def neuron_run(run: Run) -> bool:
    """A run on Neuron: PRIMUS_ACCELERATOR=neuron in the launch's environment."""
    return os.environ.get("PRIMUS_ACCELERATOR") == "neuron" or any(
        env.get("PRIMUS_ACCELERATOR") == "neuron" for _, env in run.processes.values())


def neuron_timeouts(envs: dict[int, dict[str, str]], registered: dict[str, str | None]) -> list[str]:
    """One line per registered NEURON_RT_* timeout (REGISTERED: name -> the runtime's
    default): each rank's value (ENVS: rank -> its environment), or the default."""
    lines: list[str] = []
    for name, default in sorted(registered.items()):
        by_value: dict[str, list[int]] = {}
        for rank, env in sorted(envs.items()):
            value = env.get(name)
            shown = value if value is not None else f"unset (the runtime's default: {default or 'none'})"
            by_value.setdefault(shown, []).append(rank)
        for shown, ranks in by_value.items():
            lines.append(f"{name}={shown} (rank(s) {','.join(map(str, ranks))})")
    return lines


def registered_neuron_timeouts() -> dict[str, str | None]:
    """The NEURON_RT_* timeouts the registry holds (python/primus_runner/data/variables.yaml)."""
    from primus_runner.env.registry import load

    registry = load()
    found: dict[str, str | None] = {}
    for name in registry.names():
        variable = registry.get(name)
        if variable is not None and name.startswith("NEURON_RT_") and "TIMEOUT" in name:
            found[name] = variable.default
    return found


def record_neuron(run: Run, bundle: str) -> str:
    """On a Neuron run: <bundle>/neuron-timeouts.txt; the summary line ("" when not a Neuron run)."""
    if not neuron_run(run):
        return ""
    live, _ = ranks_of(run)
    envs = {r.rank: run.processes.get(r.pid, (0, {}))[1] for r in live}
    path = os.path.join(bundle, NEURON_FILE)
    lines = neuron_timeouts(envs, registered_neuron_timeouts())
    private_text(path, "\n".join(["# the NEURON_RT_* timeouts in effect in each rank at the hang", *lines]) + "\n")
    return f"the Neuron runtime's timeouts in effect: {'; '.join(lines) or 'none registered'} ({path})"
