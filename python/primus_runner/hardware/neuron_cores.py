"""The NeuronCore arithmetic, once: the logical cores an LNC setting gives, the
cores a node's processes may use, processes per node and the core slice of each
local rank.

Asked by the Neuron layer's decision (launch/neuron_layer.py; the shell layer
runner/helpers/envs/neuron.sh only exports what it returns), by detection
(hardware/neuron.py) and by the Neuron rules (env/rules/), so a count the
launcher derives and a count a rule checks come from the same function. Pure
functions of values, no table (the family facts are hardware/neuron.py's). It
must not read the host or decide a verdict.

Facts (Neuron runtime reference, NEURON_RT_VISIBLE_CORES and
NEURON_LOGICAL_NC_CONFIG): a logical core is LNC physical cores of one device,
so an instance has devices x cores per device / LNC logical cores; a core list is
an index list (grammar.index_list), each core named once.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from primus_runner.grammar import compact_index_list, index_list, parse_range_list

_UINT = re.compile(r"[0-9]{1,9}\Z")   # the launcher's whole numbers (at most 9 digits)
MAX_LISTED_CORES = 65536               # a longer core list is not counted, only reported


def uint(value: str | None) -> int | None:
    """A whole number of at most 9 digits (leading zeros allowed), else None."""
    return int(value, 10) if value and _UINT.match(value) else None


def logical_cores(devices: int | None, per_device: int | None, lnc: int | None) -> int | None:
    """devices x physical cores per device / LNC; None when a fact is missing or
    LNC does not divide the cores of one device."""
    if devices is None or not per_device or not lnc or per_device % lnc:
        return None
    return devices * per_device // lnc


def visible_cores(value: str | None) -> list[int] | None:
    """The cores a NEURON_RT_VISIBLE_CORES value names, in order; None when unset,
    malformed, naming a core twice or longer than MAX_LISTED_CORES."""
    ranges = parse_range_list(value) if value else None
    if ranges is None or sum(high - low + 1 for low, high in ranges) > MAX_LISTED_CORES:
        return None
    return index_list(value or "")[0]


def effective_lnc_text(env: Mapping[str, str]) -> str:
    """The LNC the runtime applies: NEURON_LOGICAL_NC_CONFIG, else the deprecated
    NEURON_RT_VIRTUAL_CORE_SIZE (its text, '' when neither is set)."""
    return env.get("NEURON_LOGICAL_NC_CONFIG") or env.get("NEURON_RT_VIRTUAL_CORE_SIZE") or ""


def node_cores(env: Mapping[str, str]) -> int | None:
    """Logical cores of this instance for the effective LNC, from the detected
    facts (PRIMUS_NEURON_DEVICES x _CORES_PER_DEVICE / LNC, else
    PRIMUS_NEURON_LOGICAL_CORES when the LNC is the detected default); None: unknown."""
    lnc = effective_lnc_text(env)
    counted = logical_cores(uint(env.get("PRIMUS_NEURON_DEVICES")),
                            uint(env.get("PRIMUS_NEURON_CORES_PER_DEVICE")), uint(lnc))
    if counted is not None:
        return counted
    logical = uint(env.get("PRIMUS_NEURON_LOGICAL_CORES"))
    if logical is not None and lnc == env.get("PRIMUS_NEURON_DEFAULT_LNC", ""):
        return logical
    return None


def available_cores(env: Mapping[str, str], visible_is_users: bool) -> list[int] | None:
    """The cores this node's processes may use: the user's NEURON_RT_VISIBLE_CORES
    (``visible_is_users``), else the first NEURON_RT_NUM_CORES (the deprecated
    name, read as the node's total as AWS samples set it), else all logical cores.
    None when unknown or when the visible list is not a usable core list."""
    if env.get("NEURON_RT_VISIBLE_CORES") and visible_is_users:
        return visible_cores(env["NEURON_RT_VISIBLE_CORES"])
    total = uint(env.get("NEURON_RT_NUM_CORES"))
    if not total:
        total = node_cores(env)
    return None if total is None else list(range(total))


def cores_per_process(env: Mapping[str, str]) -> int | None:
    """K of --neuron-cores-per-proc (PRIMUS_NEURON_CORES_PER_PROC, default 1);
    None when it is not a whole number >= 1 (the type rule reports it)."""
    k = uint(env.get("PRIMUS_NEURON_CORES_PER_PROC") or "1")
    return k if k else None


def core_slices(cores: list[int], processes: int, k: int) -> list[str] | None:
    """One core list per local rank, K cores each, taken in order from ``cores``
    ('0 1 2 ...' with K=1, '0-1 2-3 ...' with K=2); None when they do not fit."""
    if processes < 1 or k < 1 or processes * k > len(cores):
        return None
    return [compact_index_list(cores[i * k:(i + 1) * k]) for i in range(processes)]
