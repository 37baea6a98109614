"""``python -m primus_runner.diagnose``: the diagnosis commands.

    dump --run-id ID --heading TEXT [--kind hang|failure] [--skip-rank R] [--report-file F] [--no-native]
        (run_worker.sh and the rank's exception hook when a rank failed)
    stacks [--log PATH | --pid PID] [--workspace DIR] [--json]   (primus-cli stacks)
    merge [--heading TEXT] [--stdin] [SUMMARY_JSON ...]          (Slurm: one summary across nodes)
    gather --log LOG --nodes N --since EPOCH [--wait S]          (node 0's run monitor under Slurm)

Owns the command line and where the lines go (hang: the launcher's console and log
through stderr; failure: a file report.py adds to the failure report; stacks:
stdout). It must not find ranks or read stacks itself (runs.py, pyspy.py, bundle.py).
"""
from __future__ import annotations

import glob
import json
import os
import sys
import time
from collections.abc import Sequence

from primus_runner import log
from primus_runner.diagnose.bundle import dump_run, new_bundle
from primus_runner.diagnose.runs import Run, scan
from primus_runner.diagnose.summary import RankPlace, from_json, rank_list, summary_lines
from primus_runner.facts import EXIT_INVALID, EXIT_MISSING


def _options(args: list[str], names: dict[str, str], flags: set[str]) -> tuple[dict[str, str], list[str]]:
    values = dict(names)
    values.update({flag: "" for flag in flags})
    rest: list[str] = []
    while args:
        name = args.pop(0)
        if name in flags:
            values[name] = "1"
        elif name in names and args:
            values[name] = args.pop(0)
        elif name.startswith("--"):
            raise ValueError(f"unknown option or missing value: '{name}'; accepted: {', '.join([*names, *flags])}")
        else:
            rest.append(name)
    return values, rest


def cmd_dump(args: list[str]) -> int:
    opts, _ = _options(args, {"--run-id": "", "--heading": "stacks", "--kind": "hang", "--skip-rank": "",
                              "--report-file": ""}, {"--no-native"})
    run = scan().get(opts["--run-id"])
    if run is None:
        log.warn(f"{opts['--heading']}: no process of the run is left to read (PRIMUS_RUN_ID={opts['--run-id']}).")
        return 0
    skip = frozenset({int(opts["--skip-rank"])}) if opts["--skip-rank"].isdigit() else frozenset()
    bundle = new_bundle(run.log, opts["--kind"])
    places, lines, _ = dump_run(run, bundle, skip, native=opts["--no-native"] != "1")
    if opts["--report-file"]:
        with open(opts["--report-file"], "w", encoding="utf-8") as handle:
            handle.write("\n".join([opts["--heading"], *lines]) + "\n")
        return 0
    log.warn("\n".join([f"{opts['--heading']}: {sum(1 for p in places if p.exit_code < 0)} live rank(s)", *lines]))
    return 0


def shown(path: str) -> str:
    """PATH for one log line: as it is when plain, else quoted with its escapes
    (a newline or a control character in a path must not split or forge a line) (pure)."""
    return path if path.isprintable() and " " not in path else repr(path)


def _pick(runs: dict[str, Run], log_path: str, pid: str, workspace: str) -> Run:
    if pid:
        if not pid.isdigit():
            raise ValueError(f"--pid '{pid}' is not a process id; give the launcher's pid or a rank's")
        for run in runs.values():
            if int(pid) in run.processes or int(pid) == run.launcher_pid:
                return run
        raise LookupError(f"--pid {pid}: no running launch has that process (launcher or rank) on this node")
    if log_path:
        wanted = os.path.realpath(log_path)
        for run in runs.values():
            if run.log and os.path.realpath(run.log) == wanted:
                return run
        raise LookupError(f"--log {shown(log_path)}: no running launch writes that log on this node")
    logs_dir = os.path.realpath(os.path.join(workspace, "logs")) + os.sep
    inside = [r for r in runs.values() if os.path.realpath(r.log or "/").startswith(logs_dir)]
    chosen = inside or list(runs.values())
    if len(chosen) == 1:
        return chosen[0]
    if not chosen:
        raise LookupError("no running launch on this node (no process with PRIMUS_RUN_ID in its environment); "
                          "start one with primus-cli direct, or name it with --log PATH or --pid PID")
    names = ", ".join(sorted(r.log or f"run {r.run_id}" for r in chosen))
    place = shown(workspace)
    where = f"under workspace {place}" if inside else f"on this host (none under workspace {place})"
    raise LookupError(f"{len(chosen)} running launches {where}: {names}; pick one with --log PATH or --pid PID")


