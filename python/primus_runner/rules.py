"""Rules engine: check an environment against the registry (SPEC section 7).

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
import re
from collections.abc import Callable, Iterator, Mapping
from primus_runner.masking import mask
from primus_runner.registry import Registry, Variable, load, record

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
ACCELERATORS = ("auto", "rocm", "cuda", "neuron", "cpu")

_UINT = re.compile(r"[0-9]+\Z")
_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_RANGE_ITEM = re.compile(r"([0-9]+)(?:-([0-9]+))?\Z")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?\Z")
_IPV6 = re.compile(r"[0-9A-Fa-f:.]+(%[A-Za-z0-9._-]+)?\Z")
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
                   "gpus_per_node neuron_devices neuron_cores_per_device neuron_default_lnc")
_CONTEXT_DEFAULTS: dict[str, object] = {name: None for name in _CONTEXT_FIELDS.split()}
_CONTEXT_DEFAULTS["container"] = False


class CheckContext(record("CheckContext", _CONTEXT_FIELDS, _CONTEXT_DEFAULTS)):  # type: ignore[misc]
    """Facts about the machine and the launch that some rules need.

    ``cpu_count`` (None: os.cpu_count()); ``neuron_cores``: logical NeuronCores the
    instance exposes (None: unknown, then derived from the device facts or the
    instance type); ``neuron_instance_type`` (e.g. trn1.32xlarge) and
    ``neuron_family`` (trn1, trn2, inf2...); ``container``: the launch goes into a
    container; ``gpus_per_node``: fallback when GPUS_PER_NODE is not in the env;
    ``neuron_devices`` / ``neuron_cores_per_device`` / ``neuron_default_lnc``:
    detected device facts (the devices helper exports them as PRIMUS_NEURON_*).
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

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, container: bool = False,
                 cpu_count: int | None = None) -> CheckContext:
        """Context from ``env``: PRIMUS_NEURON_INSTANCE, the detected device facts
        PRIMUS_NEURON_DEVICES / _CORES_PER_DEVICE / _DEFAULT_LNC / _LOGICAL_CORES,
        and GPUS_PER_NODE."""
        def number(name: str) -> int | None:
            value = env.get(name, "")
            return int(value) if _UINT.match(value) else None

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


def neuron_family(instance_type: str | None) -> str | None:
    """trn1.32xlarge -> trn1, trn1n.32xlarge -> trn1, trn2u.48xlarge -> trn2."""
    if not instance_type:
        return None
    match = re.match(r"(trn|inf)([0-9]+)", instance_type.strip().lower())
    return f"{match.group(1)}{match.group(2)}" if match else None


# --------------------------------------------------------------------------- values
def parse_bool(value: str) -> bool | None:
    return _BOOL.get(value.strip().lower()) if value.strip() == value else None


def parse_uint(value: str) -> int | None:
    return int(value) if _UINT.match(value) else None


def parse_range_list(value: str) -> list[tuple[int, int]] | None:
    """'0-3,8' -> [(0, 3), (8, 8)]; None when malformed or a range runs backwards."""
    ranges = []
    for item in value.split(","):
        match = _RANGE_ITEM.match(item)
        if not match:
            return None
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low:
            return None
        ranges.append((low, high))
    return ranges


def _valid_host(value: str) -> bool:
    return bool(_HOST.match(value)) or (":" in value and bool(_IPV6.match(value)))


def _split_hostport(value: str) -> tuple[str, str] | None:
    if value.startswith("["):
        end = value.find("]:")
        return (value[1:end], value[end + 2:]) if end > 0 else None
    if ":" not in value:
        return None
    host, port = value.rsplit(":", 1)
    return host, port


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
        ok = bool(_UINT.match(value))
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
        ok = _valid_host(value)
    elif kind == "hostport":
        parts = _split_hostport(value)
        ok = (parts is not None and _valid_host(parts[0]) and bool(_UINT.match(parts[1]))
              and 1 <= int(parts[1]) <= 65535)
    elif kind == "range_list":
        ok = parse_range_list(value) is not None
    elif kind == "int_list":
        ok = all(_UINT.match(item) for item in value.split(","))
    elif kind == "s3uri":
        ok = value.startswith("s3://") and len(value) > 5
    elif kind == "ratio":
        parts = value.split(":")
        ok = len(parts) == 2 and all(_UINT.match(p) and int(p) > 0 for p in parts)
    elif kind == "gpu_archs":
        ok = all(_GFX.match(item) for item in value.split(";"))
    elif kind == "hbm_init":
        ok = value in ("off", "fp32_nan", "bf16_nan") or (
            bool(_UINT.match(value)) and int(value) <= 0xFFFFFFFF)
    if not ok:
        return f"is not {var.accepted()}"
    if number is not None:
        if var.min is not None and number < var.min:
            return f"is below the minimum {var.accepted()}"
        if var.max is not None and number > var.max:
            return f"is above the maximum: accepted is {var.accepted()}"
    return None


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
        self.family_facts: dict | None = facts  # per-family facts of the reference
        if context.neuron_cores_per_device or context.neuron_default_lnc:
            # Detected facts win over the table (and exist even without a family).
            facts = dict(facts or {})
            if context.neuron_cores_per_device:
                facts["cores_per_device"] = context.neuron_cores_per_device
            if context.neuron_default_lnc:
                facts["default_lnc"] = context.neuron_default_lnc
        self.facts: dict | None = facts

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
        per_device = (self.facts or {}).get("cores_per_device")
        lnc, _ = self.lnc()
        if devices is None or not per_device or not lnc or per_device % lnc:
            return None
        return devices * per_device // lnc


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
@rule("type")
def _type(s: _State) -> Iterator[Finding]:
    for name, value in s.env.items():
        if not value:
            continue
        var = s.reg.get(name)
        if var is None:
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
    for name, value in s.env.items():
        if not value or name == "TE_HIPBLASLT_ALGO_SELECTION":
            continue
        var = s.reg.get(name)
        if var is None or var.forwarded or var.host:
            continue
        yield s.found("info", name,
                      "is set on the host but is not on the container allowlist (Primus "
                      "reference section 11), so it does not reach the job in the container",
                      f"pass it explicitly: --env {name}=...")


