"""The variable registry: every variable of both references, from data/variables.yaml.

``load()`` returns the process-wide :class:`Registry` (parsed once). The YAML is the
source of truth; ``data/variables.json`` is a pre-built copy that carries the
CRC-32 of the YAML it was built from. ``load()`` uses the JSON only when that
hash matches the YAML on disk (so a stale copy is never used, just slower) because
importing PyYAML and parsing costs ~70 ms against ~1 ms for JSON, and
``env check`` has a 0.15 s budget for the whole process (docs/run-on-one-node.md "Launch overhead").

Rebuild the JSON after editing the YAML (a test fails while it is stale)::

    python3 -m primus_runner.env.registry --write-json
"""
from __future__ import annotations

import os
import sys

from primus_runner.masking import is_secret
from primus_runner.registry_data import (  # noqa: F401 - re-exported for callers
    JSON_PATH,
    YAML_PATH,
    cached_data,
    json_text,
    read_data,
    read_yaml,
    yaml_digest,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~6 ms to import; annotations are strings anyway
    from typing import Any

FAMILY_MARK = "<submodule>"
SEVERITIES = ("error", "warning", "info")


def record(name: str, fields: str, defaults: dict[str, object] | None = None) -> type:
    """An immutable record type: a namedtuple (built in ~0.5 us; dataclasses would cost
    ~20 ms of imports and a Python-level __init__) with ``replace`` and ``as_dict``."""
    from collections import namedtuple

    names = fields.split()
    defaults = defaults or {}
    first = next((i for i, n in enumerate(names) if n in defaults), len(names))
    base = namedtuple(name, names, defaults=[defaults.get(n) for n in names[first:]])  # type: ignore[misc]

    def replace(self: Any, **changes: Any) -> Any:
        return self._replace(**changes)

    def as_dict(self: Any) -> dict[str, object]:
        return dict(self._asdict())

    base.replace = replace  # type: ignore[attr-defined]
    base.as_dict = as_dict  # type: ignore[attr-defined]
    return base


class Deprecation(record("Deprecation", "status replacement effect")):  # type: ignore[misc]
    __slots__ = ()
    status: str
    replacement: tuple[str, ...]
    effect: str


class Rule(record("Rule", "id severity variables text")):  # type: ignore[misc]
    __slots__ = ()
    id: str
    severity: str
    variables: tuple[str, ...]
    text: str


_VARIABLE_FIELDS = ("name type description section section_title reference subsystem default "
                    "default_note values ci min max launcher_default launcher_derived set_by "
                    "used_by deprecated invalid_severity invalid_effect host forwarded rules source "
                    "scope")
_VARIABLE_DEFAULTS: dict[str, object] = {
    "subsystem": "", "default": None, "default_note": None, "values": None, "ci": False,
    "min": None, "max": None, "launcher_default": None, "launcher_derived": None, "set_by": "",
    "used_by": "", "deprecated": None, "invalid_severity": "error", "invalid_effect": None,
    "host": False, "forwarded": False, "rules": (), "source": None, "scope": "local"}
# What the cluster check (python/primus_runner/cluster/clustercheck.py) does with a variable:
# cluster-uniform: identical on every node; per-node: may differ, compared by meaning
# (interface subnet, link layer, GID type/family); per-process: set per rank, never
# compared; local: this host's business (logging, paths, caches, secrets), never sent.
SCOPES = ("cluster-uniform", "per-node", "per-process", "local")
# Unregistered names with these prefixes are library knobs: cluster-uniform.
UNIFORM_PREFIXES = ("NCCL_", "RCCL_", "HSA_", "NEURON_RT_", "TORCH_NCCL_", "XLA_")


class Variable(record("Variable", _VARIABLE_FIELDS, _VARIABLE_DEFAULTS)):  # type: ignore[misc]
    """One registered variable (see the field list at the top of variables.yaml)."""

    __slots__ = ()
    name: str
    type: str
    description: str
    section: str
    section_title: str
    reference: str
    subsystem: str
    default: str | None
    default_note: str | None
    values: tuple[str, ...] | None
    ci: bool
    min: float | None
    max: float | None
    launcher_default: str | None
    launcher_derived: str | None
    set_by: str
    used_by: str
    deprecated: Deprecation | None
    invalid_severity: str
    invalid_effect: str | None
    host: bool
    forwarded: bool
    rules: tuple[str, ...]
    source: str | None
    scope: str

    @property
    def secret(self) -> bool:
        return is_secret(self.name)

    @property
    def family(self) -> bool:
        """True for the NEURON_RT_LOG_*_<submodule> pattern entries."""
        return FAMILY_MARK in self.name

    def default_text(self) -> str:
        """The default as a person reads it: value, note, or 'unset'."""
        parts = []
        if self.default is not None:
            parts.append(f"`{self.default}`" if self.default != "" else '"" (empty)')
        if self.default_note:
            parts.append(self.default_note if not parts else f"({self.default_note})")
        return " ".join(parts) if parts else "unset"

    def accepted(self) -> str:
        """What values the type accepts, in words."""
        return describe_type(self)


def describe_type(var: Variable) -> str:
    bounds = ""
    if var.min is not None and var.max is not None:
        bounds = f" from {_num(var.min)} to {_num(var.max)}"
    elif var.min is not None:
        bounds = f" >= {_num(var.min)}"
    elif var.max is not None:
        bounds = f" <= {_num(var.max)}"
    words = {
        "bool": "0, 1, true or false (any case)",
        "switch": "0 or 1",
        "int": "an integer",
        "uint": "a non-negative integer",
        "bytes": "a byte count (non-negative integer, no unit)",
        "mib": "a size in MiB (non-negative integer)",
        "seconds": "a number of seconds (non-negative integer)",
        "float": "a decimal number",
        "port": "a TCP port number",
        "host": "a host name or IP address (IPv6 also in brackets)",
        "hostport": "host:port (port 1-65535; an IPv6 host in brackets: [fd00::10]:1235)",
        "range_list": "a range list of non-negative integers, each named once, such as 0-3 or 0,2,4 or 40-47,88-95",
        "int_list": "comma-separated non-negative integers (e.g. 0,1,2,3)",
        "path": "a filesystem path",
        "string": "free text",
        "flags": "space-separated --flag[=value] words",
        "uri": "a URI",
        "s3uri": "an s3://bucket/prefix URI",
        "ratio": "W0:W1, two positive integers",
        "gpu_archs": "semicolon-separated GPU targets such as gfx942;gfx950",
        "hbm_init": "off, fp32_nan, bf16_nan or a 32-bit unsigned integer (0-4294967295)",
        "patches": 'empty or "all" (all patches), "none", or a comma-separated list of patch names',
        "device_list": "comma-separated GPU indices such as 0,1,2,3 (or GPU UUIDs)",
    }
    if var.type == "enum":
        text = "one of " + ", ".join(var.values or ())
        return text + (" (any case)" if var.ci else "")
    return words.get(var.type, var.type) + bounds


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class Registry:
    """Queries over the loaded registry data."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self._forwarded: list[str] = list(data["container_forwarded"])
        self._forward_set = frozenset(self._forwarded)
        self.forward_prefixes: tuple[str, ...] = tuple(data.get("container_forwarded_prefixes", ()))
        self.forward_families: tuple[str, ...] = tuple(data.get("container_forwarded_families", ()))
        self.container_own: frozenset[str] = frozenset(data.get("container_own", ()))
        forwarded = set(self._forwarded)
        self.rules: dict[str, Rule] = {}
        rules_of: dict[str, list[str]] = {}
        for rule_id, spec in data.get("rules", {}).items():
            rule = Rule(rule_id, spec["severity"], tuple(spec["variables"]), spec["text"])
            self.rules[rule_id] = rule
            for name in rule.variables:
                rules_of.setdefault(name, []).append(rule_id)
        self.sections: list[dict[str, str]] = []
        variables: list[Variable] = []
        # The launcher's distributed fallbacks live once, in shared_facts.
        fallbacks = data.get("shared_facts", {}).get("distributed_defaults", {})
        for section in data["sections"]:
            self.sections.append({k: section[k] for k in ("id", "title", "reference", "subsystem")})
            for name, spec in section["variables"].items():
                if name in fallbacks and "launcher_default" not in spec:
                    spec = {**spec, "launcher_default": str(fallbacks[name])}
                variables.append(_variable(name, spec, section, name in forwarded,
                                           tuple(rules_of.get(name, ()))))
        self.variables: tuple[Variable, ...] = tuple(variables)
        self._by_name = {var.name: var for var in variables}
        neuron = data.get("neuron", {})
        self.log_submodules: tuple[str, ...] = tuple(neuron.get("log_submodules", ()))
        self.neuron: dict[str, Any] = neuron
        self._families = {var.name.split(FAMILY_MARK)[0]: var for var in variables if var.family}
        self.managed_xla_flags: list[dict[str, str]] = list(data.get("managed_xla_flags", ()))

    # -- lookups -------------------------------------------------------------
    def get(self, name: str) -> Variable | None:
        """The variable called ``name``; NEURON_RT_LOG_LEVEL_HAL and the like map to
        their ``<submodule>`` family when the submodule is one the runtime knows."""
        var = self._by_name.get(name)
        if var is not None:
            return var
        prefix, submodule = self.split_family(name)
        if prefix is not None and submodule in self.log_submodules:
            return self._families[prefix]
        return None

    def split_family(self, name: str) -> tuple[str | None, str]:
        """(family prefix, submodule) when ``name`` has a family's prefix, else (None, "")."""
        for prefix in self._families:
            if name.startswith(prefix) and len(name) > len(prefix):
                return prefix, name[len(prefix):]
        return None, ""

    def names(self) -> list[str]:
        return [var.name for var in self.variables]

    def scope_of(self, name: str) -> str:
        """The variable's scope; unregistered library knobs (NCCL_*, RCCL_*, ...) are
        cluster-uniform, any other unregistered name is local."""
        var = self.get(name)
        if var is not None:
            return var.scope
        return "cluster-uniform" if name.startswith(UNIFORM_PREFIXES) else "local"

    def suggest(self, name: str) -> str | None:
        """The registered name closest to ``name`` (for 'did you mean')."""
        from primus_runner.errors import closest

        return closest(name.upper(), self.names())

    # -- views used by the launcher and its tests ------------------------------
    def container_forwarded(self) -> list[str]:
        """The container allowlist, in Primus docs, environment variables, section 11 order."""
        return list(self._forwarded)

    def container_forwards(self, name: str) -> bool:
        """True when a host variable ``name`` that is set reaches a container by
        itself: on the allowlist, under the reference launcher's prefixes or in a
        family the references use, and not one the container launcher sets itself."""
        if name in self.container_own:
            return False
        return (name in self._forward_set or name.startswith(self.forward_prefixes)
                or name.startswith(self.forward_families))

    def launcher_defaults(self) -> dict[str, str]:
        """Variables base_env.sh / the direct launcher export with a literal default."""
        return {v.name: v.launcher_default for v in self.variables if v.launcher_default is not None}

    def launcher_derived(self) -> dict[str, str]:
        """Variables base_env.sh derives (detected NICs, device list...), with how."""
        return {v.name: v.launcher_derived for v in self.variables if v.launcher_derived is not None}

    def subsystems(self) -> list[str]:
        """Subsystem names in registry order, without repeats."""
        seen: dict[str, None] = {}
        for var in self.variables:
            seen.setdefault(var.subsystem, None)
        return list(seen)

    def in_subsystem(self, subsystem: str) -> list[Variable]:
        """Variables of ``subsystem``; a group prefix such as ``neuron`` selects every
        ``neuron-*`` subsystem."""
        wanted = subsystem.lower()
        return [v for v in self.variables
                if v.subsystem == wanted or v.subsystem.startswith(wanted + "-")]


def _variable(name: str, spec: dict[str, Any], section: dict[str, Any], forwarded: bool,
              rules: tuple[str, ...]) -> Variable:
    deprecated = None
    if spec.get("deprecated"):
        dep = spec["deprecated"]
        deprecated = Deprecation(dep["status"], tuple(dep.get("replacement") or ()), dep["effect"])
    invalid = spec.get("invalid") or {}
    values = spec.get("values")
    get = spec.get
    # Positional, in field order.
    return Variable(
        name, spec["type"], spec["description"], section["id"], section["title"],
        section["reference"], get("subsystem", section["subsystem"]), get("default"),
        get("default_note"), tuple(str(v) for v in values) if values is not None else None,
        bool(get("ci", False)), get("min"), get("max"), get("launcher_default"),
        get("launcher_derived"), str(get("set_by", "")), str(get("used_by", "")), deprecated,
        invalid.get("severity", "error"), invalid.get("effect"),
        bool(get("host", section.get("host", False))), forwarded, rules, get("source"),
        _scope(name, get("scope", section.get("scope"))))


def _scope(name: str, value: object) -> str:
    if value not in SCOPES:
        raise ValueError(f"registry: variable {name} has scope {value!r} (from the variable or "
                         f"its section); accepted: {', '.join(SCOPES)}")
    return str(value)


# -- loading -----------------------------------------------------------------
_CACHE: Registry | None = None


def load() -> Registry:
    """The registry of this process (parsed once)."""
    global _CACHE
    if _CACHE is None:
        _CACHE = Registry(cached_data())
    return _CACHE


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m primus_runner.env.registry",
                                     description="Maintain the pre-built JSON copy of the registry.")
    parser.add_argument("--write-json", action="store_true",
                        help="rebuild variables.json from variables.yaml")
    parser.add_argument("--check-json", action="store_true",
                        help="exit 1 when the JSON copy does not match the YAML")
    args = parser.parse_args(argv)
    from primus_runner.env import shared_facts

    if args.write_json:
        with open(JSON_PATH, "w", encoding="utf-8") as handle:
            handle.write(json_text())
        print(f"wrote {JSON_PATH}")
        for path in shared_facts.write(read_data()):
            print(f"wrote {path}")
        return 0
    if args.check_json:
        current = ""
        if os.path.exists(JSON_PATH):
            with open(JSON_PATH, encoding="utf-8") as handle:
                current = handle.read()
        if current != json_text():
            print(f"{JSON_PATH} is stale; run python3 -m primus_runner.env.registry --write-json",
                  file=sys.stderr)
            return 1
        for path in shared_facts.stale(read_data()):
            print(f"{path} is stale; run python3 -m primus_runner.env.registry --write-json", file=sys.stderr)
            return 1
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
