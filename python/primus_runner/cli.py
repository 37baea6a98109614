"""Subcommand dispatch for ``python3 -m primus_runner``.

Each command lives in its own module exposing ``main(argv: list[str]) -> int``.
Modules are imported lazily so that a launch step pays only for what it uses
(importing torch for ``env check`` would blow docs/run-on-one-node.md "Launch overhead").
"""
from __future__ import annotations

import sys

from primus_runner import __version__
from primus_runner.errors import PrimusError

# command -> (module, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "config": ("primus_runner.config.commands", "show the merged configuration, render ${VAR} templates"),
    "launch": ("primus_runner.launch.helper", "internal: resolve config, ranks and devices for a launch"),
    "layer": ("primus_runner.launch.layers", "internal: the values of the Neuron and JAX layers"),
    "container": ("primus_runner.launch.container", "internal: plan a container launch (runtime argv, env)"),
    "slurm-plan": ("primus_runner.launch.slurm_submit", "internal: the flags primus-cli slurm adds to srun/sbatch"),
    "slurm-step": ("primus_runner.scheduler.step", "internal: the Slurm step one node's entry runs in"),
    "slurm-requeue": ("primus_runner.scheduler.requeue", "internal: requeue a Slurm job as its run ends?"),
    "supervise": ("primus_runner.monitor.supervise", "internal: a run's notice forwarded, its stop, what it left"),
    "restart-loop": ("primus_runner.launch.restart_loop", "internal: run a launch again after a failure"),
    "slurm-grace": ("primus_runner.scheduler.stop_grace", "internal: the stop grace under Slurm (KillWait)"),
    "env": ("primus_runner.env.commands", "list, explain, check, show and document environment variables"),
    "hostlist": ("primus_runner.scheduler.hostlist", "expand or compress Slurm hostlist expressions"),
    "detect": ("primus_runner.launch.detect", "what a launch on this host uses: ranks, devices, NICs, GPUS_PER_NODE"),
    "ranks": ("primus_runner.cluster.ranks", "map scheduler variables to NNODES/NODE_RANK/MASTER_ADDR"),
    "nics": ("primus_runner.network", "detect RDMA HCAs, RoCE GID index and the socket interface"),
    "devices": ("primus_runner.hardware.devices", "detect AMD GPUs, Neuron devices, NVIDIA GPUs and NUMA nodes"),
    "data": ("primus_runner.dataprep.cli", "prepare tokenized data once for all nodes"),
    "train": ("primus_runner.workload.train", "embedded CPU workload: train pretrain --config FILE"),
    "preflight": ("primus_runner.workload.preflight", "check the distributed environment on all ranks"),
    "k8s": ("primus_runner.k8s.cli", "render, check and act on Kubernetes manifests (JobSet, TrainJob, PyTorchJob)"),
    "doctor": ("primus_runner.doctor.cli", "check this node (or rank a fleet's reports): fit to train on?"),
    "report": ("primus_runner.report.cli", "draw a run or a doctor run as one self-contained HTML file"),
}

USAGE = "usage: python3 -m primus_runner [--version] <command> [args...]"


def _help() -> str:
    lines = [USAGE, "", "commands:"]
    width = max(len(name) for name in COMMANDS)
    for name, (_, summary) in COMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {summary}")
    lines.append("")
    lines.append("Run 'python3 -m primus_runner <command> --help' for a command's options.")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_help())
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"primus-runner {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"primus-runner: error: unknown command '{name}'; accepted: "
              f"{', '.join(COMMANDS)}. Run with --help for the list.", file=sys.stderr)
        return 2
    # __import__ and sys.modules: importing importlib itself costs ~1 ms of every launch.
    __import__(COMMANDS[name][0])
    module = sys.modules[COMMANDS[name][0]]
    try:
        return int(module.main(rest) or 0)
    except PrimusError as exc:
        from primus_runner import log

        for line in str(exc).splitlines() or [""]:
            log.error(line)
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (the launcher stopped): no "Exception ignored"
        # at exit when Python flushes stdout again (Python docs, signal module:
        # "Note on SIGPIPE").
        _quiet_stdout()
        return 0
    except KeyboardInterrupt:
        # Ctrl-C: the launcher prints the closing line; no traceback here.
        _quiet_stdout()
        return 130


def _quiet_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
