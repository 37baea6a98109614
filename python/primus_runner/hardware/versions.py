"""Versions and CPU facts readable on one node without starting anything: what the
cluster check (every multi-node launch) and the doctor compare across nodes.

Read under the sysfs root: ROCm (``/opt/rocm/.info/version``), the RCCL library
file (``/opt/rocm/lib/librccl.so.X``), the amdgpu and neuron driver modules
(``/sys/module/<mod>/version``), the Neuron runtime library
(``/opt/aws/neuron/lib/libnrt.so.X``), the CPU vendor (``/proc/cpuinfo``). On the
host: torch's version as ``torch/version.py`` of the workload's interpreter says
(PRIMUS_WORKLOAD_PYTHON's ``lib/python3*/site-packages``, else this Python's
sys.path) -- read, never imported (importing torch costs seconds; the launch has
0.15 s). Must not import anything heavier than os/re/sys.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping


def read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def lib_version(directory: str, stem: str) -> str | None:
    """The longest ``<stem>.so.X[.Y...]`` file name's version part (the real file)."""
    try:
        names = [n for n in os.listdir(directory) if n.startswith(stem + ".so.")]
    except OSError:
        return None
    if not names:
        return None
    best = max(names, key=lambda n: (n.count("."), n))
    return best[len(stem) + 4:]


def parse_cpuinfo(text: str) -> tuple[str, str]:
    """(vendor, model) from /proc/cpuinfo text: x86 ``vendor_id``/``model name``,
    Arm ``CPU implementer`` (0x41 Arm, 0xc0 Ampere) when no vendor_id."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    implementer = fields.get("CPU implementer", "")
    vendor = fields.get("vendor_id") or {"0x41": "ARM", "0xc0": "Ampere"}.get(
        implementer.lower(), implementer or "unknown")
    model = fields.get("model name") or fields.get("Model") or fields.get("cpu model") or "unknown"
    return vendor, model


def cpu_facts(root: str) -> tuple[str, str]:
    return parse_cpuinfo(read(os.path.join(root, "proc/cpuinfo")) or "")


def parse_torch_version(text: str) -> dict[str, str]:
    """torch's ``version.py`` text -> {"torch": ..., "HIP (torch)": ..., "CUDA (torch)": ...}
    (the names the preflight workload uses for what torch reports itself)."""
    out: dict[str, str] = {}
    for key, label in (("__version__", "torch"), ("hip", "HIP (torch)"), ("cuda", "CUDA (torch)")):
        match = re.search(rf"^{re.escape(key)}(?:\s*:[^=]*)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
        if match:
            out[label] = match.group(1)
    return out


def _site_dirs(python: str) -> list[str]:
    """``<prefix>/lib/python3*/site-packages`` of an interpreter path (a venv's bin/python)."""
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    lib = os.path.join(prefix, "lib")
    try:
        names = sorted(n for n in os.listdir(lib) if n.startswith("python3"))
    except OSError:
        return []
    return [os.path.join(lib, n, "site-packages") for n in names]


def torch_versions(env: Mapping[str, str]) -> dict[str, str]:
    python = env.get("PRIMUS_WORKLOAD_PYTHON") or env.get("PRIMUS_PYTHON") or ""
    folders = (_site_dirs(python) if python else []) or [p or "." for p in sys.path]
    for folder in folders:
        text = read(os.path.join(folder, "torch", "version.py"))
        if text:
            return parse_torch_version(text)
    return {}


def versions(root: str, env: Mapping[str, str]) -> dict[str, str]:
    """Versions (and the CPU vendor) readable on this node; absent ones are left out."""
    rocm = os.path.join(root, (env.get("ROCM_PATH") or env.get("ROCM_HOME") or "/opt/rocm").lstrip("/"))
    vendor = cpu_facts(root)[0]
    found = {
        "ROCm": read(os.path.join(rocm, ".info/version")),
        "RCCL library": lib_version(os.path.join(rocm, "lib"), "librccl"),
        "amdgpu driver": read(os.path.join(root, "sys/module/amdgpu/version")),
        "Neuron runtime": lib_version(os.path.join(root, "opt/aws/neuron/lib"), "libnrt"),
        "Neuron driver": read(os.path.join(root, "sys/module/neuron/version")),
        "CPU vendor": vendor if vendor != "unknown" else None,
        **torch_versions(env),
    }
    return {k: v for k, v in found.items() if v}