# --------------------------------------------------------------------------- Primus rules
@rule("master_port_range")
def _master_port(s: _State) -> Iterator[Finding]:
    port = s.uint("MASTER_PORT")
    if port is not None and port < 1024:  # above 65535 the type rule reports it
        yield s.found("error", "MASTER_PORT",
                      "is outside 1024-65535; runner/lib/validation.sh rejects it",
                      "export MASTER_PORT=1234 (or another free port from 1024 to 65535)")


@rule("master_addr_multinode")
def _master_addr(s: _State) -> Iterator[Finding]:
    nnodes = s.uint("NNODES")
    addr = s.get("MASTER_ADDR")
    if nnodes is None or nnodes <= 1 or addr is None:
        return
    if addr.lower() in ("localhost", "localhost.localdomain", "::1") or addr.startswith("127."):
        # A warning, not an error: several "nodes" on one machine (bring-up,
        # tests) rendezvous fine on loopback; across hosts it would hang.
        # The launcher refuses the unexported default (ranks.resolve).
        yield s.found("warning", "MASTER_ADDR",
                      f"is a loopback address with NNODES={nnodes}: that only works when every "
                      "node runs on this one machine; nodes on other hosts would try their own "
                      "loopback and the rendezvous never completes",
                      "export MASTER_ADDR=<host name or IP of node 0 reachable from every node> "
                      "(Slurm launches fill it in)")


@rule("jax_coordinator_single_node")
def _jax_single(s: _State) -> Iterator[Finding]:
    nnodes = s.uint("NNODES")
    if s.get("JAX_COORDINATOR_IP") is not None and nnodes is not None and nnodes <= 1:
        yield s.found("warning", "JAX_COORDINATOR_IP",
                      "is set for a single-node run: Primus leaves it unset there so MaxText takes "
                      "its local single-controller path; set, it starts the distributed one",
                      "unset JAX_COORDINATOR_IP (and JAX_COORDINATOR_PORT) for one node")


@rule("dump_hlo_dir_without_dump")
def _dump_dir(s: _State) -> Iterator[Finding]:
    if s.get("DUMP_HLO_DIR") is not None and s.get("DUMP_HLO") != "1":
        yield s.found("info", "DUMP_HLO_DIR", "has no effect unless DUMP_HLO=1",
                      "export DUMP_HLO=1 to dump HLO there")


@rule("rank_bounds")
def _rank_bounds(s: _State) -> Iterator[Finding]:
    for rank, size in (("NODE_RANK", "NNODES"), ("RANK", "WORLD_SIZE"),
                       ("LOCAL_RANK", "LOCAL_WORLD_SIZE")):
        index, count = s.uint(rank), s.uint(size)
        if index is not None and count is not None and index >= count:
            yield s.found("error", rank,
                          f"must be below {size}={count} (indices start at 0); the rendezvous "
                          f"would wait forever for the missing rank",
                          f"set {rank} to 0..{count - 1} or raise {size}")


@rule("nccl_proto_values")
def _nccl_proto(s: _State) -> Iterator[Finding]:
    value = s.get("NCCL_PROTO")
    if value is None:
        return
    body = value[1:] if value.startswith("^") else value
    known = {"simple", "ll", "ll128"}
    bad = [item for item in body.split(",") if item.strip().lower() not in known]
    if bad:
        yield s.found("error", "NCCL_PROTO",
                      f"names unknown protocol(s) {', '.join(repr(b) for b in bad)}; RCCL knows "
                      f"Simple, LL and LL128 (comma-separated, ^ to exclude)",
                      "set NCCL_PROTO to e.g. Simple,LL128 or ^LL, or unset it to let RCCL choose")


