"""The Kubernetes presets (data/k8s_presets.yaml): one owner for the per-platform
facts the renderer uses (device resource and count, processes per node, EFA count,
tolerations, networking modes, /dev/shm size, capabilities)."""
from __future__ import annotations

import os
from typing import Any

from primus_runner.errors import MissingError, UsageError

PRESETS_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "data", "k8s_presets.yaml")
NETWORKS = ("host", "multus", "pod")


def load(path: str = PRESETS_PATH) -> dict[str, dict[str, Any]]:
    """name -> preset mapping, in file order."""
    from primus_runner.yamlload import import_yaml, safe_loader

    yaml = import_yaml()
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=safe_loader(yaml))
    except OSError as exc:
        raise MissingError(f"Kubernetes presets file '{path}' cannot be read ({exc.strerror}); "
                           "reinstall primus-runner.") from None
    presets = data.get("presets") if isinstance(data, dict) else None
    if not isinstance(presets, dict):
        raise MissingError(f"Kubernetes presets file '{path}' has no 'presets:' mapping.")
    return {str(k): dict(v) for k, v in presets.items()}


def get(name: str, presets: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    from primus_runner.errors import closest

    table = presets if presets is not None else load()
    key = name.lower()
    if key not in table:
        hint = closest(key, list(table))
        raise UsageError(f"--preset '{name}' is not a Kubernetes preset; accepted: {', '.join(table)}."
                         + (f" Did you mean '{hint}'?" if hint else "")
                         + " Run 'primus-cli k8s --help' for the list.")
    return table[key]


def help_lines(presets: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """`primus-cli k8s --help`'s preset list: NAME  description."""
    table = presets if presets is not None else load()
    width = max(len(n) for n in table)
    return [f"  {name.ljust(width)}  {p.get('description', '')}" for name, p in table.items()]
