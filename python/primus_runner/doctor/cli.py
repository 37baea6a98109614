"""``python3 -m primus_runner doctor``: the doctor's command line (``primus-cli doctor``).

- ``doctor [--probe] [--json FILE]``: this node's checks, one row each (status,
  value seen, wanted, fix); exit 0 when no check failed, 3 when one did, 2 for bad
  arguments. ``--probe`` adds the measurements (per-node GEMM on GPUs; node pairs
  and all_reduce only in a multi-node job: ``primus-cli slurm doctor --probe``).
- ``doctor --report-line``: (slurm doctor, on each node) the report on stdout instead
  of the table, as short ``PRIMUS-DOCTOR-REPORT <id> <i> <n> <chunk>`` lines
  (compressed JSON in base64: srun cuts long lines).
- ``doctor fleet FILE [--json OUT] [--ratio R] [--floor-gbps G]``: (slurm doctor,
  after the step) read the report lines of FILE, print the ranked table worst
  first and, when some node failed, the ``--exclude=<hostlist>`` line; exit 3 then.
Owns the option parsing and the printing; the checks are node.py's, the ranking fleet.py's.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from primus_runner.doctor.pairs import DEFAULT_RATIO, Limits
from primus_runner.doctor.record import EXIT_HEALTHY, EXIT_UNFIT, FAIL, PASS, Check, exit_code
from primus_runner.facts import EXIT_INVALID

REPORT_PREFIX = "PRIMUS-DOCTOR-REPORT "
EXIT_USAGE = EXIT_INVALID


def progress(text: str) -> None:
    sys.stderr.write(f"[doctor] {time.strftime('%H:%M:%S')} {text}\n")
    sys.stderr.flush()


def _node_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="primus-cli doctor", description="Check this node before a job (tier 1, < 60 s): the "
        "launch verdict, accelerators and their vendor tool, versions, CPU, NICs and RDMA ports, "
        "/dev/shm, ulimit -l/-n, workspace space, the rendezvous port, the clock offset from node 0 "
        "in a job and devices held by another process. Exit 0: no check failed; 3: a check failed; "
        "2: bad arguments. Every fleet: primus-cli slurm doctor.")
    p.add_argument("--probe", action="store_true", help="also measure: per-node GEMM on GPUs; in a "
                   "multi-node job node-pair bandwidth/latency and one all_reduce")
    p.add_argument("--json", metavar="FILE", help="write every check (and probe figure) to FILE")
    p.add_argument("--report-line", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ratio", type=float, default=DEFAULT_RATIO, help=argparse.SUPPRESS)
    p.add_argument("--floor-gbps", type=float, default=None, help=argparse.SUPPRESS)
    return p


def _fleet_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="primus-cli doctor fleet", description="Rank the node reports "
                                "(PRIMUS-DOCTOR-REPORT lines) of FILE, worst first.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", metavar="OUT", help="write the fleet report (every node, every check)")
    p.add_argument("--ratio", type=float, default=DEFAULT_RATIO, help="a node pair is slow below RATIO "
                   "x the reference bandwidth (the median of the nodes' best pairs; default 0.8); a node "
                   "fails when it is slow in every pair, or slow with a node known to be good")
    p.add_argument("--floor-gbps", type=float, default=None, help="a node pair is also slow below "
                   "this many GB/s (default: no floor)")
    p.add_argument("--expect", type=int, default=0, help="nodes expected (missing ones are named)")
    p.add_argument("--phases", type=int, default=2, help=argparse.SUPPRESS)
    return p


def print_checks(checks: list[Check], host: str) -> None:
    width = max(len(c.name) for c in checks)
    print(f"{'STATUS':<6}  {'CHECK':<{width}}  VALUE")
    for c in checks:
        print(f"{c.status:<6}  {c.name:<{width}}  {c.value}")
        if c.status != PASS:
            print(f"{'':<6}  {'':<{width}}    wanted: {c.wanted}" + (f"; fix: {c.fix}" if c.fix else ""))
    failed = sum(1 for c in checks if c.status == FAIL)
    warned = sum(1 for c in checks if c.status == "warn")
    verdict = "unfit: fix the failed checks (exit 3)" if failed else "healthy"
    print(f"[doctor] {host}: {len(checks)} checks, {failed} failed, {warned} warning(s) - {verdict}")


def json_target_problem(path: str) -> str:
    """Why --json PATH cannot be written ("" when it can), said before any check runs."""
    import os

    folder = os.path.dirname(os.path.abspath(path))
    shown = path if path.isprintable() and " " not in path else repr(path)
    if os.path.isdir(path):
        return f"--json {shown} is a directory; accepted: a file path"
    if not os.path.isdir(folder):
        return f"--json {shown}: its directory does not exist; create it or name a file in one that does"
    if not os.access(folder, os.W_OK):
        return f"--json {shown}: its directory is not writable by this user"
    return ""


def node_main(argv: list[str]) -> int:
    import os

    from primus_runner.doctor.node import checks_of, job_of, report

    args = _node_parser().parse_args(argv)
    if args.json and (problem := json_target_problem(args.json)):
        print(f"primus-cli doctor: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    env = dict(os.environ)
    nnodes = job_of(env)[3]
    if not args.report_line:                      # under slurm doctor, it numbers the phases
        phases = 2 if args.probe else 1
        progress(f"phase 1/{phases}: node checks" + ("" if nnodes > 1 else " of this node only (not in a "
                 "multi-node job); every node of an allocation: primus-cli slurm doctor (inside salloc or "
                 "sbatch, or with -N N)"))
    rep = report(env)
    if args.probe:
        from primus_runner.doctor.probe import run_probe

        if not args.report_line:
            progress("phase 2/2: probe (" + ("node pairs, all_reduce" if nnodes > 1 else "this node") + ")")
        elif rep["node_rank"] == 0:
            progress("phase 2/3: probe on every node (node pairs in two rounds, a recheck and a "
                     "confirmation round for slow pairs, all_reduce)")
        rep["probe"] = run_probe(env, rep, Limits(args.ratio, args.floor_gbps))
        rep["checks"] += rep["probe"].pop("checks", [])
    checks = checks_of(rep)
    if args.json:
        from primus_runner.doctor.fleet import masked

        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(masked(rep), handle, indent=2)
            handle.write("\n")
    if args.report_line:
        sys.stdout.write("".join(line + "\n" for line in report_lines(rep)))
    else:
        print_checks(checks, rep["host"])
    return exit_code(checks)


CHUNK = 800       # srun cuts long output lines (seen at a few KiB): short chunks survive whole


def report_lines(rep: dict[str, object]) -> list[str]:
    """The report as ``PRIMUS-DOCTOR-REPORT <id> <i> <n> <base64 chunk>`` lines."""
    import base64
    import os
    import zlib

    data = base64.b64encode(zlib.compress(json.dumps(rep, separators=(",", ":")).encode())).decode()
    ident = f"{rep.get('host')}.{os.getpid()}"
    chunks = [data[i:i + CHUNK] for i in range(0, len(data), CHUNK)] or [""]
    return [f"{REPORT_PREFIX}{ident} {i} {len(chunks)} {c}" for i, c in enumerate(chunks)]


# A report line carries one chunk of a node's report (CHUNK characters); a longer
# line is something else (a stray file, a log of 1 GB) and is skipped unread.
LINE_MAX = 1 << 20


def read_reports(path: str) -> list[dict[str, object]]:
    """Every whole report among the lines of ``path`` (other lines and partial reports ignored)."""
    import base64
    import binascii
    import zlib

    parts: dict[str, dict[int, str]] = {}
    totals: dict[str, int] = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        while line := handle.readline(LINE_MAX):
            if len(line) >= LINE_MAX and not line.endswith("\n"):  # no report line: skipped, never held whole
                while (rest := handle.readline(LINE_MAX)) and not rest.endswith("\n"):
                    pass
                continue
            _, found, payload = line.rstrip("\n").partition(REPORT_PREFIX)
            fields = payload.split(" ")
            if not found or len(fields) != 4 or not fields[1].isdigit() or not fields[2].isdigit():
                continue
            parts.setdefault(fields[0], {})[int(fields[1])] = fields[3]
            totals[fields[0]] = int(fields[2])
    out: list[dict[str, object]] = []
    for ident, chunks in parts.items():
        if len(chunks) != totals[ident]:
            continue
        try:
            value = json.loads(zlib.decompress(base64.b64decode("".join(chunks[i] for i in range(len(chunks))))))
        except (ValueError, zlib.error, binascii.Error, KeyError):
            continue
        if isinstance(value, dict) and "host" in value:
            out.append(value)
    return out


def fleet_main(argv: list[str]) -> int:
    from primus_runner.doctor import fleet

    args = _fleet_parser().parse_args(argv)
    if args.json and (problem := json_target_problem(args.json)):
        print(f"primus-cli doctor: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if not 0 < args.ratio <= 1:
        print(f"primus-cli doctor: error: --ratio {args.ratio:g} is not accepted; accepted: 0 < R <= 1 "
              "(e.g. 0.8)", file=sys.stderr)
        return EXIT_USAGE
    progress(f"phase {args.phases}/{args.phases}: comparing the nodes")
    reports = read_reports(args.file)
    if not reports:
        print(f"[doctor] no node report in {args.file}: the doctor did not run on any node (see the "
              "srun messages above)", file=sys.stderr)
        return EXIT_UNFIT
    verdicts = fleet.rank(reports, args.ratio, args.floor_gbps)
    for line in fleet.table(verdicts):
        print(line)
    missing = args.expect - len(reports) if args.expect else 0
    if missing > 0:
        print(f"[doctor] {missing} of {args.expect} node(s) sent no report (see the srun messages above)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(fleet.fleet_json(reports, verdicts, args.ratio, args.floor_gbps), handle, indent=2)
            handle.write("\n")
    bad = sum(1 for v in verdicts if v.bad)
    suspects = [v.host for v in verdicts if v.suspect and not v.bad]
    if len(reports) == 1 and args.expect <= 1:
        print(f"[doctor] one node checked ({reports[0]['host']}): no other node to compare (outside an "
              "allocation with no -N or -w, srun runs on one node); every node: primus-cli slurm doctor -N N "
              "or -w LIST, or inside salloc/sbatch")
    if suspects:
        print(f"[doctor] suspect, not excluded: {', '.join(suspects)} (a slow pair no check or node known "
              "to be good explains; see the table)")
    print(f"[doctor] {len(reports)} node(s), {bad} failed" + (" - leave them out:" if bad else
                                                              " - no node to leave out" if suspects
                                                              else " - fleet healthy"))
    exclude = fleet.exclude_line(verdicts)
    if exclude:
        print(exclude)
    return EXIT_UNFIT if bad or missing > 0 else EXIT_HEALTHY


def main(argv: list[str]) -> int:
    if argv[:1] == ["fleet"]:
        return fleet_main(argv[1:])
    return node_main(argv)
