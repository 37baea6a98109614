"""The Neuron layer's decisions (one decision point): every value
runner/helpers/envs/neuron.sh exports on a Neuron host, decided here from the
environment the layer sees; the shell layer only applies the records.

Records (kind, name, value), in order:
  ``default NAME VALUE``  set NAME unless the user owns it (primus_env_default)
  ``set NAME VALUE``      set NAME (PRIMUS_NEURON_CORE_SLICES, the layer's own)
  ``unset NAME``          unset NAME (a layer or detection value, never the user's)
  ``warn - TEXT``         a warning for node rank 0

What the layer sets (docs/run-on-trainium.md "AWS Neuron (Trainium, Inferentia2)"):
  NEURON_LOGICAL_NC_CONFIG  the family default (PRIMUS_NEURON_DEFAULT_LNC from
                            detection, else the registry's families table); not
                            when the deprecated NEURON_RT_VIRTUAL_CORE_SIZE is set
  GPUS_PER_NODE             available logical cores / K (hardware/neuron_cores.py)
  PRIMUS_NEURON_CORE_SLICES one core list per local rank (again after --env/hooks)
  MALLOC_ARENA_MAX=64       AWS Neuron training scripts ("HOST OOM")
  NCCL_IB_*                 unset unless the user's (Neuron uses EFA via libfabric)
  NNODES > 1: NEURON_RT_ROOT_COMM_ID (cluster/ranks.py's one derivation),
  NEURON_RT_EXEC_TIMEOUT=600, FI_PROVIDER=efa, FI_EFA_USE_DEVICE_RDMA=1,
  FI_EFA_FORK_SAFE=1 (AWS launch scripts), CCOM_SOCKET_IFNAME=IP_INTERFACE.

Who owns a value is the layers' precedence rule (runner/lib/env_origin.sh), read
from what the shell exports with the environment: PRIMUS_ENV_ORIGINS (origins it
recorded) and PRIMUS_DETECTED_VARS (values the launcher detected). The launcher
asks through its helper (launch/helper.py, ``layer`` requests); a hand-sourced
layer runs ``python3 -m primus_runner layer neuron`` (launch/layers.py); who
owns a value: launch/origins.py.
"""
from __future__ import annotations

from collections.abc import Mapping

from primus_runner.hardware import neuron_cores as nc
from primus_runner.launch.origins import Record, detected, origins, owns

MULTINODE_EXEC_TIMEOUT = "600"   # s; the runtime's 30 s is too short across a network
MALLOC_ARENA_MAX = "64"
EFA_DEFAULTS = (("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1"), ("FI_EFA_FORK_SAFE", "1"))
SLICES = "PRIMUS_NEURON_CORE_SLICES"
VISIBLE = "NEURON_RT_VISIBLE_CORES"


class _Layer:
    """The environment as the layer changes it, and the records that say how."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.records: list[Record] = []
        self.origins = origins(env)
        self.detected = detected(env)

    def owns(self, name: str) -> bool:
        """The user's value (launch/origins.py owns), as the layer changed things."""
        return owns(name, self.env, self.origins, self.detected)

    def get(self, name: str) -> str:
        return self.env.get(name, "")

    def default(self, name: str, value: str) -> None:
        if self.owns(name):
            return
        self.env[name] = value
        self.origins[name] = "neuron"
        self.records.append(("default", name, value))

    def unset(self, name: str) -> None:
        self.env.pop(name, None)
        self.origins.pop(name, None)
        self.records.append(("unset", name, ""))

    def warn(self, text: str) -> None:
        self.records.append(("warn", "-", text))

    def available(self) -> list[int] | None:
        return nc.available_cores(self.env, self.owns(VISIBLE))


def _lnc(layer: _Layer) -> None:
    from primus_runner.hardware.neuron import family_default_lnc

    lnc = layer.get("PRIMUS_NEURON_DEFAULT_LNC") or str(family_default_lnc(layer.get("PRIMUS_NEURON_INSTANCE")) or "")
    if layer.get("NEURON_RT_VIRTUAL_CORE_SIZE") and not layer.owns("NEURON_LOGICAL_NC_CONFIG"):
        return  # the runtime applies the deprecated name itself (env check warns about it)
    if lnc:
        layer.default("NEURON_LOGICAL_NC_CONFIG", lnc)
    else:
        layer.warn(f"neuron: instance type '{layer.get('PRIMUS_NEURON_INSTANCE') or 'unknown'}' is not "
                   "known; NEURON_LOGICAL_NC_CONFIG is left to the runtime. Fix: export "
                   "PRIMUS_NEURON_INSTANCE (e.g. trn1.32xlarge) or NEURON_LOGICAL_NC_CONFIG.")