@rule("primus_patches_syntax")
def _patches(s: _State) -> Iterator[Finding]:
    value = s.env.get("PRIMUS_PATCHES")
    if not value or value in ("all", "none"):
        return
    items = value.split(",")
    fix = 'set PRIMUS_PATCHES to "all", "none" or names separated by commas only (a,b)'
    if any(item == "" for item in items):
        yield s.found("warning", "PRIMUS_PATCHES",
                      "has an empty item (doubled, leading or trailing comma)", fix)
        return
    if len(items) > 1 and ({"all", "none"} & set(items)):
        yield s.found("warning", "PRIMUS_PATCHES",
                      '"all" and "none" are whole values, not list items: inside a list they '
                      "are taken as patch names that do not exist", fix)
        return
    bad = [item for item in items if not re.match(r"[A-Za-z0-9_.-]+\Z", item)]
    if bad:
        yield s.found("warning", "PRIMUS_PATCHES",
                      f"item(s) {', '.join(repr(b) for b in bad)} cannot be patch names "
                      "(spaces or symbols); they match no patch, so those patches do not run", fix)


@rule("hipblaslt_stage_needs_switch")
def _stage_switch(s: _State) -> Iterator[Finding]:
    stage = s.get("PRIMUS_HIPBLASLT_TUNING_STAGE")
    if stage in ("1", "2", "3") and s.get("PRIMUS_HIPBLASLT_TUNING") != "1":
        yield s.found("warning", "PRIMUS_HIPBLASLT_TUNING_STAGE",
                      "has no effect: the tuning flow runs only when PRIMUS_HIPBLASLT_TUNING=1 "
                      f"(it is {s.env.get('PRIMUS_HIPBLASLT_TUNING', 'unset')!r})",
                      "export PRIMUS_HIPBLASLT_TUNING=1, or unset PRIMUS_HIPBLASLT_TUNING_STAGE")


@rule("hipblaslt_stage3_override_file")
def _stage3_file(s: _State) -> Iterator[Finding]:
    if s.get("PRIMUS_HIPBLASLT_TUNING") != "1" or s.get("PRIMUS_HIPBLASLT_TUNING_STAGE") != "3":
        return
    path = s.get("HIPBLASLT_TUNING_OVERRIDE_FILE")
    if path is None:
        yield s.found("error", "HIPBLASLT_TUNING_OVERRIDE_FILE",
                      "is unset, but stage 3 (PRIMUS_HIPBLASLT_TUNING_STAGE=3) applies the tuned "
                      "kernels from that file",
                      "export HIPBLASLT_TUNING_OVERRIDE_FILE=<file written by stage 2>", "")
    elif s.ctx.container:
        yield s.found("info", "HIPBLASLT_TUNING_OVERRIDE_FILE",
                      "cannot be checked from the host: it is read inside the container",
                      "make sure the file is mounted into the container at that path")
    elif not os.path.isfile(path):
        yield s.found("error", "HIPBLASLT_TUNING_OVERRIDE_FILE",
                      "does not name an existing file; stage 3 needs the tuned-kernel file",
                      "point it at the file stage 2 wrote (on storage every node sees)")


@rule("hipblaslt_vs_deterministic")
def _tuning_deterministic(s: _State) -> Iterator[Finding]:
    if s.get("PRIMUS_HIPBLASLT_TUNING") == "1" and s.get("PRIMUS_DETERMINISTIC") == "1":
        yield s.found("error", "PRIMUS_HIPBLASLT_TUNING",
                      "hipBLASLt tuning and deterministic mode (PRIMUS_DETERMINISTIC=1) exclude "
                      "each other",
                      "unset one: PRIMUS_HIPBLASLT_TUNING=0 or PRIMUS_DETERMINISTIC=0")


@rule("te_tuning_vs_deterministic")
def _te_tuning_deterministic(s: _State) -> Iterator[Finding]:
    value = s.get("TE_HIPBLASLT_TUNING")
    if value not in (None, "0") and s.get("PRIMUS_DETERMINISTIC") == "1":
        yield s.found("warning", "TE_HIPBLASLT_TUNING",
                      "TE hipBLASLt tuning conflicts with deterministic mode "
                      "(PRIMUS_DETERMINISTIC=1); the tuning hook disables conflicting modes",
                      "unset TE_HIPBLASLT_TUNING for deterministic runs")


@rule("te_algo_selection_container")
def _te_algo_container(s: _State) -> Iterator[Finding]:
    value = s.get("TE_HIPBLASLT_ALGO_SELECTION")
    if value is not None and s.ctx.container:
        yield s.found("warning", "TE_HIPBLASLT_ALGO_SELECTION",
                      "is not forwarded into the container: the allowlist covers HIPBLASLT_* "
                      "names, not TE_*, so the job would silently use the first solution",
                      f"pass it explicitly: --env TE_HIPBLASLT_ALGO_SELECTION={value}")


