"""Rules engine: check an environment against the registry (SPEC section 7).

The package is split along its seams: ``types`` (findings, check context, value
parsing), ``engine`` (rule registry, state, driver and the generic rules),
``primus`` (launcher/ROCm/NCCL/XLA rules), ``neuron`` (Neuron runtime rules) and
``neuron_launch`` (Neuron multi-node, EFA, core partitioning, topology, host limits).
Importing the package registers every rule, in that order.
"""
from __future__ import annotations

# The rule modules register in this order: Primus, then Neuron, then Neuron launch.
# isort: off
from primus_runner.rules import primus as _primus  # noqa: F401  (registers rules)
from primus_runner.rules import neuron as _neuron  # noqa: F401  (registers rules)
from primus_runner.rules import neuron_launch as _neuron_launch  # noqa: F401  (registers rules)
# isort: on
from primus_runner.rules.engine import RULES, check, exit_code
from primus_runner.rules.types import (
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
