"""AWS Neuron hardware: the instance facts (the registry's ``neuron`` tables,
each with its AWS source), Neuron devices under the dev root, EFA devices, and
the logical NeuronCore count an LNC setting gives. Used by
primus_runner.hardware.devices (detection) and the Neuron rules.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping

from primus_runner.errors import Problem, RuleRefusal, closest
from primus_runner.grammar import neuron_family as neuron_family  # re-exported
from primus_runner.hardware.found import Device
from primus_runner.hardware.neuron_cores import logical_cores
from primus_runner.hardware.sysfs import list_dir, read_text, to_int

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any

# Neuron hardware facts live in one place, the registry's ``neuron`` tables
# (data/variables.yaml: families, devices_per_instance, efa_devices_per_instance,
# each with its AWS source); the helpers below read them.
def neuron_tables() -> dict[str, Any]:
    from primus_runner.registry_data import cached_data

    tables: dict[str, Any] = cached_data().get("neuron", {})
    return tables


def neuron_instances() -> dict[str, tuple[int, int, int]]:
    """EC2 instance type -> (Neuron devices, physical NeuronCores per device, default LNC)."""
    tables = neuron_tables()
    families = tables.get("families", {})
    out = {}
    for itype, devices in tables.get("devices_per_instance", {}).items():
        fam = families.get(neuron_family(itype) or "", {})
        out[itype] = (devices, fam.get("cores_per_device"), fam.get("default_lnc"))
    return out



def family_default_lnc(instance: str | None) -> int | None:
    """The reference's default LNC of the instance's family (registry
    neuron.families: 1 on trn1/inf2, 2 on trn2/trn3); None when unknown."""
    family = neuron_family(instance)
    if family is None:
        return None
    lnc = neuron_tables().get("families", {}).get(family, {}).get("default_lnc")
    return lnc if isinstance(lnc, int) else None


def _untabled_families() -> list[str]:
    tabled = {neuron_family(name) for name in neuron_instances()}
    return [f for f in neuron_tables().get("families", {}) if f not in tabled]


def neuron_instance_facts(instance_type: str) -> dict[str, Any]:
    """Facts for an EC2 instance type: devices, cores per device, default LNC.
    An unknown type is refused (rule neuron_instance_known)."""
    problem = instance_problem(instance_type)
    if problem is not None:
        raise RuleRefusal("neuron_instance_known", problem)
    itype = instance_type.strip().lower()
    family = neuron_family(itype)
    instances = neuron_instances()
    if itype in instances:
        devices, cores, lnc = instances[itype]
    else:  # a family whose sizes are not in the table (e.g. trn3): facts per device only
        facts = neuron_tables()["families"][family]
        cores, lnc, devices = facts["cores_per_device"], facts["default_lnc"], None
    return {"instance": itype, "family": family, "devices": devices, "cores_per_device": cores,
            "default_lnc": lnc,
            "logical_cores": logical_cores(devices, cores, lnc)}


def instance_problem(instance_type: str) -> Problem | None:
    """Rule neuron_instance_known: (variable, value, message, fix) when the
    registry's tables know neither the instance type nor its family's sizes."""
    itype = instance_type.strip().lower()
    family = neuron_family(itype)
    families = neuron_tables().get("families", {})
    instances = neuron_instances()
    if itype in instances or (family in _untabled_families() and "." in itype
                              and families[family].get("cores_per_device")):
        return None
    hint = closest(itype, list(instances))
    accepted = f"{', '.join(instances)} (or any size of {', '.join(_untabled_families())})"
    return ("PRIMUS_NEURON_INSTANCE", instance_type,
            f"is not a known Neuron instance type; accepted: {accepted}"
            + (f" (did you mean '{hint}'?)" if hint else ""),
            f"export PRIMUS_NEURON_INSTANCE={hint or 'trn1.32xlarge'} (the EC2 instance type), or unset "
            "it to detect the instance")


def efa_devices(root: str) -> list[str]:
    """EFA devices: ``sys/class/infiniband/<dev>`` whose ``device/driver`` is the
    kernel's ``efa`` module (drivers/infiniband/hw/efa, DRV_MODULE_NAME "efa")."""
    base = os.path.join(root, "sys/class/infiniband")
    out = []
    for name in list_dir(base):
        driver = os.path.join(base, name, "device/driver")
        if os.path.islink(driver) and os.path.basename(os.readlink(driver)) == "efa":
            out.append(name)
    return sorted(out)


def neuron_devices(root: str, dev_root: str) -> list[Device]:
    names = [n for n in list_dir(os.path.join(dev_root, "dev")) if re.fullmatch(r"neuron\d+", n)]
    out: list[Device] = []
    for name in sorted(names, key=lambda n: int(n[6:])):
        sys_dir = os.path.join(root, "sys/class/neuron_device", name)
        cores = to_int(read_text(os.path.join(sys_dir, "core_count")), 0) or None
        out.append(Device("neuron", int(name[6:]), name, None,
                          to_int(read_text(os.path.join(sys_dir, "device/numa_node"))), cores))
    return out


def _effective_lnc(env: Mapping[str, str], cores: int, default: int, notes: list[str]) -> int:
    for name in ("NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VIRTUAL_CORE_SIZE"):
        value = (env.get(name) or "").strip()
        if not value:
            continue
        if value.isdigit() and int(value) > 0 and cores % int(value) == 0 and \
                int(value) & (int(value) - 1) == 0:
            return int(value)
        notes.append(f"{name}={value} is not a power of two dividing {cores} cores per device; "
                     f"logical cores computed with the default LNC {default}")
        return default
    return default


def neuron_summary(root: str, env: Mapping[str, str], devices: list[Device],
                   instance: str | None, notes: list[str]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    if instance:
        facts = neuron_instance_facts(instance)
    cores = next((d.cores for d in devices if d.cores), None) or facts.get("cores_per_device")
    default_lnc = facts.get("default_lnc")
    if default_lnc is None and cores:
        # Instance type unknown: the family default of devices with this many cores.
        lncs = {f.get("default_lnc") for f in neuron_tables().get("families", {}).values()
                if f.get("cores_per_device") == cores}
        default_lnc = lncs.pop() if len(lncs) == 1 else None
    count = len(devices) if devices else facts.get("devices")
    if devices and facts.get("devices") not in (None, len(devices)):
        notes.append(f"{facts['instance']} has {facts['devices']} Neuron devices but "
                     f"{len(devices)} are visible here; using {len(devices)}")
    summary = {"instance": facts.get("instance", instance), "devices": count,
               "cores_per_device": cores, "default_lnc": default_lnc, "lnc": None,
               "logical_cores": None, "efa_devices": len(efa_devices(root)) if devices else None}
    if cores and default_lnc:
        lnc = _effective_lnc(env, cores, default_lnc, notes)
        summary["lnc"] = lnc
        summary["logical_cores"] = logical_cores(count, cores, lnc)
    return summary
