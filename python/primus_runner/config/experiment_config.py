"""What the launcher may know of an experiment config before any hook runs,
kept apart from experiment.py so the launch helper imports only this.

- ``section``: ``modules.<name>``, else a top-level ``<name>`` (Primus configs).
- ``static_framework``: ``pre_trainer.framework`` as far as the environment
  cannot change it.
- ``missing_config``: the one error text of a ``--config`` that does not exist
  (the launch helper says it before any hook runs; the hook says it too).
"""
from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ms of every launch
    from typing import Any


def section(cfg: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``modules.<name>``, else a top-level ``<name>``; {} when absent."""
    modules = cfg.get("modules")
    if isinstance(modules, dict) and isinstance(modules.get(name), dict):
        return dict(modules[name])
    value = cfg.get(name)
    return value if isinstance(value, dict) else {}


def missing_config(path: str, cwd: str = "") -> str:
    """The error for an experiment config PATH that is not a file ('' when it is)."""
    import os

    if os.path.isfile(path):
        return ""
    where = cwd or os.getcwd()
    return (f"experiment config '{path}' (train pretrain --config) does not exist "
            f"(relative paths are read from the working directory {where}); nothing was started. "
            "Fix: give the path of an existing YAML file, e.g. --config examples/cpu_pretrain.yaml "
            "from the repository's top directory.")


def static_framework(path: str) -> tuple[str, list[str]] | None:
    """``pre_trainer.framework`` of the experiment config at PATH as far as the
    environment cannot change it, and the variables the file requires.

    The text is rendered with a placeholder for every ``${VAR}`` /
    ``${VAR:default}`` (so a templated framework is never '') and parsed. '' then
    means: no framework, whatever those variables hold (as long as a value does
    not inject YAML structure, which rendering never guards against either).
    The names written ``${VAR}`` without a default must still be set when the
    hook runs, or rendering fails there. None: unreadable or malformed (the
    hook reports it). The launch helper asks this early, so a config without a
    framework costs ``prepare_experiment.sh`` no Python start."""
    from primus_runner.config.files import _VAR_RE, parse_yaml
    from primus_runner.errors import PrimusError

    try:
        with open(path, encoding="utf-8") as handle:  # not pathlib: it imports urllib and ipaddress
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return None
    required = sorted({m.group(1) for m in _VAR_RE.finditer(text) if m.group(2) is None})
    rendered = _VAR_RE.sub("primus-placeholder", text)
    try:
        cfg = parse_yaml(rendered, path)
    except PrimusError:
        return None
    return str(section(cfg, "pre_trainer").get("framework") or ""), required