@rule("hip_visible_devices_vs_gpus")
def _hip_visible(s: _State) -> Iterator[Finding]:
    value = s.get("HIP_VISIBLE_DEVICES")
    if value is None:
        return
    items = value.split(",")
    if any(not item.strip() for item in items):
        yield s.found("error", "HIP_VISIBLE_DEVICES",
                      "has an empty item; ROCm stops parsing the list there",
                      "write the GPU indices separated by single commas, e.g. 0,1,2,3")
        return
    if len(set(items)) != len(items):
        yield s.found("error", "HIP_VISIBLE_DEVICES",
                      "names a GPU twice; two ranks would share one GPU",
                      "list each GPU index once")
        return
    gpus = s.uint("GPUS_PER_NODE") or s.ctx.gpus_per_node
    if gpus is None:
        return
    if len(items) < gpus:
        yield s.found("error", "HIP_VISIBLE_DEVICES",
                      f"exposes {len(items)} GPU(s) but GPUS_PER_NODE={gpus} processes start on "
                      f"this node; local ranks {len(items)}..{gpus - 1} would find no GPU",
                      f"list {gpus} GPUs (e.g. {','.join(str(i) for i in range(gpus))}) or set "
                      f"GPUS_PER_NODE={len(items)}")
    elif len(items) > gpus:
        yield s.found("info", "HIP_VISIBLE_DEVICES",
                      f"exposes {len(items)} GPUs but only GPUS_PER_NODE={gpus} are used",
                      "list only the GPUs the job should use")


@rule("xla_autotune_level_min")
def _autotune(s: _State) -> Iterator[Finding]:
    level = s.uint("XLA_GPU_AUTOTUNE_LEVEL")
    if level == 0:
        yield s.found("error", "XLA_GPU_AUTOTUNE_LEVEL",
                      "must be >= 1: at 0 XLA picks a default fp8 GEMM kernel that overflows on "
                      "fine-grained MoE expert einsums, giving NaN loss on fp8 runs",
                      "unset XLA_GPU_AUTOTUNE_LEVEL (default 4) or set it to 1-4")


def _xla_words(value: str) -> list[str] | None:
    import shlex

    try:
        return shlex.split(value)
    except ValueError:
        return None


@rule("xla_flags_syntax")
def _xla_syntax(s: _State) -> Iterator[Finding]:
    for name in ("XLA_FLAGS", "XLA_FLAGS_APPEND"):
        value = s.get(name)
        if value is None:
            continue
        words = _xla_words(value)
        if words is None:
            yield s.found("error", name, "has an unbalanced quote; XLA cannot split it into flags",
                          "balance the quotes, e.g. --xla_gpu_enable_command_buffer=''")
            continue
        bad = [w for w in words if not w.startswith("--")]
        if bad:
            yield s.found("error", name,
                          f"word(s) {', '.join(repr(b) for b in bad[:3])} are not --flags; XLA "
                          "aborts at start-up on what it cannot parse",
                          "separate flags by spaces and write each as --name=value")


@rule("xla_flags_overridden")
def _xla_overridden(s: _State) -> Iterator[Finding]:
    value = s.get("XLA_FLAGS")
    words = _xla_words(value) if value is not None else None
    if not words:
        return
    managed = {}
    for item in s.reg.managed_xla_flags:
        flag_value = item["value"]
        if item.get("parameter") and s.get(item["parameter"]):
            flag_value = s.env[item["parameter"]]
        managed[item["flag"]] = flag_value.strip("'")
    for word in words:
        flag, _, user = word.partition("=")
        if flag in managed and user != managed[flag]:
            yield s.found("warning", "XLA_FLAGS",
                          f"sets {flag}={user}, but Primus appends its managed {flag}="
                          f"{managed[flag] or repr('')} after the inherited XLA_FLAGS and XLA "
                          "keeps the last occurrence, so your value is overridden",
                          f"move it to XLA_FLAGS_APPEND='{flag}={user}' (applied last)")


@rule("xla_dump_by_hand")
def _xla_dump(s: _State) -> Iterator[Finding]:
    for name in ("XLA_FLAGS", "XLA_FLAGS_APPEND"):
        value = s.get(name)
        if value is not None and "--xla_dump_to" in value:
            yield s.found("info", name, "adds --xla_dump_to by hand",
                          "prefer DUMP_HLO=1 (and DUMP_HLO_DIR) which manage --xla_dump_to")


@rule("skip_validation")
def _skip_validation(s: _State) -> Iterator[Finding]:
    if s.get("PRIMUS_SKIP_VALIDATION") == "1":
        yield s.found("warning", "PRIMUS_SKIP_VALIDATION",
                      "validation is switched off: the launcher starts even when this check "
                      "finds errors, which then surface late on the cluster",
                      "unset PRIMUS_SKIP_VALIDATION (or set 0) and fix the findings instead")


@rule("neuron_root_comm_multinode")
def _root_comm(s: _State) -> Iterator[Finding]:
    nnodes = s.uint("NNODES")
    if s.accel == "neuron" and nnodes is not None and nnodes > 1 \
            and s.get("NEURON_RT_ROOT_COMM_ID") is None:
        yield s.found("error", "NEURON_RT_ROOT_COMM_ID",
                      f"is unset with NNODES={nnodes}: the Neuron runtime needs rank 0's "
                      "host:port to bootstrap multi-node collectives",
                      "export NEURON_RT_ROOT_COMM_ID=$MASTER_ADDR:<free port>", "")


