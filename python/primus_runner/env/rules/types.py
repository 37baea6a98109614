"""Rule types and value parsing: findings, the check context, and the per-type
value checks every rule shares (docs/configuration.md "Environment variables and checks").
Host, host:port and index-list syntax come from python/primus_runner/grammar.py (the one grammar)."""
from __future__ import annotations

import re
from collections.abc import Mapping

from primus_runner.env.registry import Variable, record
from primus_runner.facts import ACCELERATORS as ACCELERATORS  # re-exported: registry shared_facts
from primus_runner.grammar import hostport_problem, index_list, is_uint, is_valid_host
from primus_runner.grammar import neuron_family as neuron_family  # re-exported
from primus_runner.grammar import parse_range_list as parse_range_list  # re-exported

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_GFX = re.compile(r"gfx[0-9a-f]{3,4}(:[a-z]+[+-])*\Z")
_EVENT_WORD = re.compile(r"\^?[A-Za-z][A-Za-z0-9_]*\Z")
_BOOL = {"0": False, "1": True, "false": False, "true": True}


class Finding(record("Finding", "severity variable value message fix rule", {"rule": ""})):  # type: ignore[misc]
    """One problem: ``severity`` is error|warning|info; ``value`` is masked for secrets;
    ``message`` is the reason (from the references); ``fix`` what to do; ``rule`` the id."""

    __slots__ = ()
    severity: str
    variable: str
    value: str
    message: str
    fix: str
    rule: str


_CONTEXT_FIELDS = ("cpu_count neuron_cores neuron_instance_type neuron_family container "
                   "gpus_per_node neuron_devices neuron_cores_per_device neuron_default_lnc forwarded "
                   "host_probes")
_CONTEXT_DEFAULTS: dict[str, object] = {name: None for name in _CONTEXT_FIELDS.split()}
_CONTEXT_DEFAULTS["container"] = False
_CONTEXT_DEFAULTS["forwarded"] = ()
_CONTEXT_DEFAULTS["host_probes"] = True


class CheckContext(record("CheckContext", _CONTEXT_FIELDS, _CONTEXT_DEFAULTS)):  # type: ignore[misc]
    """Facts about the machine and the launch that some rules need.

    ``cpu_count`` (None: os.cpu_count()); ``neuron_cores``: logical NeuronCores the
    instance exposes (None: unknown, then derived from the device facts or the
    instance type); ``neuron_instance_type`` (e.g. trn1.32xlarge) and
    ``neuron_family`` (trn1, trn2, inf2...); ``container``: the launch goes into a
    container; ``gpus_per_node``: fallback when GPUS_PER_NODE is not in the env;
    ``neuron_devices`` / ``neuron_cores_per_device`` / ``neuron_default_lnc``:
    detected device facts (the devices helper exports them as PRIMUS_NEURON_*);
    ``forwarded``: names the container launch passes explicitly (--env);
    ``host_probes``: rules that touch the network (name resolution) may run
    (``env check --no-host-probes`` turns them off).
    """

    __slots__ = ()
    cpu_count: int | None
    neuron_cores: int | None
    neuron_instance_type: str | None
    neuron_family: str | None
    container: bool
    gpus_per_node: int | None
    neuron_devices: int | None
    neuron_cores_per_device: int | None
    neuron_default_lnc: int | None
    forwarded: tuple[str, ...]
    host_probes: bool

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, container: bool = False,
                 cpu_count: int | None = None) -> CheckContext:
        """Context from ``env``: PRIMUS_NEURON_INSTANCE, the detected device facts
        PRIMUS_NEURON_DEVICES / _CORES_PER_DEVICE / _DEFAULT_LNC / _LOGICAL_CORES,
        and GPUS_PER_NODE."""
        def number(name: str) -> int | None:
            value = env.get(name, "")
            return int(value) if is_uint(value) else None

        instance = env.get("PRIMUS_NEURON_INSTANCE") or None
        default_lnc = number("PRIMUS_NEURON_DEFAULT_LNC")
        logical = number("PRIMUS_NEURON_LOGICAL_CORES")
        chosen_lnc = number("NEURON_LOGICAL_NC_CONFIG")
        if chosen_lnc is not None and chosen_lnc != default_lnc:
            logical = None  # counted at the default LNC: recomputed from the devices
        return cls(cpu_count=cpu_count, neuron_cores=logical, neuron_instance_type=instance,
                   neuron_family=neuron_family(instance), container=container,
                   gpus_per_node=number("GPUS_PER_NODE"),
                   neuron_devices=number("PRIMUS_NEURON_DEVICES"),
                   neuron_cores_per_device=number("PRIMUS_NEURON_CORES_PER_DEVICE"),
                   neuron_default_lnc=default_lnc)


# --------------------------------------------------------------------------- values
def parse_bool(value: str) -> bool | None:
    return _BOOL.get(value.strip().lower()) if value.strip() == value else None


def parse_uint(value: str) -> int | None:
    return int(value) if is_uint(value) else None


def type_problem(var: Variable, value: str) -> str | None:
    """Why ``value`` is not a valid ``var.type`` value, or None when it is."""
    kind = var.type
    ok = True
    number: float | None = None
    if kind == "bool":
        ok = parse_bool(value) is not None
    elif kind == "switch":
        ok = value in ("0", "1")
    elif kind in ("uint", "bytes", "mib", "seconds", "port"):
        ok = bool(is_uint(value))
        number = int(value) if ok else None
        if ok and kind == "port" and not 0 <= int(value) <= 65535:
            return "is not a TCP port (0-65535)"
    elif kind == "int":
        ok = bool(_INT.match(value))
        number = int(value) if ok else None
    elif kind == "float":
        ok = bool(_FLOAT.match(value))
        number = float(value) if ok else None
    elif kind == "enum":
        values = var.values or ()
        ok = value.lower() in {v.lower() for v in values} if var.ci else value in values
    elif kind == "host":
        ok = is_valid_host(value)
    elif kind == "hostport":
        why = hostport_problem(value)
        if why is not None:
            return f"{why}; accepted: {var.accepted()}"
    elif kind == "range_list":
        ok = parse_range_list(value) is not None
        if ok and index_list(value)[1] is not None:
            return f"{index_list(value)[1]}; accepted: {var.accepted()}"
    elif kind == "int_list":
        ok = all(is_uint(item) for item in value.split(","))
    elif kind == "s3uri":
        ok = value.startswith("s3://") and len(value) > 5
    elif kind == "ratio":
        terms = value.split(":")
        ok = len(terms) == 2 and all(is_uint(p) and int(p) > 0 for p in terms)
    elif kind == "gpu_archs":
        ok = all(_GFX.match(item) for item in value.split(";"))
    elif kind == "hbm_init":
        ok = value in ("off", "fp32_nan", "bf16_nan") or (
            bool(is_uint(value)) and int(value) <= 0xFFFFFFFF)
    if not ok:
        return f"is not {var.accepted()}"
    if number is not None:
        if var.min is not None and number < var.min:
            return f"is below the minimum {var.min:g}; accepted: {var.accepted()}"
        if var.max is not None and number > var.max:
            return f"is above the maximum: accepted is {var.accepted()}"
    return None