STACKS_HELP = """Usage: primus-cli stacks [--log PATH | --pid PID] [--workspace DIR] [--json]

Dump every rank's Python stack (py-spy --native) of a launch running on this host and
print one summary, ranks grouped by their innermost workload frame, then each stack.
The launch: --pid (the launcher's pid or a rank's), --log (its log file), else the one
launch writing under <workspace>/logs (--workspace, PRIMUS_WORKSPACE, ./output), else
the one launch running on this host. The bundle is <log without .log>.stacks-<n>/.
  --json   one JSON line (the summary.json of the bundle), for primus-cli slurm stacks
Exit codes: 0 ok; 1 no running launch found; 2 bad arguments or several launches."""


def monitor_verdict(run: Run) -> str:
    """The run monitor's verdict of now for RUN ($PRIMUS_RC_DIR/verdict.json, written by
    python/primus_runner/monitor/act.py): its line, "" for none, or why it is unknown."""
    path = os.path.join(run.rc_dir, "verdict.json") if run.rc_dir else ""
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except FileNotFoundError:
        return ("(no run monitor verdict: the verdicts are off, PRIMUS_HANG_TIMEOUT=0, "
                "or the monitor has seen nothing yet)")
    except (OSError, ValueError):
        return "(the run monitor's verdict cannot be read)"
    line = doc.get("line") if isinstance(doc, dict) else ""
    return str(line) if line else ""


def cmd_stacks(args: list[str]) -> int:
    if args[:1] in (["-h"], ["--help"]):
        print(STACKS_HELP)
        return 0
    opts, _ = _options(args, {"--log": "", "--pid": "", "--workspace": os.environ.get("PRIMUS_WORKSPACE", "./output")},
                       {"--json"})
    try:
        run = _pick(scan(), opts["--log"], opts["--pid"], opts["--workspace"])
    except ValueError as exc:
        log.error(f"stacks: {exc}")
        return EXIT_INVALID
    except LookupError as exc:
        log.error(f"stacks: {exc}")
        return EXIT_MISSING
    verdict = monitor_verdict(run)  # before the dump: its pauses read as progress to the monitor
    bundle = new_bundle(run.log, "stacks")
    places, lines, texts = dump_run(run, bundle)
    if opts["--json"]:
        with open(os.path.join(bundle, "summary.json"), encoding="utf-8") as handle:
            document = json.load(handle)
        document["bundle"] = bundle
        document["verdict"] = verdict
        print(json.dumps(document))
        return 0
    print(f"stacks of the launch writing {run.log or '(no log)'} (run {run.run_id}): "
          f"{sum(1 for p in places if p.exit_code < 0)} live rank(s)")
    print(f"  run monitor: {verdict or 'no verdict (the ranks progress)'}")
    print("\n".join(lines))
    for rank in sorted(texts):
        print(f"\n----- rank {rank} -----\n{texts[rank].rstrip()}")
    return 0


def merge_lines(documents: Sequence[object]) -> list[str]:
    """One summary across nodes from summary.json documents / --json lines (pure)."""
    places: list[RankPlace] = []
    bundles: list[str] = []
    def node_of(doc: object) -> int:
        node = doc.get("node") if isinstance(doc, dict) else None
        return node if isinstance(node, int) else 1 << 30

    verdicts: list[str] = []
    for doc in sorted(documents, key=node_of):
        if isinstance(doc, dict):
            places.extend(from_json(doc.get("places")))
            if doc.get("bundle"):
                bundles.append(f"node {doc.get('node')}: {doc.get('bundle')}")
            if "verdict" in doc:
                verdicts.append(f"run monitor of node {doc.get('node')} ({doc.get('host')}): "
                                f"{doc.get('verdict') or 'no verdict (the ranks progress)'}")
    return [*summary_lines(places, "", [f"bundle {b}" for b in bundles], with_nodes=True),
            *(f"  {line}" for line in verdicts)]


# A node's summary.json holds one place per rank: kilobytes. A larger file or line
# is not one (a stray file, a bundle of stack dumps) and is refused, not read.
SUMMARY_MAX_BYTES = 16 << 20


