"""Configuration files: loading, precedence, source tracking and ${VAR} rendering.

Precedence (docs/configuration.md "Configuration"), lowest first: ``runner/.primus.yaml`` (system
defaults) < ``~/.primus.yaml`` (user) < ``--config FILE``; command-line flags
beat all three and are applied by the shell. Mappings merge key by key; a list
or scalar in a later file replaces the earlier one whole.

Everything here is a pure function of its inputs except ``load_files`` (reads
files) so parsing and merging test without a cluster.
"""
from __future__ import annotations

import json
import os
import re
import sys
import zlib
from collections.abc import Iterator, Mapping

from primus_runner.errors import MissingError, UsageError
from primus_runner.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))  # python/primus_runner -> repo
# runner/.primus.yaml parsed ahead of time: importing PyYAML costs 30-40 ms of
# the launch budget, so the system file is read from this JSON copy while its
# checksum matches (an edited system file falls back to PyYAML, never stale).
SYSTEM_JSON = os.path.join(PACKAGE_DIR, "data", "system_config.json")


def system_config_path() -> str:
    root = os.environ.get("PRIMUS_ROOT") or DEFAULT_ROOT
    return os.path.join(root, "runner", ".primus.yaml")


def user_config_path() -> str:
    """PRIMUS_USER_CONFIG (the container launcher's mount of the host user's file),
    else ~/.primus.yaml."""
    return os.environ.get("PRIMUS_USER_CONFIG") or os.path.join(os.path.expanduser("~"), ".primus.yaml")


@dataclass
class Layer:
    """One configuration file's parsed content."""

    path: str
    data: dict[str, Any]


