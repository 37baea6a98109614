"""What the Kubernetes workload controllers without PET_* say (scheduler/variables.py
asks): LeaderWorkerSet's LWS_* values, and PyTorchJob v1's pod-level RANK mixed with a
process-level WORLD_SIZE, refused (rule scheduler_environment)."""
from __future__ import annotations

from collections.abc import Mapping

from primus_runner.errors import RuleRefusal


def get_var(env: Mapping[str, str], name: str) -> str | None:
    """A set, non-blank value (as scheduler/variables.py reads them; no import of it: it asks here)."""
    value = (env.get(name) or "").strip()
    return value or None


def lws_values(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """LeaderWorkerSet: the leader's address, the group size and this pod's index in
    the group (the LWS controller sets LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and
    LWS_WORKER_INDEX in every pod of a group; leader index 0). Source:
    https://github.com/kubernetes-sigs/lws (LWS_WORKER_INDEX natively since LWS v0.6.0)."""
    values: dict[str, tuple[str, str]] = {}
    for name, lws in (("MASTER_ADDR", "LWS_LEADER_ADDRESS"), ("NNODES", "LWS_GROUP_SIZE"),
                      ("NODE_RANK", "LWS_WORKER_INDEX")):
        value = get_var(env, lws)
        if value is not None:
            values[name] = (value, lws)
    return values


def refuse_process_world_size(env: Mapping[str, str]) -> None:
    """PyTorchJob v1 pods give RANK as the pod index; with nprocPerNode > 1 the
    operator's WORLD_SIZE counts processes (pods x PET_NPROC_PER_NODE), so it is
    not the node count the v1 mapping reads: refused, naming both."""
    nproc = get_var(env, "PET_NPROC_PER_NODE")
    size = get_var(env, "WORLD_SIZE") or ""
    rank = get_var(env, "RANK") or ""
    if nproc is None or not nproc.isdigit() or int(nproc) <= 1 or not size.isdigit():
        return
    pods = int(size) // int(nproc) if int(size) % int(nproc) == 0 else None
    guess = f"NNODES={pods} NODE_RANK={rank}" if pods else "NNODES=<pods> NODE_RANK=<pod index>"
    raise RuleRefusal("scheduler_environment", ("WORLD_SIZE", size,
                       f"counts processes (PET_NPROC_PER_NODE={nproc} per pod) while RANK={rank} is the pod's "
                       "index (PyTorchJob v1): pod-level RANK mixed with process-level WORLD_SIZE, so the node "
                       "count cannot be read from them",
                       f"set PET_NNODES in the job (training-operator >= 1.7 does), or export {guess}"))


def values(source: str, env: Mapping[str, str], notes: list[str]) -> dict[str, tuple[str, str]]:
    """The scheduler values of an "lws" or "pytorchjob-v1" pod (detect_source's names)."""
    if source == "lws":
        return lws_values(env)
    refuse_process_world_size(env)
    notes.append("Kubeflow PyTorchJob v1 environment (no PET_*): NNODES=WORLD_SIZE and "
                 "NODE_RANK=RANK, as the operator sets them per pod")
    return {"NNODES": (get_var(env, "WORLD_SIZE") or "", "WORLD_SIZE (PyTorchJob v1: pods)"),
            "NODE_RANK": (get_var(env, "RANK") or "", "RANK (PyTorchJob v1: pod index)")}