# --------------------------------------------------------------------------- Neuron rules
@rule("lnc_size")
def _lnc(s: _State) -> Iterator[Finding]:
    names = ["NEURON_LOGICAL_NC_CONFIG"]
    if s.get("NEURON_LOGICAL_NC_CONFIG") is None:
        names.append("NEURON_RT_VIRTUAL_CORE_SIZE")
    facts = s.facts or {}
    for name in names:
        size = s.uint(name)
        if size is None:
            continue
        if size == 0 or size & (size - 1):
            yield s.found("error", name,
                          "must be a power of two (1, 2, 4, 8): it says how many physical "
                          "NeuronCores fuse into one logical core",
                          f"set {name}=2 (the only size publicly supported on Trn2+)")
            continue
        per_device = facts.get("cores_per_device")
        if per_device and per_device % size:
            yield s.found("error", name,
                          f"must divide the {per_device} physical NeuronCores of one "
                          f"{s.family} device",
                          f"set {name} to a power of two up to {per_device}")
        elif facts.get("trn2_plus") and size != 2:
            yield s.found("warning", name,
                          f"only 2 is publicly supported on Trn2 and later ({s.family})",
                          f"set {name}=2")


@rule("visible_cores_exist")
def _visible_exist(s: _State) -> Iterator[Finding]:
    ranges = parse_range_list(s.get("NEURON_RT_VISIBLE_CORES") or "x")
    total = s.instance_cores()
    if ranges is None or total is None:
        return
    highest = max(high for _, high in ranges)
    if highest >= total:
        yield s.found("error", "NEURON_RT_VISIBLE_CORES",
                      f"names core {highest} but this instance has {total} logical NeuronCores "
                      f"(0-{total - 1}); the runtime fails at init",
                      f"use cores within 0-{total - 1}")


@rule("dma_packetization_cap")
def _dma_cap(s: _State) -> Iterator[Finding]:
    size = s.uint("NEURON_RT_DBG_DMA_PACKETIZATION_SIZE")
    if size is not None and size > 1048575:
        yield s.found("error", "NEURON_RT_DBG_DMA_PACKETIZATION_SIZE",
                      "exceeds the hardware cap of 1 MiB - 1 (1048575 bytes); runtime init fails",
                      "use at most 1048575, or unset it (default 4096)")


@rule("xu_queue_clamp")
def _xu_clamp(s: _State) -> Iterator[Finding]:
    depth = s.uint("NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS")
    if depth is not None and depth > 63:
        yield s.found("warning", "NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS",
                      "is above 63: the runtime warns and clamps it to 63 (4 MB host DMA "
                      "allocation limit)",
                      "set it to 63 or less")


@rule("cc_dma_packet_size_ignored")
def _cc_packet(s: _State) -> Iterator[Finding]:
    if s.get("NEURON_RT_DBG_CC_DMA_PACKET_SIZE") is not None:
        yield s.found("warning", "NEURON_RT_DBG_CC_DMA_PACKET_SIZE",
                      "is kept for backward compatibility only: the runtime's per-priority packet "
                      "sizing takes precedence and then ignores it with a warning",
                      "unset NEURON_RT_DBG_CC_DMA_PACKET_SIZE")


@rule("ranks_per_proxy_hw_barrier")
def _ranks_per_proxy(s: _State) -> Iterator[Finding]:
    ranks = s.uint("NEURON_RT_RANKS_PER_NETWORK_PROXY")
    if ranks is None or ranks <= 1:
        return
    barrier = s.flag("NEURON_RT_ENABLE_HW_EXECUTION_BARRIER")
    fix = "export NEURON_RT_ENABLE_HW_EXECUTION_BARRIER=1, or NEURON_RT_RANKS_PER_NETWORK_PROXY=1"
    if barrier is False:
        yield s.found("error", "NEURON_RT_RANKS_PER_NETWORK_PROXY",
                      "is above 1 with NEURON_RT_ENABLE_HW_EXECUTION_BARRIER=0: sharing a proxy "
                      "needs the hardware barrier, so runtime init fails", fix)
    elif barrier is None and s.family_facts is not None and not s.family_facts.get("hw_barrier_default"):
        yield s.found("error", "NEURON_RT_RANKS_PER_NETWORK_PROXY",
                      f"is above 1 but the hardware barrier is off by default on {s.family}; "
                      "runtime init fails", fix)
    elif barrier is None and s.family_facts is None:
        yield s.found("warning", "NEURON_RT_RANKS_PER_NETWORK_PROXY",
                      "is above 1 and needs the hardware barrier, whose default depends on the "
                      "instance (off on Trn1); init fails where it is off", fix)


