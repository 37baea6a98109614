"""The config schema: every key the config files may hold, with its type.

One table (``SCHEMA``) declares every key; ``check`` walks one parsed file
against it. A key of the wrong type is an error (exit 2) naming the key, the
file, the type seen and the type wanted; an unknown key is a warning whose
suggestion comes only from keys of the same section with the same type.

To add a key: add one row to ``SCHEMA`` (keep the rows grouped by section) and,
when it has a system default, the same key in runner/.primus.yaml (a test keeps
the two in agreement). A row ``section.*`` accepts any sub-key of that section
with the row's type (``container.options.*``: every key maps to a
``docker run`` / ``podman run`` option).

Types:
  bool    true or false (YAML's yes/no/on/off also parse as booleans); a quoted
          "true"/"false"/"yes"/"no"/"on"/"off"/"1"/"0" (any case) is read as
          that boolean, as upstream Primus's runner/.primus.yaml writes them
  bool_auto  a bool, or "auto" (direct.numa: upstream's default, decided later)
  int     a whole number (a quoted string of digits is accepted too)
  str     text; a number is accepted and read as its text
  list    a list of scalars (strings, numbers, booleans)
  option  a scalar or a list of scalars (a container runtime option)
  map     a mapping of any sub-keys (free-form)
A key left empty in YAML (``key:``, null) means "not set" for every type.
"""
from __future__ import annotations

from primus_runner.errors import closest

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any

# key -> type (see the module docstring). Sections are the key prefixes.
SCHEMA: dict[str, str] = {
    # main: global options (primus-cli --debug / --dry-run)
    "main.debug": "bool",
    "main.dry_run": "bool",
    # direct: primus-cli direct
    "direct.nnodes": "int",
    "direct.node_rank": "int",
    "direct.master_addr": "str",
    "direct.master_port": "int",
    "direct.gpus_per_node": "int",
    "direct.accelerator": "str",
    "direct.script": "str",
    "direct.module": "str",
    "direct.python": "str",
    "direct.run_mode": "str",
    "direct.on_failure": "str",  # report | stop | restart (PRIMUS_ON_FAILURE wins; docs/restart-on-failure.md)
    "direct.workspace": "str",
    "direct.log_file": "str",
    "direct.log_all_ranks": "bool",
    "direct.numa": "bool_auto",
    "direct.debug": "bool",
    "direct.dry_run": "bool",
    "direct.single": "bool",
    "direct.env": "list",
    "direct.patch": "list",
    "direct.env_map": "map",
    # container: primus-cli container
    "container.runtime": "str",
    "container.image": "str",
    "container.name": "str",
    "container.debug": "bool",
    "container.dry_run": "bool",
    "container.options.*": "option",
    # slurm: primus-cli slurm
    "slurm.mode": "str",
    "slurm.nodes": "str",
    "slurm.time": "str",
    "slurm.partition": "str",
    "slurm.gpus_per_node": "str",
    "slurm.srun_native": "bool",
    "slurm.signal": "str",
    "slurm.requeue": "bool",
    "slurm.debug": "bool",
    "slurm.dry_run": "bool",
}

# Quoted booleans, as upstream Primus's own runner/.primus.yaml writes them
# (privileged: "true", debug: false); read as the boolean.
BOOL_WORDS = {"true": True, "false": False, "yes": True, "no": False, "on": True,
              "off": False, "1": True, "0": False}

WANTED = {
    "bool": "a boolean (true or false)",
    "bool_auto": "a boolean (true or false) or auto",
    "int": "a whole number",
    "str": "a string",
    "list": "a list of values, e.g. [A=1, B=2] or one '- item' per line",
    "option": "a value or a list of values",
    "map": "a mapping of keys",
    "section": "a mapping (a section of keys)",
}


