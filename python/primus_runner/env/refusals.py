"""The precedence step's refusals as registered findings.

Owns the conditions under which the rank mapping (ranks.py) refuses a launch
for reasons no value type explains - an exported ``PET_RDZV_*``, a bare
``RANK``/``WORLD_SIZE``, a ``MASTER_ADDR`` that does not resolve on a node
other than 0 - as pure functions returning (variable, value, message, fix).
ranks.py raises them as errors.RuleRefusal (a UsageError that also carries
the rule id; re-exported here), and rules/launch_inputs.py registers the same functions as rules
of the engine, so ``env check`` and ``env explain`` name them and the launcher
prints them as findings. Must stay light (no registry, no engine import): the
launch helper imports it on every launch.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from primus_runner.errors import Problem, RuleRefusal
from primus_runner.facts import CHECKED_BEFORE_VERDICT
from primus_runner.grammar import is_uint

__all__ = ["Problem", "RuleRefusal", "bare_rank_problem", "early_value_problem", "master_resolve_problem",
           "pet_rdzv_problem", "raise_early_value_problem"]

_DECIMAL = re.compile(r"[0-9]+\Z")


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return value if value else None


def pet_rdzv_problem(env: Mapping[str, str]) -> Problem | None:
    """torchrun reads PET_<OPTION> variables as its option defaults
    (torch.distributed.argparse_util.env), so an exported PET_RDZV_BACKEND=c10d
    (elastic PyTorchJobs set it) turns the launcher's static rendezvous into an
    elastic one whose group ranks follow arrival order. Refused unless
    PRIMUS_ELASTIC=1 asks for it."""
    found = sorted(n for n in env if n.startswith("PET_RDZV_") and _get(env, n) is not None)
    if not found or _get(env, "PRIMUS_ELASTIC") == "1":
        return None
    others = f" (also {', '.join(found[1:])})" if len(found) > 1 else ""
    return (found[0], env[found[0]],
            "is exported" + others + ": torchrun reads PET_* variables as its defaults and would run "
            "an elastic rendezvous that assigns ranks by arrival, so NODE_RANK would not decide "
            "which node is rank 0",
            "unset " + " ".join(found) + " (the launcher starts torchrun with a static rendezvous "
            "from NNODES, NODE_RANK, MASTER_ADDR and MASTER_PORT), or export PRIMUS_ELASTIC=1 to "
            "use elastic rendezvous on purpose")


def bare_rank_problem(env: Mapping[str, str], scheduler: str | None) -> Problem | None:
    """RANK/WORLD_SIZE exported outside any known scheduler and without
    NNODES/NODE_RANK: they may count nodes or processes; guessing would start
    one node alone."""
    if scheduler is not None or any(_get(env, n) is not None for n in ("LOCAL_RANK", "NNODES", "NODE_RANK")):
        return None
    rank, size = _get(env, "RANK"), _get(env, "WORLD_SIZE")
    if rank is None or size is None or not _DECIMAL.match(size) or int(size) <= 1:
        return None
    return ("RANK", rank,
            f"is exported with WORLD_SIZE={size} but NNODES and NODE_RANK are not, outside Slurm, "
            "MPI or a Kubernetes pod: the launcher cannot tell whether they count nodes or "
            "processes and would start this node alone",
            f"export NNODES={size} NODE_RANK={rank} when they count nodes (Kubeflow PyTorchJob v1 "
            "pod index), or unset RANK and WORLD_SIZE")


def master_resolve_problem(addr: str, nnodes: int, node_rank: int, root: str) -> Problem | None:
    """On every node but rank 0, MASTER_ADDR must resolve here (a host probe:
    /etc/hosts of ``root``, else this machine's resolver); otherwise torchrun's
    rendezvous retries for its whole timeout before failing."""
    if nnodes <= 1 or node_rank == 0 or not addr:
        return None
    from primus_runner.network.routes import resolves

    if resolves(root, addr):
        return None
    return ("MASTER_ADDR", addr,
            f"does not resolve on this node (NODE_RANK {node_rank}): the rendezvous would retry "
            "until its timeout and fail",
            "use node 0's IP address or a name this node's /etc/hosts or DNS knows, the same on "
            "every node")


def busy_devices_problem(env: Mapping[str, str]) -> Problem | None:
    """A host probe: another process holds the accelerator device files this launch is
    about to use (ROCm: /dev/kfd and the render nodes; Neuron: /dev/neuron*), so the
    runtime would fail later ("cores in use") or share memory with a leftover job.
    PRIMUS_ALLOW_BUSY_DEVICES=1 lets it start anyway."""
    from primus_runner.hardware.holders import PREFIXES_OF, device_holders

    allowed = env.get("PRIMUS_ALLOW_BUSY_DEVICES", "")
    prefixes = PREFIXES_OF.get(env.get("PRIMUS_ACCELERATOR", ""))
    if not prefixes or allowed == "1":
        return None
    # Another task of the same Slurm step (srun-native: one task per worker) is not a leftover.
    step = {k: env[k] for k in ("SLURM_JOB_ID", "SLURM_STEP_ID") if env.get(k)}
    held = device_holders(env.get("PRIMUS_SYSFS_ROOT") or "/", env.get("PRIMUS_DEV_ROOT") or "/", prefixes,
                          kin=step if "SLURM_JOB_ID" in step else None)
    if not held:
        return None
    return ("PRIMUS_ALLOW_BUSY_DEVICES", allowed,
            "another process holds the accelerators this launch is about to use: "
            + "; ".join(h.describe() for h in held),
            f"end it (kill {' '.join(str(h.pid) for h in held)}: a leftover job keeps GPU memory or Neuron "
            "cores) or drain the node; when sharing this node's accelerators is intended, export "
            "PRIMUS_ALLOW_BUSY_DEVICES=1")


# What each early-checked variable is for, in the refusal's words.
_EARLY_USE = {
    "PRIMUS_KILL_GRACE": ("the stop grace: seconds between the stop signal and SIGKILL",
                          "export PRIMUS_KILL_GRACE=N with N whole seconds"),
    "PRIMUS_HOOK_TIMEOUT": ("the time limit of each hook in seconds (0: no limit)",
                            "export PRIMUS_HOOK_TIMEOUT=N (0: no limit)"),
    "PRIMUS_NEURON_CORES_PER_PROC": ("logical NeuronCores per process (--neuron-cores-per-proc)",
                                     "pass --neuron-cores-per-proc K with K >= 1, or unset "
                                     "PRIMUS_NEURON_CORES_PER_PROC"),
}


def early_value_problem(env: Mapping[str, str]) -> Problem | None:
    """The first variable of shared_facts ``checked_before_verdict`` whose value is
    not a whole number within its registered min and max. The launcher uses these
    before its verdict (the grace from the first signal, the hook limit from the
    first hook, the cores per process in the Neuron layer), so the launch helper
    asks this at its first step; it is the registry type check (rule ``type``)
    done early, with the same bounds (generated facts.py)."""
    for name, (default, low, high) in CHECKED_BEFORE_VERDICT.items():
        value = _get(env, name)
        if value is None:
            continue
        number = int(value) if is_uint(value) else None
        if number is not None and (low is None or number >= low) and (high is None or number <= high):
            continue
        use, fix = _EARLY_USE.get(name, ("a whole number", f"export {name}=N"))
        bounds = f"from {low or 0} to {high}" if high is not None else f"of at least {low or 0}"
        default_text = f", default {default}" if default is not None else ""
        return (name, value,
                f"is not a whole number {bounds} ({use}{default_text}); it is used before the "
                "verdict, so the launch stops here", fix)
    return None


def raise_early_value_problem(env: Mapping[str, str]) -> None:
    """Raise early_value_problem as the registry's ``type`` rule (exit 2)."""
    problem = early_value_problem(env)
    if problem is not None:
        raise RuleRefusal("type", problem)