@rule("register_hbm_mr_needs_map_hbm")
def _register_hbm(s: _State) -> Iterator[Finding]:
    register = s.flag("NEURON_RT_REGISTER_HBM_MR")
    if register is False:
        return
    explicit = register is True
    map_hbm = s.flag("NEURON_RT_MAP_HBM")
    reason = None
    if map_hbm is False:
        reason = "NEURON_RT_MAP_HBM=0"
    elif map_hbm is None and s.family_facts is not None and not s.family_facts.get("map_hbm") and explicit:
        reason = f"HBM mapping only exists on Trn2 and later, not {s.family}"
    if reason is None:
        return
    yield s.found("warning" if explicit else "info", "NEURON_RT_REGISTER_HBM_MR",
                  f"is forced off because {reason}: one HBM memory region needs HBM mapped",
                  "unset NEURON_RT_MAP_HBM (default true on Trn2+) or NEURON_RT_REGISTER_HBM_MR",
                  s.env.get("NEURON_RT_REGISTER_HBM_MR", ""))


@rule("contiguous_scratchpad_lnc1")
def _contiguous_lnc1(s: _State) -> Iterator[Finding]:
    if s.flag("NEURON_RT_CONTIGUOUS_SCRATCHPAD") is not True:
        return
    lnc, explicit = s.lnc()
    if lnc != 1:
        return
    fix = "unset NEURON_RT_CONTIGUOUS_SCRATCHPAD (it defaults to 0 there) or use LNC 2"
    if s.family_facts is not None and s.family_facts.get("trn2_plus"):
        yield s.found("error", "NEURON_RT_CONTIGUOUS_SCRATCHPAD",
                      f"=1 is unsupported on {s.family} with LNC 1: the explicit value is honoured "
                      "and then rejected, so nrt_init() fails with NRT_INVALID", fix)
    elif s.family_facts is None and explicit:
        yield s.found("warning", "NEURON_RT_CONTIGUOUS_SCRATCHPAD",
                      "=1 with LNC 1 makes nrt_init() fail with NRT_INVALID on Trn2 and later "
                      "(instance unknown here)", fix)


@rule("scratchpad_page_size_ignored")
def _page_size(s: _State) -> Iterator[Finding]:
    if s.get("NEURON_SCRATCHPAD_PAGE_SIZE") is None:
        return
    contiguous = s.flag("NEURON_RT_CONTIGUOUS_SCRATCHPAD")
    if contiguous is True:
        yield s.found("warning", "NEURON_SCRATCHPAD_PAGE_SIZE",
                      "is ignored: NEURON_RT_CONTIGUOUS_SCRATCHPAD=1 forces 64 MiB pages",
                      "unset NEURON_SCRATCHPAD_PAGE_SIZE, or set NEURON_RT_CONTIGUOUS_SCRATCHPAD=0")
    elif contiguous is None:
        yield s.found("info", "NEURON_SCRATCHPAD_PAGE_SIZE",
                      "is ignored wherever contiguous scratchpad is on, which is the driver "
                      "default where supported",
                      "set NEURON_RT_CONTIGUOUS_SCRATCHPAD=0 to make the page size apply")


@rule("low_latency_affinity_cpus")
def _affinity(s: _State) -> Iterator[Finding]:
    ranges = parse_range_list(s.get("NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY") or "x")
    cpus = s.ctx.cpu_count or os.cpu_count()
    if ranges is None or not cpus:
        return
    highest = max(high for _, high in ranges)
    if highest >= cpus:
        yield s.found("error", "NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY",
                      f"names CPU {highest} but this host has {cpus} CPUs (0-{cpus - 1}); the "
                      "runtime validates it against the real CPU count",
                      f"use CPUs within 0-{cpus - 1}")


@rule("neuron_log_pairing")
def _log_pairing(s: _State) -> Iterator[Finding]:
    level, location = s.get("NEURON_RT_LOG_LEVEL"), s.get("NEURON_RT_LOG_LOCATION")
    if level is not None and location is None:
        yield s.found("warning", "NEURON_RT_LOG_LEVEL",
                      "set without NEURON_RT_LOG_LOCATION sends runtime logs to the console only "
                      "and stops syslog output",
                      "also set NEURON_RT_LOG_LOCATION=console (or syslog) to choose the sink")
    elif location is not None and level is None:
        yield s.found("warning", "NEURON_RT_LOG_LOCATION",
                      "set without NEURON_RT_LOG_LEVEL lowers the level to ERROR, so warnings are "
                      "no longer logged",
                      "also set NEURON_RT_LOG_LEVEL=WARN (or the level you want)")


@rule("log_submodule_names")
def _submodules(s: _State) -> Iterator[Finding]:
    valid = s.reg.log_submodules
    for name, value in s.env.items():
        prefix, submodule = s.reg.split_family(name)
        if prefix is None or submodule in valid:
            continue
        upper = submodule.upper()
        hint = upper if upper in valid else None
        fix = (f"rename it to {prefix}{hint}" if hint else
               f"use one of the submodules {', '.join(valid)}")
        yield s.found("warning", name,
                      f"{submodule!r} is not a runtime submodule, so the setting is ignored "
                      f"(valid: {', '.join(valid)})", fix, value)