@dataclass
class Config:
    """Merged configuration plus, for every leaf, the file it came from."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.values
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node


def parse_yaml(text: str, path: str) -> dict[str, Any]:
    """Parse one config file's text; malformed YAML is a UsageError naming file and line.
    Without PyYAML (a container's own Python) the standard-library reader
    (config/miniyaml.py) reads the subset the configuration files use."""
    from primus_runner.yamlload import import_yaml, safe_loader

    try:
        yaml = import_yaml()
    except ImportError:
        return _parse_without_pyyaml(text, path)
    loader = safe_loader(yaml)
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UsageError(
            f"malformed YAML in config file {where}: {problem}. "
            "Fix the syntax at that line (indentation, a missing ':' or an unclosed quote)."
        ) from None
    return _top_mapping(data, path)


def _parse_without_pyyaml(text: str, path: str) -> dict[str, Any]:
    from primus_runner.config.miniyaml import MiniYamlError, load

    try:
        data = load(text)
    except MiniYamlError as exc:
        raise UsageError(
            f"config file {path}:{exc.line}: {exc.problem}. This Python ({sys.executable}) has no "
            "PyYAML, so the file is read by the standard-library reader, which accepts block and "
            "flow mappings and lists of plain or quoted scalars. Fix: write that line in that "
            "subset, or install PyYAML into this Python (pip install PyYAML)."
        ) from None
    return _top_mapping(data, path)


def _top_mapping(data: Any, path: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(
            f"config file {path} must hold a mapping at the top level (found "
            f"{type(data).__name__}); accepted: keys such as 'direct:', 'container:', 'slurm:'."
        )
    return data


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def checksum(text: str) -> str:
    data = text.encode("utf-8")
    return f"{zlib.crc32(data):08x}-{len(data)}"


def read_layer(path: str, required: bool, *, json_copy: str | None = None) -> Layer | None:
    if os.path.isdir(path):
        raise UsageError(f"config file '{path}' is a directory; accepted: a YAML file. Fix: pass the "
                         f"file inside it, e.g. --config {path.rstrip('/')}/.primus.yaml.")
    if not os.path.isfile(path):
        if required:
            raise MissingError(
                f"config file '{path}' (from --config) not found; pass an existing YAML file "
                "or drop --config to use runner/.primus.yaml and ~/.primus.yaml."
            )
        return None
    try:
        text = _read_text(path)
    except OSError as exc:
        raise MissingError(f"config file '{path}' cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"config file '{path}' is not UTF-8 text (byte {exc.start}: "
                         f"{exc.object[exc.start:exc.start + 1]!r}); accepted: a UTF-8 YAML file. "
                         f"Fix: convert it, e.g. iconv -f latin1 -t utf-8.") from None
    if json_copy:
        cached = _json_copy_for(text, json_copy)
        if cached is not None:
            return Layer(path, cached)
    return Layer(path, parse_yaml(text, path))


def _json_copy_for(text: str, json_copy: str) -> dict[str, Any] | None:
    try:
        with open(json_copy, encoding="utf-8") as handle:
            stored = json.load(handle)
    except (OSError, ValueError):
        return None
    if stored.get("checksum") != checksum(text):
        return None
    data: dict[str, Any] | None = stored.get("data")
    return data


def write_system_json(out: str = SYSTEM_JSON) -> str:
    """Regenerate the JSON copy of runner/.primus.yaml (after editing it)."""
    path = system_config_path()
    text = _read_text(path)
    payload = {"source": "runner/.primus.yaml", "checksum": checksum(text),
               "data": parse_yaml(text, path)}
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=1, sort_keys=False)
        handle.write("\n")
    return out


def flatten(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Yield (dotted.key, leaf) pairs; lists and scalars are leaves."""
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from flatten(value, dotted + ".")
        else:
            yield dotted, value


def merge(layers: list[Layer]) -> Config:
    """Merge layers in order (later wins), remembering each leaf's file."""
    cfg = Config()
    for layer in layers:
        for dotted, value in flatten(layer.data):
            _set_dotted(cfg.values, dotted, value)
            # A replaced subtree's old leaves no longer apply.
            for stale in [k for k in cfg.sources if k.startswith(dotted + ".")]:
                del cfg.sources[stale]
            cfg.sources[dotted] = layer.path
    return cfg


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def check_layers(layers: list[Layer]) -> list[str]:
    """Type-check every layer against the schema (config_schema.SCHEMA).

    Returns the unknown-key warnings; a value of the wrong type raises a
    UsageError (exit 2) listing every such key with the type seen and wanted.
    """
    from primus_runner.config import schema as config_schema

    errors: list[str] = []
    warnings: list[str] = []
    for layer in layers:
        errs, warns = config_schema.check(layer.data, layer.path)
        errors += errs
        warnings += warns
    if errors:
        raise UsageError("\n".join(errors))
    return warnings


def load(config_file: str | None = None, *, include_user: bool = True) -> Config:
    """Load system, user and explicit config files and merge them."""
    system = read_layer(system_config_path(), required=False, json_copy=SYSTEM_JSON)
    layers = [layer for layer in (system,) if layer]
    if include_user and os.environ.get("PRIMUS_NO_USER_CONFIG") != "1":
        user = read_layer(user_config_path(), required=False)
        if user:
            layers.append(user)
    if config_file:
        explicit = read_layer(config_file, required=True)
        assert explicit is not None
        layers.append(explicit)
    warnings = check_layers(layers)
    cfg = merge(layers)
    cfg.warnings = warnings
    return cfg


def scalar_text(value: Any) -> str:
    """How a leaf value is handed to the shell: booleans as 1/0, None as ''."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


# ---------------------------------------------------------------- ${VAR} render

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")


def render_text(text: str, env: Mapping[str, str], path: str) -> str:
    """Substitute ``${VAR}`` (required) and ``${VAR:default}`` (optional).

    A required variable that is unset is a UsageError naming VAR and the file.
    An empty-but-set variable counts as set.
    """
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        missing.append(name)
        return match.group(0)

    rendered = _VAR_RE.sub(replace, text)
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        raise UsageError(
            f"{path} needs {names} (written ${{NAME}} without a default) but it is not set; "
            f"export it, or write ${{NAME:default}} in the file."
        )
    return rendered


def render_file(path: str, env: Mapping[str, str]) -> str:
    if not os.path.isfile(path):
        raise MissingError(f"file to render '{path}' not found; pass an existing YAML file.")
    return render_text(_read_text(path), env, path)


def load_rendered_yaml(path: str, env: Mapping[str, str]) -> dict[str, Any]:
    """Render ``${VAR}`` patterns, then parse as YAML (workload configs)."""
    return parse_yaml(render_file(path, env), path)


# ------------------------------------------------- records for the bash side

def config_records(cfg: Config) -> Iterator[tuple[str, str, str]]:
    """(kind, key, value) records: 'cfg' for scalars, 'list' + 'item' for lists."""
    for dotted, value in flatten(cfg.values):
        if isinstance(value, list):
            yield "list", dotted, str(len(value))
            for item in value:
                yield "item", dotted, scalar_text(item)
        elif isinstance(value, dict):
            yield "list", dotted, "0"
        else:
            yield "cfg", dotted, scalar_text(value)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-json"]:
        print(write_system_json())
    else:
        print("usage: python3 -m primus_runner.config.files --write-json", file=sys.stderr)
        sys.exit(2)


def only_system_default(cfg: Config, key: str) -> bool:
    """True when KEY's value comes from runner/.primus.yaml alone (or no file):
    the system default, which a launch may replace (the detected process count,
    an automatic port)."""
    source = cfg.sources.get(key)
    return source is None or os.path.abspath(source) == os.path.abspath(system_config_path())
