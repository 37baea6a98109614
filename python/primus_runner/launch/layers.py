"""The shell layers' Python decisions (bash keeps no rule): which
module answers a ``layer`` request, and the ``layer`` command.

Requests (the shell sends WHICH with its exported environment):
  ``neuron``, ``neuron-slices``: launch/neuron_layer.py (runner/helpers/envs/neuron.sh)
  ``jax``, ``jax-workload``: launch/jax_layer.py (runner/helpers/envs/jax_xla.sh and
    runner/lib/workload.sh)
Inside ``primus-cli direct`` the launch helper answers them (launch/helper.py,
serve_layers: no Python start of their own); a layer sourced by hand runs
``python3 -m primus_runner layer WHICH`` once (runner/lib/env_origin.sh,
primus_env_ask).

Who owns a value, as both decisions read it: launch/origins.py.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping

from primus_runner.launch.origins import Record

# request -> the module that decides it (imported only when asked: a JAX launch
# never loads the Neuron core arithmetic).
MODULES = {"neuron": "neuron_layer", "neuron-slices": "neuron_layer",
           "jax": "jax_layer", "jax-workload": "jax_layer"}


def decider(which: str) -> Callable[[Mapping[str, str]], list[Record]]:
    """The function that answers request ``which``."""
    if which not in MODULES:
        from primus_runner.errors import UsageError

        raise UsageError(f"layer '{which}' is not known; accepted: {', '.join(MODULES)}")
    if MODULES[which] == "jax_layer":
        from primus_runner.launch import jax_layer

        return jax_layer.LAYERS[which]
    from primus_runner.launch import neuron_layer

    return neuron_layer.LAYERS[which]


def records(which: str, env: Mapping[str, str]) -> list[Record]:
    """The records of layer request ``which`` for ``env``."""
    return decider(which)(env)


def main(argv: list[str]) -> int:
    """``python3 -m primus_runner layer WHICH``: the records for a hand-sourced
    layer, NUL-separated (kind, name, value), then ``end``."""
    import os

    if len(argv) != 1 or argv[0] not in MODULES:
        from primus_runner.usertext import plain

        wanted = bool(argv) and argv[0] in ("-h", "--help")
        (sys.stdout if wanted else sys.stderr).write(
            f"usage: python3 -m primus_runner layer {{{','.join(MODULES)}}}\n\n{plain(__doc__ or '')}\n")
        return 0 if wanted else 2
    from primus_runner.shellfmt import nul_records

    out = records(argv[0], os.environ)
    sys.stdout.buffer.write(nul_records([*out, ("end", "", "")]))
    sys.stdout.buffer.flush()
    return 0