def _processes(layer: _Layer) -> None:
    cores = layer.available()
    stays = layer.env.get("GPUS_PER_NODE", "unset")
    if cores is None:
        if layer.get(VISIBLE) and layer.owns(VISIBLE):
            layer.warn(f"neuron: NEURON_RT_VISIBLE_CORES='{layer.get(VISIBLE)}' is not a core list this "
                       "layer can use (malformed, a backwards range, or a core named twice; the "
                       f"validation names which); GPUS_PER_NODE stays {stays}. Fix: list each core "
                       "once, e.g. 0-3 or 0,2,4.")
        else:
            layer.warn(f"neuron: the NeuronCores of instance '{layer.get('PRIMUS_NEURON_INSTANCE') or 'unknown'}' "
                       "are unknown (detection unavailable) and NEURON_RT_VISIBLE_CORES is not set; "
                       f"GPUS_PER_NODE stays {stays}. Fix: export GPUS_PER_NODE, or run 'make setup' "
                       "so detection works.")
        return
    k = nc.cores_per_process(layer.env)
    if k is not None and len(cores) >= k:
        layer.default("GPUS_PER_NODE", str(len(cores) // k))


def _slices(layer: _Layer) -> None:
    """PRIMUS_NEURON_CORE_SLICES from the current values. With K > 1 each worker
    still gets K cores of its own when the cores are unknown or too few (counted
    from 0: local rank i gets i*K..i*K+K-1; the rules engine reports a layout that
    does not fit); with K = 1 they are then unset."""
    cores, k = layer.available(), nc.cores_per_process(layer.env)
    processes = nc.uint(layer.env.get("GPUS_PER_NODE"))
    found = nc.core_slices(cores, processes, k) if cores is not None and k and processes else None
    if found is None and k and k > 1 and processes:
        found = nc.core_slices(list(range(min(processes * k, nc.MAX_LISTED_CORES))), processes, k)
    if found is None:
        layer.unset(SLICES)
        return
    layer.env[SLICES] = " ".join(found)
    layer.origins[SLICES] = "neuron"
    layer.records.append(("set", SLICES, layer.env[SLICES]))


def _root_comm(layer: _Layer) -> None:
    if layer.owns("NEURON_RT_ROOT_COMM_ID") or not layer.get("MASTER_ADDR"):
        return
    from primus_runner.cluster.ranks import resolve
    from primus_runner.errors import PrimusError
    from primus_runner.scheduler.variables import parse_int

    try:
        raw = layer.get("PRIMUS_NEURON_ROOT_COMM_PORT").strip()
        port = parse_int("PRIMUS_NEURON_ROOT_COMM_PORT", raw, 1024, 65535) if raw else None
        comm_id = resolve(layer.env).neuron_root_comm_id(port)
    except PrimusError as exc:
        layer.warn(f"neuron: could not derive NEURON_RT_ROOT_COMM_ID from MASTER_ADDR/MASTER_PORT: {exc} "
                   "Fix: export NEURON_RT_ROOT_COMM_ID=<rank-0 host>:<free port>.")
        return
    layer.default("NEURON_RT_ROOT_COMM_ID", comm_id)


def _multinode(layer: _Layer) -> None:
    nnodes = nc.uint(layer.env.get("NNODES"))
    if nnodes is None or nnodes <= 1:
        return
    _root_comm(layer)
    layer.default("NEURON_RT_EXEC_TIMEOUT", MULTINODE_EXEC_TIMEOUT)
    for name, value in EFA_DEFAULTS:
        layer.default(name, value)
    if layer.get("IP_INTERFACE"):
        layer.default("CCOM_SOCKET_IFNAME", layer.get("IP_INTERFACE"))


def decide(env: Mapping[str, str]) -> list[Record]:
    """The whole layer, in order, for ``env`` (the shell's variables)."""
    layer = _Layer(env)
    _lnc(layer)
    _processes(layer)
    _slices(layer)
    layer.default("MALLOC_ARENA_MAX", MALLOC_ARENA_MAX)
    for name in sorted(n for n in env if n.startswith("NCCL_IB_")):
        if not layer.owns(name):
            layer.unset(name)
    _multinode(layer)
    return layer.records


def slices(env: Mapping[str, str]) -> list[Record]:
    """PRIMUS_NEURON_CORE_SLICES again from the final values (after --env and hooks)."""
    layer = _Layer(env)
    _slices(layer)
    return layer.records


LAYERS = {"neuron": decide, "neuron-slices": slices}
