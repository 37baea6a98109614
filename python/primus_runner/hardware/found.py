"""What detection found on this host: the ``Device`` and ``Devices`` records.

Owns the shape of a detection result and its export as ``PRIMUS_*`` variables
(``Devices.as_env``); hardware.devices fills it, hardware.neuron adds Neuron
devices, hardware.placement reads it. Must not read the host itself: that is
the readers' (hardware.sysfs) and the detectors' job.
"""
from __future__ import annotations

from primus_runner.records import asdict, dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any


@dataclass
class Device:
    kind: str                  # "gpu" or "neuron"
    index: int
    name: str
    pci: str | None
    numa_node: int
    cores: int | None = None


@dataclass
class Devices:
    accelerator: str
    gpu_model: str | None
    devices: list[Device]
    neuron: dict[str, Any] | None
    numa_cpus: dict[int, str]
    detected_by: list[str] = field(default_factory=list)
    overrides: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    visible_count: int | None = None     # GPUs left after ROCR/HIP/CUDA masks

    def as_env(self) -> dict[str, str]:
        out = {"PRIMUS_ACCELERATOR": self.accelerator}
        if self.accelerator in ("rocm", "cuda"):
            if self.gpu_model:
                out["PRIMUS_GPU_MODEL"] = self.gpu_model
            count = len(self.devices) if self.visible_count is None else self.visible_count
            out["PRIMUS_GPU_COUNT"] = str(count)
        if self.accelerator == "neuron" and self.neuron:
            n = self.neuron
            if n.get("instance"):
                out["PRIMUS_NEURON_INSTANCE"] = n["instance"]
            for key, name in (("devices", "PRIMUS_NEURON_DEVICES"),
                              ("cores_per_device", "PRIMUS_NEURON_CORES_PER_DEVICE"),
                              ("default_lnc", "PRIMUS_NEURON_DEFAULT_LNC"),
                              ("logical_cores", "PRIMUS_NEURON_LOGICAL_CORES"),
                              ("efa_devices", "PRIMUS_NEURON_EFA_DEVICES")):
                if n.get(key) is not None:
                    out[name] = str(n[key])
        return out

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)
        data["env"] = self.as_env()
        return data