def type_name(value: Any) -> str:
    """The YAML type of a parsed value, as a user reads it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def fits(kind: str, value: Any) -> bool:
    """True when ``value`` is acceptable for a key of type ``kind``."""
    if value is None:
        return True
    if kind == "bool":
        return isinstance(value, bool) or bool_word(value) is not None
    if kind == "bool_auto":
        return fits("bool", value) or (isinstance(value, str) and value.strip().lower() == "auto")
    if kind == "int":
        if isinstance(value, str):
            return value.strip().lstrip("-").isdigit()
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "str":
        return _scalar(value) and not isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list) and all(_scalar(item) for item in value)
    if kind == "option":
        return _scalar(value) or (isinstance(value, list) and all(_scalar(i) for i in value))
    if kind == "map":
        return isinstance(value, dict)
    raise ValueError(f"config schema: unknown type '{kind}'")


def bool_word(value: Any) -> bool | None:
    """The boolean a quoted word stands for (BOOL_WORDS), else None."""
    if isinstance(value, str):
        return BOOL_WORDS.get(value.strip().lower())
    return None


def kind_of(dotted: str, schema: dict[str, str] | None = None) -> str | None:
    """The declared type of ``dotted`` ('section' for a section), or None if unknown."""
    table = SCHEMA if schema is None else schema
    if dotted in table:
        return table[dotted]
    parent, _, _ = dotted.rpartition(".")
    if parent and f"{parent}.*" in table:
        return table[f"{parent}.*"]
    prefix = dotted + "."
    if any(key.startswith(prefix) for key in table):
        return "section"
    return None


def _guess_kind(value: Any) -> set[str]:
    """The types a value of an unknown key could have been meant as."""
    return {kind for kind in ("bool", "bool_auto", "int", "str", "list", "option", "map")
            if fits(kind, value)}


def suggestion(dotted: str, value: Any, schema: dict[str, str] | None = None) -> str | None:
    """The closest known key of the same section whose type accepts ``value``."""
    table = SCHEMA if schema is None else schema
    section, _, leaf = dotted.rpartition(".")
    kinds = _guess_kind(value)
    if value is None:
        kinds = set(WANTED)
    candidates = {}
    for key, kind in table.items():
        parent, _, name = key.rpartition(".")
        if parent == section and name != "*" and kind in kinds:
            candidates[name] = key
    if not section:  # a misspelt section name: compare with the sections
        candidates = {key.split(".", 1)[0]: key.split(".", 1)[0] for key in table}
        if not isinstance(value, dict):
            return None
    hit = closest(leaf, sorted(candidates))
    return candidates[hit] if hit else None


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f"'{value}'"
    return text if len(text) <= 60 else text[:57] + "..."


def _fix(dotted: str, kind: str) -> str:
    leaf = dotted.rsplit(".", 1)[-1]
    examples = {
        "bool": f"write '{leaf}: true' or '{leaf}: false'",
        "bool_auto": f"write '{leaf}: true', '{leaf}: false' or '{leaf}: auto'",
        "int": f"write a number, e.g. '{leaf}: 2'",
        "str": f"write one text value, e.g. '{leaf}: value'",
        "list": f"write a list, e.g. '{leaf}: [NAME=value]'",
        "option": f"write a value or a list, e.g. '{leaf}: [a, b]'",
        "map": f"write a mapping, e.g. '{leaf}: {{key: value}}'",
        "section": f"write '{leaf}:' followed by its indented keys",
    }
    return examples[kind]


def check(data: dict[str, Any], path: str, schema: dict[str, str] | None = None
          ) -> tuple[list[str], list[str]]:
    """(errors, warnings) for one parsed config file."""
    errors: list[str] = []
    warnings: list[str] = []
    _walk(data, "", path, SCHEMA if schema is None else schema, errors, warnings)
    return errors, warnings


def _walk(node: dict[str, Any], prefix: str, path: str, table: dict[str, str],
          errors: list[str], warnings: list[str]) -> None:
    for raw_key, value in node.items():
        dotted = f"{prefix}{raw_key}"
        kind = kind_of(dotted, table)
        if kind is None:
            hint = suggestion(dotted, value, table)
            more = f" Did you mean '{hint}'?" if hint else ""
            warnings.append(f"unknown config key '{dotted}' in {path}; it is ignored.{more}")
            continue
        if kind == "section":
            if isinstance(value, dict):
                _walk(value, dotted + ".", path, table, errors, warnings)
            elif value is not None:
                errors.append(_type_error(dotted, path, value, kind))
            continue
        if not fits(kind, value):
            errors.append(_type_error(dotted, path, value, kind))
        elif kind in ("bool", "bool_auto") and bool_word(value) is not None:
            node[raw_key] = bool_word(value)      # "true" -> True, for every reader


def _type_error(dotted: str, path: str, value: Any, kind: str) -> str:
    seen = type_name(value)
    if kind == "list" and isinstance(value, list):
        bad = next(item for item in value if not _scalar(item))
        seen = f"a list holding a {type_name(bad)} ({_shown(bad)})"
        return (f"config key '{dotted}' in {path} is {seen}; wanted {WANTED[kind]} with "
                f"plain values only. Fix: {_fix(dotted, kind)}.")
    article = "an" if seen[0] in "aeiou" else "a"
    return (f"config key '{dotted}' in {path} is {article} {seen} ({_shown(value)}); wanted "
            f"{WANTED[kind]}. Fix: {_fix(dotted, kind)}.")
