"""``slurm-plan``: what `primus-cli slurm` adds to the user's srun/sbatch flags.

runner/primus-cli-slurm.sh asks this once per call (it replaced the call that
only read the configuration) and applies the records, NUL-delimited
``kind\\0key\\0value\\0``:

  cfg / list / item        the merged configuration (runner/lib/config.sh)
  added FLAG               a flag for srun/sbatch, in order (config slurm.* for
                           what the user's flags do not give, then the defaults
                           --ntasks-per-node=1 and, for srun, --kill-on-bad-exit=1)
  inner FLAG               a flag of the batch script's own srun
  set NAME VALUE           PRIMUS_SLURM_MODE, PRIMUS_OPT_SRUN_NATIVE, PRIMUS_REQUEUE
  sim NAME VALUE           node 0's simulated step for --dry-run: PRIMUS_SIM_NODES,
                           _NODELIST, _TPN, _TASKS, _PLACEHOLDER
  sim-error WHY USAGE      the dry run cannot simulate the step (an invalid -w list)
  warn MESSAGE             a warning
  usage-error MESSAGE      the call is refused (exit 2 with the usage hint)

The user's flags are read in every spelling (-N 4, -N4, --nodes 4,
--nodes=4; likewise -t/--time, -p/--partition, -n/--ntasks, -w/--nodelist,
--gpus-per-node, --ntasks-per-node, -K/--kill-on-bad-exit, --signal,
--requeue/--no-requeue). :func:`plan` is pure.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence

from primus_runner.scheduler.step import Refused as StepRefused
from primus_runner.scheduler.step import config_on, resolve_mode, srun_native_configured

Record = tuple[str, str, str]

_NODES = re.compile(r"[0-9]+(-[0-9]+)?", re.ASCII)
_POSITIVE = re.compile(r"[1-9][0-9]*", re.ASCII)
# flag names -> what they set: (short, long)
_VALUED = {"NODES": ("-N", "--nodes"), "TIME": ("-t", "--time"), "PARTITION": ("-p", "--partition"),
           "GPUS": ("", "--gpus-per-node"), "TPN": ("", "--ntasks-per-node"), "NTASKS": ("-n", "--ntasks"),
           "NODELIST": ("-w", "--nodelist"), "SIGNAL": ("", "--signal")}


class Refused(Exception):
    """The call is refused with this message (exit 2)."""


def given_flags(flags: Sequence[str]) -> tuple[dict[str, str], bool]:
    """What the user's Slurm FLAGS say: {NAME: value} for NODES, TIME, PARTITION,
    GPUS, TPN, NTASKS, NODELIST, KILL, SIGNAL, REQUEUE (the last one given wins),
    and whether --requeue was given at all."""
    given: dict[str, str] = {}
    requeue = False
    i = 0
    while i < len(flags):
        arg = flags[i]
        nxt = flags[i + 1] if i + 1 < len(flags) else ""
        for name, (short, long) in _VALUED.items():
            if arg in (short, long) and arg:
                given[name] = nxt
                i += 1
                break
            if arg.startswith(long + "="):
                given[name] = arg.partition("=")[2]
                break
            if short and arg.startswith(short) and len(arg) > 2:
                given[name] = arg[2:]
                break
        else:
            if arg in ("-K", "--kill-on-bad-exit"):
                given["KILL"] = "1"
            elif arg.startswith("--kill-on-bad-exit="):
                given["KILL"] = arg.partition("=")[2]
            elif arg.startswith("-K") and len(arg) > 2:
                given["KILL"] = arg[2:]
            elif arg == "--requeue":
                given["REQUEUE"] = "1"
                requeue = True
            elif arg == "--no-requeue":
                given["REQUEUE"] = "0"
        i += 1
    return given, requeue


def _check_given(given: Mapping[str, str]) -> None:
    if "NODES" in given and not _NODES.fullmatch(given["NODES"]):
        raise Refused(f"-N/--nodes value '{given['NODES']}' is not a node count; accepted: N or MIN-MAX, e.g. -N 4.")
    if "TPN" in given and not _POSITIVE.fullmatch(given["TPN"]):
        raise Refused(f"--ntasks-per-node value '{given['TPN']}' is not a positive integer, "
                      "e.g. --ntasks-per-node=1.")
    if "NTASKS" in given and not _POSITIVE.fullmatch(given["NTASKS"]):
        raise Refused(f"-n/--ntasks value '{given['NTASKS']}' is not a positive integer.")


def simulated_step(given: Mapping[str, str], nodes_value: str) -> list[Record]:
    """Node 0's step for the dry run: the node count (-N or slurm.nodes, its
    minimum; else the -w list's size; else 1), the node list (-w when it names
    hosts, else placeholders), tasks per node and tasks."""
    from primus_runner.scheduler import hostlist

    first = nodes_value.partition("-")[0]
    nodes = int(first) if first.isdigit() and int(first) >= 1 else 1
    placeholder = "0"
    listed = given.get("NODELIST")
    if listed is not None and "/" not in listed:
        nodelist = listed
        if not nodes_value:  # -w without -N: Slurm allocates every listed node
            try:
                nodes = hostlist.count(listed)
            except hostlist.HostlistError as exc:
                return [("sim-error", str(exc),
                         f"-w/--nodelist '{listed}' is not a valid Slurm hostlist (see above).")]
    else:
        nodelist = "dryrun-node1" if nodes == 1 else f"dryrun-node[1-{nodes}]"
        placeholder = "1"
    if "TPN" in given:
        tpn = given["TPN"]
    elif "NTASKS" in given:
        tpn = str(-(-int(given["NTASKS"]) // nodes))
    else:
        tpn = "1"
    tasks = given["NTASKS"] if "NTASKS" in given else str(nodes * int(tpn))
    return [("sim", "PRIMUS_SIM_NODES", str(nodes)), ("sim", "PRIMUS_SIM_NODELIST", nodelist),
            ("sim", "PRIMUS_SIM_TPN", tpn), ("sim", "PRIMUS_SIM_TASKS", tasks),
            ("sim", "PRIMUS_SIM_PLACEHOLDER", placeholder)]


def _flags(flags: Sequence[str], launcher: str, config: Mapping[str, str], mode: str,
           srun_native: str, out: list[Record], spares: str = "") -> None:
    given, requeue = given_flags(flags)
    _check_given(given)
    nodes_value = given.get("NODES", "")
    value = config.get("slurm.nodes", "")
    if "NODES" not in given and value:
        if not _NODES.fullmatch(value):
            raise Refused(f"config slurm.nodes='{value}' is not a node count; accepted: N or MIN-MAX.")
        out.append(("added", f"--nodes={value}", ""))
        nodes_value = value
    for name, key, flag in (("TIME", "slurm.time", "--time"), ("PARTITION", "slurm.partition", "--partition"),
                            ("GPUS", "slurm.gpus_per_node", "--gpus-per-node"),
                            ("SIGNAL", "slurm.signal", "--signal")):
        value = config.get(key, "")
        if name not in given and value:
            out.append(("added", f"{flag}={value}", ""))
    # slurm.requeue: true -> --requeue (sbatch(1); srun allocations cannot be requeued: scontrol(1)).
    if config_on(config.get("slurm.requeue", "")):
        if launcher != "sbatch":
            out.append(("warn", "config slurm.requeue: true applies to 'primus-cli slurm sbatch' only; "
                                "an srun job cannot be requeued.", ""))
        else:
            if "REQUEUE" not in given:
                out.append(("added", "--requeue", ""))
            if given.get("REQUEUE") != "0":
                requeue = True
    try:
        mode = resolve_mode(mode, lambda key: config.get(key, ""))
    except StepRefused as refused:
        raise Refused(str(refused)) from None
    if not srun_native:
        srun_native = "1" if srun_native_configured(lambda key: config.get(key, "")) else "0"
    if "TPN" not in given and "NTASKS" not in given:
        out.append(("added", "--ntasks-per-node=1", ""))
    if launcher == "srun" and "KILL" not in given:
        out.append(("added", "--kill-on-bad-exit=1", ""))
    if "NTASKS" not in given:
        out.append(("inner", f"--ntasks-per-node={given.get('TPN') or '1'}", ""))
    if "KILL" not in given:
        out.append(("inner", "--kill-on-bad-exit=1", ""))
    out += [("set", "PRIMUS_SLURM_MODE", mode), ("set", "PRIMUS_OPT_SRUN_NATIVE", srun_native),
            ("set", "PRIMUS_REQUEUE", "1" if requeue else "0")]
    out += simulated_step(given, nodes_value)
    out += spare_nodes(spares, launcher, nodes_value)


def spare_nodes(spares: str, launcher: str, nodes_value: str) -> list[Record]:
    """``--spare-nodes N`` (PRIMUS_SLURM_SPARE_NODES): N more nodes at submission, so a
    restart that leaves nodes out keeps the job's size (docs/restart-on-failure.md);
    the batch script's first step uses the nodes asked for only."""
    if not spares or spares == "0":
        return []
    if not spares.isdigit():
        raise Refused(f"--spare-nodes '{spares}' is not a node count; accepted: a non-negative integer, "
                      "e.g. --spare-nodes 1.")
    if launcher != "sbatch":
        raise Refused("--spare-nodes applies to 'primus-cli slurm sbatch' only (its batch script restarts the "
                      "job's steps on them); use sbatch, or leave --spare-nodes out.")
    if not nodes_value.isdigit():
        raise Refused(f"--spare-nodes needs a fixed node count (-N N or config slurm.nodes), not "
                      f"'{nodes_value or 'none'}'; e.g. -N 3 --spare-nodes 1.")
    total = int(nodes_value) + int(spares)
    return [("added", f"--nodes={total}", ""), ("set", "PRIMUS_SPARE_NODES", spares)]


