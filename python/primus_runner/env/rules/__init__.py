"""Rules engine: check an environment against the registry (docs/configuration.md "Environment variables and checks").

The package is split along its seams: ``types`` (findings, check context, value
parsing), ``engine`` (rule registry, state, driver and the generic rules),
``primus`` (launcher/ROCm/NCCL/XLA rules), ``neuron`` (Neuron runtime rules) and
``neuron_launch`` (Neuron multi-node, EFA, core partitioning, topology, host limits),
``launch_inputs`` (the rank mapping's refusals, env/refusals.py), ``constraints``
(single-value constraints of the references) and ``network`` (the user's NCCL interface
lists against this host).
Importing the package registers every rule, in that order.
"""
from __future__ import annotations

# Loaded on first use (PEP 562): importing a submodule such as
# ``primus_runner.env.rules.distributed`` (on the launch path, from ranks.py) must not
# pay for every rule module. The rule modules register in this order: Primus,
# then Neuron, Neuron launch, constraints, network.
TYPE_CHECKING = False
if TYPE_CHECKING:  # what __getattr__ hands out, for the type checker
    from primus_runner.env.rules.engine import RULES, check, exit_code
    from primus_runner.env.rules.types import (
        ACCELERATORS,
        SEVERITY_ORDER,
        CheckContext,
        Finding,
        neuron_family,
        parse_bool,
        parse_range_list,
        parse_uint,
        type_problem,
    )
_EXPORTS = {
    "RULES": "engine", "check": "engine", "exit_code": "engine",
    "ACCELERATORS": "types", "SEVERITY_ORDER": "types", "CheckContext": "types", "Finding": "types",
    "neuron_family": "types", "parse_bool": "types", "parse_range_list": "types",
    "parse_uint": "types", "type_problem": "types",
}


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'primus_runner.env.rules' has no attribute {name!r}")
    import importlib

    # registers the rules, in order
    for module in ("primus", "neuron", "neuron_launch", "launch_inputs", "constraints", "network"):
        importlib.import_module(f"primus_runner.env.rules.{module}")
    return getattr(importlib.import_module(f"primus_runner.env.rules.{_EXPORTS[name]}"), name)


__all__ = [
    "ACCELERATORS",
    "RULES",
    "SEVERITY_ORDER",
    "CheckContext",
    "Finding",
    "check",
    "exit_code",
    "neuron_family",
    "parse_bool",
    "parse_range_list",
    "parse_uint",
    "type_problem",
]