@rule("oom_dump_dir_length")
def _oom_dir(s: _State) -> Iterator[Finding]:
    path = s.get("NEURON_RT_OOM_DUMP_DIRECTORY")
    if path is not None and len(path) > 200:
        yield s.found("warning", "NEURON_RT_OOM_DUMP_DIRECTORY",
                      f"is {len(path)} characters; paths over 200 log an error and the dumps go "
                      "to the default /tmp instead",
                      "use a path of at most 200 characters")


@rule("debug_stream_buffer_pow2")
def _stream_pow2(s: _State) -> Iterator[Finding]:
    size = s.uint("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE")
    if size is not None and (size == 0 or size & (size - 1)):
        lower = 1 << (size.bit_length() - 1) if size else 262144
        yield s.found("error", "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE",
                      "must be a power of two; runtime init fails otherwise",
                      f"use a power of two such as {lower} or {lower * 2 if size else 262144}")


@rule("inspect_on_fail_implies")
def _on_fail(s: _State) -> Iterator[Finding]:
    if s.flag("NEURON_RT_INSPECT_ON_FAIL") is not True:
        return
    if s.flag("NEURON_RT_INSPECT_ENABLE") is False:
        yield s.found("warning", "NEURON_RT_INSPECT_ENABLE",
                      "=0 is overridden: NEURON_RT_INSPECT_ON_FAIL=1 implies profile capture",
                      "unset NEURON_RT_INSPECT_ENABLE, or unset NEURON_RT_INSPECT_ON_FAIL")
    mode = s.get("NEURON_RT_INSPECT_DEVICE_PROFILE")
    if mode is not None and mode not in ("model", "1"):
        yield s.found("warning", "NEURON_RT_INSPECT_DEVICE_PROFILE",
                      f"={mode} is overridden: NEURON_RT_INSPECT_ON_FAIL=1 forces model mode",
                      "unset NEURON_RT_INSPECT_DEVICE_PROFILE (or set model)")
    if s.flag("NEURON_RT_INSPECT_SYSTEM_PROFILE") is True:
        yield s.found("warning", "NEURON_RT_INSPECT_SYSTEM_PROFILE",
                      "=1 is overridden: NEURON_RT_INSPECT_ON_FAIL=1 captures the device profile "
                      "only",
                      "unset NEURON_RT_INSPECT_SYSTEM_PROFILE, or unset NEURON_RT_INSPECT_ON_FAIL")


@rule("inspect_warmup_model_mode")
def _warmup(s: _State) -> Iterator[Finding]:
    warmup = s.uint("NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP")
    if not warmup or s.flag("NEURON_RT_INSPECT_ON_FAIL") is True:
        return
    mode = s.get("NEURON_RT_INSPECT_DEVICE_PROFILE")
    if mode not in ("model", "1"):
        yield s.found("warning", "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP",
                      f"is only valid in model mode but NEURON_RT_INSPECT_DEVICE_PROFILE is "
                      f"{mode or 'unset'!r}; the runtime warns and ignores it",
                      "export NEURON_RT_INSPECT_DEVICE_PROFILE=model, or unset the warm-up count")


@rule("inspect_filter_nc_visible")
def _filter_nc(s: _State) -> Iterator[Finding]:
    ranges = parse_range_list(s.get("NEURON_RT_INSPECT_EVENT_FILTER_NC") or "x")
    if ranges is None:
        return
    visible_spec = s.get("NEURON_RT_VISIBLE_CORES")
    visible: set[int] | None = None
    source = ""
    if visible_spec is not None:
        parsed = parse_range_list(visible_spec)
        if parsed is None:
            return  # the type rule reports NEURON_RT_VISIBLE_CORES
        if sum(high - low + 1 for low, high in parsed) <= 65536:
            visible = {c for low, high in parsed for c in range(low, high + 1)}
        source = f"NEURON_RT_VISIBLE_CORES={visible_spec}"
    else:
        total = s.instance_cores()
        if total is not None:
            visible = set(range(total))
            source = f"the {total} logical cores of this instance"
    if visible is None:
        yield s.found("info", "NEURON_RT_INSPECT_EVENT_FILTER_NC",
                      "cannot be checked against the visible cores: neither "
                      "NEURON_RT_VISIBLE_CORES nor the instance type (PRIMUS_NEURON_INSTANCE) "
                      "is known",
                      "set PRIMUS_NEURON_INSTANCE (e.g. trn1.32xlarge) to check it before launch")
        return
    missing = []
    for low, high in ranges:
        if high - low + 1 > len(visible):
            missing.append(high)
            break
        missing.extend(c for c in range(low, high + 1) if c not in visible)
    if missing:
        yield s.found("error", "NEURON_RT_INSPECT_EVENT_FILTER_NC",
                      f"names core(s) {', '.join(map(str, missing[:8]))} that are not visible "
                      f"({source}); the runtime errors on a core that is not visible",
                      "list only visible logical cores")


