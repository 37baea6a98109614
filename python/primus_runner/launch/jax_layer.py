"""The JAX coordinator's decisions (one decision point). Both places
that give a JAX workload its coordinator ask here; the shell only applies the
records (runner/helpers/envs/jax_xla.sh, runner/lib/workload.sh).

Records (kind, name, value), as launch/neuron_layer.py's:
  ``default NAME VALUE``  set NAME unless the user owns it (primus_env_default)
  ``set NAME VALUE``      set NAME (the launcher's own value)
  ``unset NAME``          unset NAME (a value only the JAX layer defaulted)
  ``warn - TEXT``         a warning for node rank 0 (none today)

Two requests (``layer`` requests of the launch helper, launch/helper.py):

``jax`` (the JAX/XLA layer, jax_xla.sh; Primus docs, environment variables, section 14, "set by
env_spec.py when NNODES > 1"): with NNODES > 1 and a framework other than
maxdiffusion, JAX_COORDINATOR_IP = MASTER_ADDR and JAX_COORDINATOR_PORT =
MASTER_PORT (the registry's distributed defaults when those are empty), unless
the user's.

``jax-workload`` (``primus-cli direct`` after the hooks, once the run mode is
known; RUN_MODE is exported by then): the coordinator belongs to run mode single
with NNODES > 1 (in torchrun mode torchrun's store holds MASTER_PORT).
  torchrun mode: JAX_COORDINATOR_IP/PORT unset when only the JAX layer set them
    (origin jax_xla); a user's stays and `env check` (rule
    jax_coordinator_port_clash) judges it.
  single mode, NNODES > 1: JAX_COORDINATOR_IP/PORT = MASTER_ADDR/PORT when empty,
    and JAX_COORDINATOR_ADDRESS = host:port when empty, an IPv6 host in brackets
    (grammar.host_for_port). jax 0.10.2, jax/_src/distributed.py
    State.initialize(): with no arguments it reads JAX_COORDINATOR_ADDRESS
    (host:port); the process count and id come only from a detected cluster
    (jax/_src/clusters: Slurm, Open MPI, Kubernetes, TPU), and
    JAX_COORDINATOR_PORT only overrides the port such a cluster would pick. So a
    launch outside those passes num_processes=int(os.environ["WORLD_SIZE"]),
    process_id=int(os.environ["RANK"]).

Who owns a value is read the way launch/origins.py says (PRIMUS_ENV_ORIGINS,
PRIMUS_DETECTED_VARS).
"""
from __future__ import annotations

from collections.abc import Mapping

from primus_runner.facts import DISTRIBUTED_DEFAULTS
from primus_runner.grammar import host_for_port, is_uint
from primus_runner.launch.origins import Record, origins, user_owns

IP, PORT, ADDRESS = "JAX_COORDINATOR_IP", "JAX_COORDINATOR_PORT", "JAX_COORDINATOR_ADDRESS"
LAYER_ORIGIN = "jax_xla"   # what jax_xla.sh records for the values it defaulted


def _nodes(env: Mapping[str, str]) -> int | None:
    """NNODES as a whole number (at most 9 digits, as the shell reads it), else None."""
    value = env.get("NNODES", "")
    return int(value, 10) if is_uint(value) and len(value) <= 9 else None


def _master(env: Mapping[str, str], name: str) -> str:
    """MASTER_ADDR / MASTER_PORT, the registry's default when unset or empty."""
    return env.get(name) or DISTRIBUTED_DEFAULTS[name]


def layer(env: Mapping[str, str]) -> list[Record]:
    """The JAX layer's coordinator defaults (jax_xla.sh)."""
    if (env.get("PRIMUS_FRAMEWORK") or "maxtext").lower() == "maxdiffusion":
        return []  # MaxDiffusion declares no JAX defaults (its hook sets its own)
    nodes = _nodes(env)
    if nodes is None or nodes <= 1:
        return []  # one node: unset, so MaxText takes its local single-controller path
    out: list[Record] = []
    for name, source in ((IP, "MASTER_ADDR"), (PORT, "MASTER_PORT")):
        if not user_owns(env, name):
            out.append(("default", name, _master(env, source)))
    return out


def workload(env: Mapping[str, str]) -> list[Record]:
    """The coordinator for the run mode the launcher chose (RUN_MODE)."""
    if env.get("RUN_MODE") != "single":
        found = origins(env)
        return [("unset", name, "") for name in (IP, PORT) if found.get(name) == LAYER_ORIGIN]
    nodes = _nodes(env) if env.get("NNODES") else 1
    if nodes is None or nodes <= 1:
        return []
    values = dict(env)
    out: list[Record] = []
    for name, source in ((IP, "MASTER_ADDR"), (PORT, "MASTER_PORT")):
        if not values.get(name):
            values[name] = _master(env, source)
            out.append(("set", name, values[name]))
    if not values.get(ADDRESS):
        out.append(("set", ADDRESS, f"{host_for_port(values[IP])}:{values[PORT]}"))
    return out


LAYERS = {"jax": layer, "jax-workload": workload}
