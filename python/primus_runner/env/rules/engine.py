"""Rules engine: check an environment against the registry (docs/configuration.md "Environment variables and checks").

``check(env, accelerator=..., context=...)`` returns findings, most severe first.
Severity policy: ``error`` where the launcher, the runtime or the job would fail
(bad type, out of range, impossible combination) -> the launch stops with exit 2;
``warning`` where the runtime silently clamps, ignores, overrides or deprecates ->
printed, exit 0 (``--strict`` promotes); ``info`` for advice and for checks that
cannot be made with the facts at hand.

Every rule is a function registered with ``@rule("id")``; the ids, severities and
texts are documented in data/variables.yaml (``rules:``) and a test keeps both in
agreement. An empty value counts as unset (shell ``${VAR:-default}`` semantics).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

from primus_runner.env.registry import Registry, Variable, load
from primus_runner.env.rules import distributed
from primus_runner.env.rules.types import (
    ACCELERATORS,
    SEVERITY_ORDER,
    CheckContext,
    Finding,
    parse_bool,
    parse_uint,
    type_problem,
)
from primus_runner.hardware.neuron_cores import logical_cores
from primus_runner.masking import mask

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any


# --------------------------------------------------------------------------- state
class _State:
    """What a rule sees: the environment, the registry, the context, helpers."""

    def __init__(self, env: Mapping[str, str], registry: Registry, context: CheckContext,
                 accelerator: str) -> None:
        self.env = env
        self.reg = registry
        self.ctx = context
        self.accel = accelerator
        families = registry.neuron.get("families", {})
        self.family = context.neuron_family
        facts = families.get(self.family) if self.family else None
        self.family_facts: dict[str, Any] | None = facts  # per-family facts of the reference
        if context.neuron_cores_per_device or context.neuron_default_lnc:
            # Detected facts win over the table (and exist even without a family).
            facts = dict(facts or {})
            if context.neuron_cores_per_device:
                facts["cores_per_device"] = context.neuron_cores_per_device
            if context.neuron_default_lnc:
                facts["default_lnc"] = context.neuron_default_lnc
        self.facts: dict[str, Any] | None = facts

    def get(self, name: str) -> str | None:
        value = self.env.get(name)
        return value if value else None

    def flag(self, name: str) -> bool | None:
        """A Neuron boolean, or None when unset or not a boolean."""
        value = self.get(name)
        return parse_bool(value) if value is not None else None

    def uint(self, name: str) -> int | None:
        value = self.get(name)
        return parse_uint(value) if value is not None else None

    def found(self, severity: str, name: str, message: str, fix: str,
              value: str | None = None) -> Finding:
        raw = self.env.get(name, "") if value is None else value
        return Finding(severity, name, mask(name, raw), message, fix)

    def lnc(self) -> tuple[int | None, bool]:
        """(effective logical core size, explicitly set?)."""
        explicit = self.uint("NEURON_LOGICAL_NC_CONFIG")
        if explicit is None:
            explicit = self.uint("NEURON_RT_VIRTUAL_CORE_SIZE")
        if explicit is not None:
            return explicit, True
        return (self.facts or {}).get("default_lnc"), False

    def instance_cores(self) -> int | None:
        """Logical NeuronCores of the instance (context, else instance facts)."""
        if self.ctx.neuron_cores is not None:
            return self.ctx.neuron_cores
        instance = (self.ctx.neuron_instance_type or "").strip().lower()
        devices = self.ctx.neuron_devices or self.reg.neuron.get(
            "devices_per_instance", {}).get(instance)
        lnc, _ = self.lnc()
        return logical_cores(devices, (self.facts or {}).get("cores_per_device"), lnc)


RuleFunc = Callable[[_State], Iterator[Finding]]
RULES: dict[str, RuleFunc] = {}


def rule(rule_id: str) -> Callable[[RuleFunc], RuleFunc]:
    def register(func: RuleFunc) -> RuleFunc:
        RULES[rule_id] = func
        return func
    return register


def _default_hint(var: Variable) -> str:
    if var.default is not None and var.default != "":
        return f", or unset it to get the default {var.default}"
    return ", or unset it"


# --------------------------------------------------------------------------- generic rules
# Names a rule of their own judges (the launch refuses them with the same words):
# master_port_range, accelerator_known, gpu_model_known.
_OWN_RULE = frozenset(("MASTER_PORT", "PRIMUS_ACCELERATOR", "PRIMUS_GPU_MODEL"))


@rule("type")
def _type(s: _State) -> Iterator[Finding]:
    for name, value in s.env.items():
        if not value:
            continue
        var = s.reg.get(name)
        if var is None or name in _OWN_RULE:  # judged by a rule of their own
            continue
        if name in distributed.CHECKED:  # the launcher's rank mapping asks the same function
            found = distributed.problem(name, value)
            if found is not None:
                yield s.found("error", name, *found)
            continue
        problem = type_problem(var, value)
        if problem is None:
            continue
        message = f"{problem}"
        if var.invalid_effect:
            message += f"; {var.invalid_effect}"
        severity = var.invalid_severity
        yield s.found(severity, name, message,
                      f"set {name} to {var.accepted()}{_default_hint(var)}")


@rule("deprecated")
def _deprecated(s: _State) -> Iterator[Finding]:
    for name, value in s.env.items():
        if not value:
            continue
        var = s.reg.get(name)
        if var is None or var.deprecated is None:
            continue
        dep = var.deprecated
        message = f"is a deprecated name ({dep.status}); {dep.effect}"
        if name == "NEURON_RT_VIRTUAL_CORE_SIZE" and s.get("NEURON_LOGICAL_NC_CONFIG"):
            message = ("is deprecated and ignored here: the runtime consults it only "
                       f"when NEURON_LOGICAL_NC_CONFIG is unset, and that is set to "
                       f"{s.env['NEURON_LOGICAL_NC_CONFIG']!r}")
        if dep.replacement:
            fix = f"remove {name} and use {' or '.join(dep.replacement)} instead"
        else:
            fix = f"remove {name}; move to the explicit NRT async APIs (nrta_*)"
        yield s.found("warning", name, message, fix)


@rule("unknown_neuron_variable")
def _unknown_neuron(s: _State) -> Iterator[Finding]:
    for name, value in s.env.items():
        if not name.startswith("NEURON_RT_") or s.reg.get(name) is not None:
            continue
        if s.reg.split_family(name)[0] is not None:
            continue  # an unknown submodule: log_submodule_names reports it
        hint = s.reg.suggest(name)
        yield s.found("warning", name,
                      "is not a supported Neuron runtime variable: the runtime reference lists "
                      "every customer variable, and unlisted ones are unsupported internal "
                      "diagnostics (or a misspelling, which the runtime ignores)",
                      f"did you mean {hint}? Rename it" if hint else f"remove {name}", value)


@rule("unknown_primus_variable")
def _unknown_primus(s: _State) -> Iterator[Finding]:
    import difflib

    names = s.reg.names()
    for name, value in s.env.items():
        if not name.startswith(("PRIMUS_", "NCCL_", "RCCL_", "HIPBLASLT_", "XLA_")):
            continue
        if s.reg.get(name) is not None:
            continue
        # One-letter slips only (ratio >= 0.93). Such a ratio bounds the length
        # difference, so only names of about the same length are compared:
        # a launch environment holds several runner-internal PRIMUS_* names
        # and comparing each with every registered name cost ~100 ms.
        slack = max(2, len(name) // 12)
        near = [n for n in names if abs(len(n) - len(name)) <= slack]
        found = difflib.get_close_matches(name, near, n=1, cutoff=0.93)
        if not found:
            continue
        hint = found[0]
        yield s.found("info", name, f"is not a registered variable but looks like {hint}",
                      f"rename it to {hint} if that was meant", value)


@rule("not_forwarded")
def _not_forwarded(s: _State) -> Iterator[Finding]:
    if not s.ctx.container:
        return
    explicit = set(s.ctx.forwarded or ())
    for name, value in s.env.items():
        if not value or name == "TE_HIPBLASLT_ALGO_SELECTION" or name in explicit:
            continue
        var = s.reg.get(name)
        if var is None or var.host or s.reg.container_forwards(name):
            continue
        yield s.found("warning", name,
                      "is set on the host but is neither on the container allowlist (Primus "
                      "docs, environment variables, section 11) nor under a forwarded prefix, so it does not "
                      "reach the job in the container",
                      f"pass it explicitly: --env {name} (takes the host value) or "
                      f"--env {name}=...")


@rule("accelerator_elsewhere")
def _accelerator_elsewhere(s: _State) -> Iterator[Finding]:
    # Neuron variables checked on a host without Neuron (a login node, a CPU CI
    # box): the rules that need the instance's facts could not run, and the
    # ones that did drop to info. Name the accelerator and the flag that checks them.
    if s.accel not in ("cpu", "rocm", "cuda"):
        return
    names = sorted(name for name, value in s.env.items() if value and _for_neuron(s.reg.get(name)))
    if not names:
        return
    others = f" and {len(names) - 1} other Neuron variable(s): {' '.join(names[1:6])}" + (
        " ..." if len(names) > 6 else "") if len(names) > 1 else ""
    yield s.found("info", names[0],
                  f"is a setting of the Neuron runtime (Trainium/Inferentia){others}, but this "
                  f"host's accelerator is {s.accel}: what needs a Neuron host (the instance's "
                  "cores, logical core size, EFA) was not checked here",
                  "check them for the nodes they will run on: primus-cli env check "
                  "--accelerator neuron, with PRIMUS_NEURON_INSTANCE=<type> (e.g. trn2.48xlarge) "
                  "for that instance's facts")


def _for_neuron(var: Variable | None) -> bool:
    return var is not None and var.subsystem.startswith("neuron-")


# --------------------------------------------------------------------------- driver
_ROCM_GROUP = ("rocm", "nccl", "hipblaslt", "transformer-engine")


def _irrelevant(var: Variable | None, accelerator: str) -> bool:
    """True when ``var`` has no effect on the chosen accelerator."""
    if var is None or accelerator == "auto":
        return False
    neuron = var.subsystem.startswith("neuron-")
    rocm = var.subsystem in _ROCM_GROUP
    if accelerator in ("rocm", "cuda"):
        return neuron
    if accelerator == "neuron":
        return rocm
    return neuron or rocm  # cpu


def check(env: Mapping[str, str], *, accelerator: str | None = None,
          context: CheckContext | None = None, registry: Registry | None = None) -> list[Finding]:
    """All findings for ``env``, errors first.

    ``accelerator`` (auto|rocm|cuda|neuron|cpu; default PRIMUS_ACCELERATOR, else auto)
    turns findings about variables that have no effect on it into ``info``.
    """
    reg = registry or load()
    accel = (accelerator or env.get("PRIMUS_ACCELERATOR") or "auto").lower()
    if accel not in ACCELERATORS:
        accel = "auto"  # the type rule reports a bad PRIMUS_ACCELERATOR; check everything
    ctx = context or CheckContext.from_env(env)
    if ctx.cpu_count is None:
        ctx = _with_cpu_count(ctx)
    state = _State(env, reg, ctx, accel)
    findings: list[Finding] = []
    for rule_id, func in RULES.items():
        for finding in func(state):
            finding = _finish(finding, rule_id, reg, accel)
            findings.append(finding)
    findings.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    return findings


def _with_cpu_count(ctx: CheckContext) -> CheckContext:
    result: CheckContext = ctx.replace(cpu_count=os.cpu_count())
    return result


def _finish(finding: Finding, rule_id: str, reg: Registry, accel: str) -> Finding:
    if finding.severity != "info" and _irrelevant(reg.get(finding.variable), accel):
        finding = finding.replace(
            severity="info", message=f"{finding.message} (no effect: accelerator is {accel})")
    result: Finding = finding.replace(rule=rule_id)
    return result


def exit_code(findings: list[Finding], strict: bool = False) -> int:
    """2 when an error (or, with strict, a warning) was found, else 0."""
    blocking = {"error", "warning"} if strict else {"error"}
    return 2 if any(f.severity in blocking for f in findings) else 0