def plan(flags: Sequence[str], launcher: str, config: Mapping[str, str], mode: str = "",
         srun_native: str = "", spares: str = "") -> list[Record]:
    """The records for the user's Slurm FLAGS, LAUNCHER (srun|sbatch), CONFIG
    (dotted key -> value as the shell reads it), the MODE named on the command
    line ('' none) and --srun-native ('1', or '' none). A refusal is the last
    record (after any warning said before it)."""
    out: list[Record] = []
    try:
        _flags(flags, launcher, config, mode, srun_native, out, spares)
    except Refused as refused:
        out.append(("usage-error", str(refused), ""))
    return out


def main(argv: list[str]) -> int:
    """slurm-plan LAUNCHER CONFIG MODE SRUN_NATIVE -- FLAGS... (CONFIG, MODE and
    SRUN_NATIVE may be empty)."""
    if len(argv) < 5 or argv[4] != "--" or argv[0] not in ("srun", "sbatch"):
        print("usage: python3 -m primus_runner slurm-plan srun|sbatch CONFIG MODE SRUN_NATIVE -- FLAGS...",
              file=sys.stderr)
        return 2
    from primus_runner import log
    from primus_runner.config import files as cfgmod
    from primus_runner.shellfmt import nul_records

    cfg = cfgmod.load(argv[1] or None)
    for warning in cfg.warnings:
        log.warn(warning)
    records = list(cfgmod.config_records(cfg))
    config = {key: value for kind, key, value in records if kind == "cfg"}
    sys.stdout.buffer.write(nul_records(records + plan(argv[5:], argv[0], config, argv[2], argv[3],
                                                             os.environ.get("PRIMUS_SLURM_SPARE_NODES", ""))))
    return 0