@rule("inspect_filter_type_names")
def _filter_type(s: _State) -> Iterator[Finding]:
    value = s.get("NEURON_RT_INSPECT_EVENT_FILTER_TYPE")
    if value is None:
        return
    items = value.split(",")
    bad = [item for item in items if not _EVENT_WORD.match(item)]
    if bad:
        yield s.found("error", "NEURON_RT_INSPECT_EVENT_FILTER_TYPE",
                      f"item(s) {', '.join(repr(b) for b in bad)} are not event names; use "
                      "comma-separated categories (hardware, software) or event names, ^name to "
                      "subtract; invalid names make the runtime fail",
                      "e.g. NEURON_RT_INSPECT_EVENT_FILTER_TYPE=hardware,^cc_running")
        return
    known = set(s.reg.neuron.get("event_filter_categories", ())) | set(
        s.reg.neuron.get("event_filter_known_events", ()))
    unknown = [item for item in items if item.lstrip("^") not in known]
    if unknown:
        yield s.found("info", "NEURON_RT_INSPECT_EVENT_FILTER_TYPE",
                      f"event name(s) {', '.join(unknown)} cannot be verified before launch (the "
                      "runtime rejects unknown names with its full list)",
                      "check the names against the runtime's list if init fails")


@rule("inspect_without_enable")
def _inspect_enable(s: _State) -> Iterator[Finding]:
    if s.flag("NEURON_RT_INSPECT_ENABLE") is True or s.flag("NEURON_RT_INSPECT_ON_FAIL") is True:
        return
    for name in ("NEURON_RT_INSPECT_OUTPUT_DIR", "NEURON_RT_INSPECT_CPU_UTIL",
                 "NEURON_RT_INSPECT_HOST_MEMORY", "NEURON_RT_INSPECT_EVENT_FILTER_NC",
                 "NEURON_RT_INSPECT_EVENT_FILTER_TYPE", "NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC"):
        if s.get(name) is not None:
            yield s.found("info", name,
                          "selects what profiling captures, but profiling is off: "
                          "NEURON_RT_INSPECT_ENABLE is the master switch",
                          "export NEURON_RT_INSPECT_ENABLE=1 to capture profiles")


@rule("profile_buf_instruction_zero")
def _instruction_zero(s: _State) -> Iterator[Finding]:
    if s.uint("NEURON_RT_PROFILE_BUF_INSTRUCTION_MB") == 0:
        yield s.found("warning", "NEURON_RT_PROFILE_BUF_INSTRUCTION_MB",
                      "=0 creates a zero-sized buffer, so no instruction trace is captured",
                      "unset it (default 128) or give a size in MiB")


@rule("fail_on_nan_verbosity")
def _fail_on_nan(s: _State) -> Iterator[Finding]:
    verbosity = s.get("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY")
    if s.flag("NEURON_FAIL_ON_NAN") is True and verbosity == "none":
        yield s.found("warning", "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY",
                      "=none is overridden: NEURON_FAIL_ON_NAN=1 raises the verbosity to critical",
                      "set NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=critical (or unset it)")


@rule("allow_legacy_neff")
def _legacy_neff(s: _State) -> Iterator[Finding]:
    value = s.uint("NEURON_RT_ALLOW_LEGACY_NEFF")
    if value:
        yield s.found("warning", "NEURON_RT_ALLOW_LEGACY_NEFF",
                      "is for testing only: a NEFF compiled for another target can silently "
                      "corrupt outputs or hang",
                      "recompile the model for this target and unset NEURON_RT_ALLOW_LEGACY_NEFF")


@rule("disable_execution_barrier")
def _disable_barrier(s: _State) -> Iterator[Finding]:
    if s.flag("NEURON_RT_DISABLE_EXECUTION_BARRIER") is True:
        yield s.found("warning", "NEURON_RT_DISABLE_EXECUTION_BARRIER",
                      "is only safe when the workload is truly SPMD and the caller runs its own "
                      "barrier; otherwise executions hang",
                      "unset it unless both preconditions hold (typical for distributed inference)")


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
    return ctx.replace(cpu_count=os.cpu_count())  # type: ignore[return-value]


def _finish(finding: Finding, rule_id: str, reg: Registry, accel: str) -> Finding:
    if finding.severity != "info" and _irrelevant(reg.get(finding.variable), accel):
        return finding.replace(  # type: ignore[return-value]
            severity="info", rule=rule_id,
            message=f"{finding.message} (no effect: accelerator is {accel})")
    return finding.replace(rule=rule_id)  # type: ignore[return-value]


def exit_code(findings: list[Finding], strict: bool = False) -> int:
    """2 when an error (or, with strict, a warning) was found, else 0."""
    blocking = {"error", "warning"} if strict else {"error"}
    return 2 if any(f.severity in blocking for f in findings) else 0


__all__ = ["ACCELERATORS", "CheckContext", "Finding", "RULES", "check", "exit_code",
           "neuron_family", "parse_bool", "parse_range_list", "type_problem"]
