"""Rules for the launch path's refusals: each refusal of the rank
mapping or of detection that no value type explains is a registered rule, so
``env check`` and ``env explain`` name it. The conditions live once, where the
launch raises them (env/refusals.py, scheduler/variables.py,
hardware/devices.py, hardware/neuron.py, as errors.RuleRefusal); this module
only adapts them to the engine. ``master_addr_resolves`` and ``accelerators_free``
are host probes: they run only when the check context allows host probes.
"""
from __future__ import annotations

from collections.abc import Iterator

from primus_runner.env import refusals
from primus_runner.env.rules.engine import _State, rule
from primus_runner.env.rules.types import Finding
from primus_runner.errors import Problem, RuleRefusal

_DISTRIBUTED = ("NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "GPUS_PER_NODE")


def _finding(s: _State, problem: Problem | None) -> Iterator[Finding]:
    if problem is not None:
        yield s.found("error", problem[0], problem[2], problem[3], problem[1])


@rule("pet_rdzv_exported")
def _pet_rdzv(s: _State) -> Iterator[Finding]:
    yield from _finding(s, refusals.pet_rdzv_problem(s.env))


@rule("bare_rank_world_size")
def _bare_rank(s: _State) -> Iterator[Finding]:
    from primus_runner.env.rules.primus import _launcher_set
    from primus_runner.scheduler.variables import detect_source

    # NNODES/NODE_RANK a launcher or base_env default filled in are not the user's.
    view = {k: v for k, v in s.env.items() if k not in ("NNODES", "NODE_RANK") or not _launcher_set(s, k)}
    yield from _finding(s, refusals.bare_rank_problem(view, detect_source(s.env)))


@rule("master_addr_resolves")
def _master_resolves(s: _State) -> Iterator[Finding]:
    if not s.ctx.host_probes:
        return
    nnodes, node_rank, addr = s.uint("NNODES"), s.uint("NODE_RANK"), s.get("MASTER_ADDR")
    if nnodes is None or node_rank is None or addr is None:
        return
    root = s.env.get("PRIMUS_SYSFS_ROOT") or "/"
    yield from _finding(s, refusals.master_resolve_problem(addr, nnodes, node_rank, root))


@rule("accelerators_free")
def _accelerators_free(s: _State) -> Iterator[Finding]:
    if s.ctx.host_probes:
        yield from _finding(s, refusals.busy_devices_problem(s.env))


# --------------------------------------------------------------------------- the scheduler
def _users(s: _State, name: str) -> bool:
    """``name`` is the user's value: exported or given with --env, not set by the
    launcher, detection, a default or a layer (PRIMUS_DETECTED_VARS, PRIMUS_ENV_ORIGINS)."""
    if name in s.env.get("PRIMUS_DETECTED_VARS", "").split():
        return False
    for entry in s.env.get("PRIMUS_ENV_ORIGINS", "").split():
        key, _, origin = entry.partition(":")
        if key == name:
            return origin.startswith("user") or origin == "cli"
    return True


def _scheduler(s: _State) -> RuleRefusal | None:
    """What the rank mapping says of the user's values against the scheduler's (once per check)."""
    if not hasattr(s, "scheduler_refusal"):
        from primus_runner.scheduler.variables import scheduler_refusal

        view = {k: v for k, v in s.env.items() if k not in _DISTRIBUTED or _users(s, k)}
        s.scheduler_refusal = scheduler_refusal(view)  # type: ignore[attr-defined]
    found: RuleRefusal | None = s.scheduler_refusal  # type: ignore[attr-defined]
    return found


def _scheduler_rule(s: _State, rule_id: str) -> Iterator[Finding]:
    found = _scheduler(s)
    if found is not None and found.rule == rule_id:
        yield s.found("error", found.variable, found.reason, found.fix, found.value)


@rule("scheduler_contradiction")
def _contradiction(s: _State) -> Iterator[Finding]:
    yield from _scheduler_rule(s, "scheduler_contradiction")


@rule("scheduler_environment")
def _scheduler_environment(s: _State) -> Iterator[Finding]:
    yield from _scheduler_rule(s, "scheduler_environment")


# --------------------------------------------------------------------------- detection overrides
@rule("accelerator_known")
def _accelerator(s: _State) -> Iterator[Finding]:
    from primus_runner.hardware.devices import accelerator_problem

    value = (s.get("PRIMUS_ACCELERATOR") or "").strip()
    yield from _finding(s, accelerator_problem(value) if value else None)


@rule("gpu_model_known")
def _gpu_model(s: _State) -> Iterator[Finding]:
    from primus_runner.hardware.devices import gpu_model_problem

    value = (s.get("PRIMUS_GPU_MODEL") or "").strip()
    yield from _finding(s, gpu_model_problem(value) if value else None)


@rule("neuron_instance_known")
def _neuron_instance(s: _State) -> Iterator[Finding]:
    from primus_runner.hardware.neuron import instance_problem

    value = (s.get("PRIMUS_NEURON_INSTANCE") or "").strip()
    yield from _finding(s, instance_problem(value) if value else None)