def cmd_merge(args: list[str]) -> int:
    opts, files = _options(args, {"--heading": "stacks across nodes"}, {"--stdin"})
    docs: list[object] = []
    for path in files:
        try:
            size = os.path.getsize(path)
            if size > SUMMARY_MAX_BYTES:
                log.warn(f"merge: {shown(path)} is {size} bytes, not a node's summary.json (at most "
                         f"{SUMMARY_MAX_BYTES >> 20} MiB); left out")
                continue
            with open(path, encoding="utf-8") as handle:
                doc = json.load(handle)
        except (OSError, ValueError) as exc:
            log.warn(f"merge: cannot read {shown(path)}: {exc}")
            continue
        if isinstance(doc, dict):
            doc.setdefault("bundle", os.path.dirname(path))
        docs.append(doc)
    if opts["--stdin"]:
        while True:
            line = sys.stdin.readline(SUMMARY_MAX_BYTES + 1)
            if not line:
                break
            if len(line) > SUMMARY_MAX_BYTES:
                log.warn(f"merge: a line of over {SUMMARY_MAX_BYTES >> 20} MiB on stdin is no node's summary; left out")
                while line and not line.endswith("\n"):
                    line = sys.stdin.readline(SUMMARY_MAX_BYTES + 1)
                continue
            line = line.strip()
            if line.startswith("{"):
                try:
                    docs.append(json.loads(line))
                except ValueError:
                    continue
    print("\n".join([opts["--heading"] + ":", *merge_lines(docs)]))
    return 0 if docs else EXIT_MISSING


def gather(log_file: str, nodes: int, since: float, wait: float) -> dict[int, dict[str, object]]:
    """Node 0 after its own hang dump: the other nodes' bundles of this hang, when the
    logs are on a shared filesystem (waits up to WAIT seconds for them), merged into
    one summary on stderr; else where each node's bundle is. {node: its newest
    summary.json since SINCE, with "bundle": its directory}."""
    log_dir = os.path.dirname(os.path.abspath(log_file))
    deadline = time.monotonic() + wait
    found: dict[int, tuple[float, dict[str, object]]] = {}  # node -> (mtime, summary.json) of its newest bundle
    while True:
        for path in glob.glob(os.path.join(glob.escape(log_dir), "*.hang-*", "summary.json")):
            try:
                mtime = os.path.getmtime(path)
                if mtime < since:
                    continue
                with open(path, encoding="utf-8") as handle:
                    doc = json.load(handle)
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and isinstance(doc.get("node"), int):
                doc["bundle"] = os.path.dirname(path)
                if doc["node"] not in found or found[doc["node"]][0] < mtime:
                    found[doc["node"]] = (mtime, doc)
        if len(found) >= nodes or time.monotonic() >= deadline:
            break
        time.sleep(1)
    lines = merge_lines([doc for _, doc in found.values()])
    missing = [n for n in range(nodes) if n not in found]
    if missing:
        word = "nodes" if len(missing) > 1 else "node"
        lines.append(f"  {word} {rank_list(missing)}: no bundle of this hang in {log_dir} after {wait:.0f} s (logs not "
                     "on a shared filesystem?): each node's bundle is next to its own log on that node, "
                     "<log without .log>.hang-<n>/")
    log.warn("\n".join([f"run monitor: stacks across {nodes} node(s), {len(found)} bundle(s) found:", *lines]))
    return {node: doc for node, (_, doc) in found.items()}


def cmd_gather(args: list[str]) -> int:
    """gather: see gather()."""
    opts, _ = _options(args, {"--log": "", "--nodes": "1", "--since": "0", "--wait": "30"}, set())
    gather(opts["--log"], int(opts["--nodes"]), float(opts["--since"]), float(opts["--wait"]))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    commands = {"dump": cmd_dump, "stacks": cmd_stacks, "merge": cmd_merge, "gather": cmd_gather}
    if not args or args[0] in ("-h", "--help"):
        print((__doc__ or "").strip())
        return 0 if args else EXIT_INVALID
    if args[0] not in commands:
        log.error(f"diagnose: unknown command '{args[0]}'; accepted: {', '.join(commands)}")
        return EXIT_INVALID
    try:
        return commands[args[0]](args[1:])
    except ValueError as exc:
        log.error(f"diagnose {args[0]}: {exc}")
        return EXIT_INVALID
