"""Whether the direct launcher binds each local rank to its device's NUMA node, and why.

Order (docs/run-on-one-node.md's ``--numa`` row and docs/coming-from-upstream.md's ``ENABLE_NUMA_BINDING``
row; test_numa_decision.py's table): ``--numa`` / ``--no-numa`` > config ``direct.numa:
true`` / ``false`` > ``ENABLE_NUMA_BINDING=1`` > off. A config that says ``false`` is the
user's word for this launch; an exported ``ENABLE_NUMA_BINDING`` comes lower in the job's
environment precedence. ``direct.numa: auto`` (upstream Primus's
shipped value; upstream binds only on ``true``: AMD-AGI/Primus fd1eeabb
runner/primus-cli-direct.sh:320,692-697) and an empty value leave the decision to
``ENABLE_NUMA_BINDING``, else off.

The launch helper (launch/helper.py) asks :func:`decide` once per launch and
returns ``env PRIMUS_NUMA_BIND`` (1/0: 0 also overrides an inherited value) and
``note PRIMUS_NUMA_BIND`` (the text the launch summary and ``--dry-run`` show);
runner/helpers/run_worker.sh and runner/helpers/numa_bind.sh do the binding.
"""
from __future__ import annotations

from collections.abc import Mapping


def decide(cli: str, config: str, env: Mapping[str, str]) -> tuple[str, str]:
    """(PRIMUS_NUMA_BIND, text) for CLI ('1' --numa, '0' --no-numa, '' no flag),
    CONFIG (config direct.numa as handed to the shell: '1', '0', 'auto' or '')
    and ENV (the launch's environment, --env and config direct.env merged)."""
    if cli == "1":
        bind, why = "1", "--numa"
    elif cli == "0":
        bind, why = "0", "--no-numa"
    elif config == "1":
        bind, why = "1", "config direct.numa: true"
    elif config == "0":
        bind, why = "0", "config direct.numa: false"
    elif env.get("ENABLE_NUMA_BINDING", "") == "1":
        bind, why = "1", "ENABLE_NUMA_BINDING=1"
    else:
        shown = f", config direct.numa: {config}" if config else ""
        bind, why = "0", f"default{shown}; --numa, direct.numa: true or ENABLE_NUMA_BINDING=1 bind"
    return bind, f"{'on' if bind == '1' else 'off'} ({why})"
