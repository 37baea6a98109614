"""Placement: which of the detected devices a process sees and where it runs.

- ``gpu_mask``: the GPUs left after ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES /
  CUDA_VISIBLE_DEVICES, and the mask items that name nothing (rule
  ``gpu_masks_on_host``).
- ``numa_node_for_rank``: the NUMA node of the device a local rank uses
  (runner/helpers/numa_bind.sh via ``devices --numa-for-rank``).
- ``set_affinity``: pin a process to CPUs (psutil, else sched_setaffinity).
- ``srun_native_local_rank``: a Slurm task with a per-task GPU mask uses index 0
  of its own mask.

Pure functions of the environment and of what primus_runner.hardware.devices found.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from primus_runner.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from primus_runner.hardware.found import Devices


# ROCm applies ROCR_VISIBLE_DEVICES first (indices or UUIDs of the host's GPUs);
# HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES, which HIP also reads) then
# indexes the GPUs ROCR left. Sources: ROCm docs "GPU isolation techniques"
# (https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html) and
# PyTorch's device count with both set (pytorch/pytorch#142292: ROCR=1,2,3 with
# HIP=0 is one GPU). On CUDA only CUDA_VISIBLE_DEVICES applies.
@dataclass
class GpuMask:
    visible: list[int] | None     # physical indices left (None: a mask uses UUIDs)
    count: int
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (variable, why, fix)


def _mask_items(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


def gpu_mask(env: Mapping[str, str], physical: int, accelerator: str = "rocm") -> GpuMask:
    """The GPUs a process sees after the masks, and the mask items that name nothing."""
    problems: list[tuple[str, str, str]] = []
    visible: list[int] | None = list(range(physical))
    count = physical
    layers = (("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
              if accelerator == "rocm" else ("CUDA_VISIBLE_DEVICES",))
    applied: list[str] = []
    for name in layers:
        value = (env.get(name) or "").strip()
        if not value or (name == "CUDA_VISIBLE_DEVICES" and "HIP_VISIBLE_DEVICES" in applied):
            continue
        items = _mask_items(value)
        base = " after " + applied[0] + "=" + env[applied[0]] if applied else ""
        if visible is not None and all(i.isdigit() for i in items):
            beyond = [i for i in items if int(i) >= len(visible)]
            if beyond and physical > 0:
                if applied:
                    why = (f"indexes the {len(visible)} GPU(s) left{base} ({name} applies on top of "
                           f"it, counting from 0): {', '.join(beyond)} name(s) nothing")
                    fix = (f"unset {name} ({applied[0]} already chooses the GPUs), or list "
                           f"indices 0-{len(visible) - 1}")
                else:
                    why = (f"names GPU(s) {', '.join(beyond)}, but this host has {physical} "
                           f"(0-{physical - 1})")
                    fix = f"list indices 0-{physical - 1}"
                problems.append((name, why, fix))
            visible = [visible[int(i)] for i in items if int(i) < len(visible)]
            count = len(visible)
        else:
            visible = None
            count = len(items)
        applied.append(name)
    return GpuMask(visible, count, problems)


def _visible(env: Mapping[str, str], found: Devices) -> list[int] | None:
    return gpu_mask(env, len(found.devices), found.accelerator).visible


def numa_node_for_rank(found: Devices, local_rank: int, env: Mapping[str, str]) -> int:
    """NUMA node of the device a local rank uses (-1 when unknown)."""
    if found.accelerator in ("rocm", "cuda"):
        visible = _visible(env, found)
        index = visible[local_rank] if visible and local_rank < len(visible) else local_rank
        by_index = {d.index: d for d in found.devices}
        return by_index[index].numa_node if index in by_index else -1
    if found.accelerator == "neuron" and found.devices and found.neuron:
        cores = found.neuron.get("cores_per_device") or 1
        lnc = found.neuron.get("lnc") or 1
        per_device = max(cores // lnc, 1)
        index = local_rank // per_device
        return found.devices[index].numa_node if index < len(found.devices) else -1
    if found.numa_cpus:
        nodes = list(found.numa_cpus)
        return nodes[local_rank % len(nodes)]
    return -1


def set_affinity(pid: int, cpus: list[int]) -> str:
    """Pin ``pid`` to ``cpus`` (those it may use); 'set', 'empty' or 'failed:<why>'."""
    try:
        import psutil

        proc = psutil.Process(pid)
        allowed = set(proc.cpu_affinity())
        target = sorted(set(cpus) & allowed)
        if not target:
            return "empty"
        proc.cpu_affinity(target)
        return "set"
    except ImportError:
        pass
    except Exception as exc:  # noqa: BLE001 (psutil.Error, OSError: reported, not raised)
        return f"failed:{type(exc).__name__}"
    try:
        allowed = os.sched_getaffinity(pid)
        target = sorted(set(cpus) & allowed)
        if not target:
            return "empty"
        os.sched_setaffinity(pid, target)
        return "set"
    except OSError as exc:
        return f"failed:{exc.strerror or type(exc).__name__}"


def srun_native_local_rank(env: Mapping[str, str], found: Devices) -> tuple[str, str] | None:
    """srun-native (one Slurm task per worker): with a per-task GPU mask (srun
    --gpu-bind gives task N ROCR_VISIBLE_DEVICES=N), the worker sees fewer GPUs
    than there are tasks on the node, so its device is index 0 of its own mask,
    not SLURM_LOCALID. Returns (LOCAL_RANK, note) when it must change."""
    if env.get("PRIMUS_SRUN_NATIVE") != "1" or found.accelerator not in ("rocm", "cuda"):
        return None
    local, size = env.get("LOCAL_RANK", ""), env.get("LOCAL_WORLD_SIZE", "")
    if not (local.isdigit() and size.isdigit()) or int(local) == 0:
        return None
    names = ("ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
    masks = [f"{n}={env[n]}" for n in names if env.get(n)]
    mask = gpu_mask(env, len(found.devices), found.accelerator)
    if not masks or mask.count == 0 or mask.count >= int(size) or int(local) < mask.count:
        return None
    return "0", (f"srun-native task with LOCAL_RANK {local} of {size} has a per-task GPU mask "
                 f"({', '.join(masks)}: {mask.count} GPU(s) visible); LOCAL_RANK=0 selects the "
                 "first GPU of its own mask")
