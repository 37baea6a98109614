"""Accelerator detection: AMD GPUs, AWS Neuron devices, NVIDIA GPUs, CPU fallback,
and each device's NUMA node (docs/configuration.md "Environment layers").

Sources, all read under ``--sysfs-root`` (``PRIMUS_SYSFS_ROOT``) and
``--dev-root`` (``PRIMUS_DEV_ROOT``), both default ``/``:

- AMD: KFD topology ``sys/class/kfd/kfd/topology/nodes/*/properties`` (GPU nodes
  have ``simd_count`` > 0; ``gfx_target_version`` and ``device_id`` name the
  model; ``domain``/``location_id`` give the PCI address whose
  ``sys/bus/pci/devices/<addr>/numa_node`` is the NUMA node), else DRM
  ``sys/class/drm/card*/device/{vendor,device,numa_node}``. Model: device id
  0x74a1 -> MI300X, 0x74a5 -> MI325X, gfx950 -> MI355X; an unknown gfx942 id is
  asked of ``rocm-smi --showproductname --json`` when it is on PATH.
- Neuron: ``dev/neuron<N>`` under the dev root, ``sys/class/neuron_device/
  neuron<N>/{core_count,device/numa_node}``, and the EC2 instance type from
  ``sys/class/dmi/id/product_name`` (facts: the registry's ``neuron`` tables), and
  EFA devices under ``sys/class/infiniband`` (``device/driver`` is ``efa``);
  those readings and the instance facts are primus_runner.hardware.neuron.
- NVIDIA: ``nvidia-smi -L`` when on PATH (one call).
- Otherwise ``cpu``.

Overrides win over detection: ``PRIMUS_ACCELERATOR`` (auto|rocm|cuda|neuron|cpu),
``PRIMUS_GPU_MODEL`` (MI300X|MI325X|MI355X), ``PRIMUS_NEURON_INSTANCE``.

What a process sees of the devices found (GPU masks, a local rank's NUMA node,
CPU affinity) is primus_runner.hardware.placement.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping

from primus_runner.errors import Problem, RuleRefusal, UsageError, closest
from primus_runner.facts import ACCELERATORS
from primus_runner.facts import GPU_MODELS as FACT_GPU_MODELS
from primus_runner.hardware.found import Device, Devices
from primus_runner.hardware.placement import gpu_mask, numa_node_for_rank, set_affinity
from primus_runner.hardware.sysfs import list_dir, numa_cpus, parse_cpulist, parse_properties, read_text, to_int, which

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    pass

GPU_MODELS = FACT_GPU_MODELS  # registry shared_facts gpu_models
AMD_DEVICE_IDS = {0x74A1: "MI300X", 0x74A5: "MI325X"}
GFX_FAMILY_MODEL = {90500: "MI355X"}          # gfx950: MI350 series, tuned by the MI355X layer
GFX_NAMES = {90402: "gfx942", 90500: "gfx950", 90010: "gfx90a", 90008: "gfx908"}

# -- AMD ------------------------------------------------------------------------
def _pci_numa(root: str, pci: str) -> int:
    return to_int(read_text(os.path.join(root, "sys/bus/pci/devices", pci, "numa_node")))


def amd_gpus_kfd(root: str) -> list[tuple[Device, dict[str, str]]]:
    base = os.path.join(root, "sys/class/kfd/kfd/topology/nodes")
    found: list[tuple[Device, dict[str, str]]] = []
    for node in sorted((n for n in list_dir(base) if n.isdigit()), key=int):
        props = parse_properties(read_text(os.path.join(base, node, "properties")) or "")
        if to_int(props.get("simd_count"), 0) <= 0 or to_int(props.get("gfx_target_version"), 0) <= 0:
            continue
        location = to_int(props.get("location_id"), 0)
        domain = to_int(props.get("domain"), 0)
        pci = f"{domain:04x}:{location >> 8:02x}:{(location >> 3) & 0x1F:02x}.{location & 7}"
        gfx = to_int(props.get("gfx_target_version"), 0)
        found.append((Device("gpu", len(found), GFX_NAMES.get(gfx, f"gfx{gfx}"), pci,
                             _pci_numa(root, pci)), props))
    return found


def amd_gpus_drm(root: str) -> list[tuple[Device, dict[str, str]]]:
    base = os.path.join(root, "sys/class/drm")
    found: list[tuple[Device, dict[str, str]]] = []
    cards = sorted((c for c in list_dir(base) if re.fullmatch(r"card\d+", c)), key=lambda c: int(c[4:]))
    for card in cards:
        dev = os.path.join(base, card, "device")
        if (read_text(os.path.join(dev, "vendor")) or "").lower() != "0x1002":
            continue
        try:
            pci = os.path.basename(os.path.realpath(dev))
        except OSError:
            pci = None
        props = {"device_id": str(to_int(read_text(os.path.join(dev, "device")), 0)),
                 "product_name": read_text(os.path.join(dev, "product_name")) or ""}
        found.append((Device("gpu", len(found), card, pci,
                             to_int(read_text(os.path.join(dev, "numa_node")))), props))
    return found


def _model_from_text(text: str) -> str | None:
    match = re.search(r"MI\s?(\d{3})([A-Z]?)", text.upper())
    return f"MI{match.group(1)}{match.group(2)}" if match else None


def rocm_smi_model(env: Mapping[str, str]) -> str | None:
    """One ``rocm-smi --showproductname --json`` call; the first MI model it names."""
    exe = which("rocm-smi", env)
    if not exe:
        return None
    import json
    import subprocess
    try:
        proc = subprocess.run([exe, "--showproductname", "--json"], capture_output=True,
                              text=True, timeout=30, check=False)
        data = json.loads(proc.stdout or "{}")
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    for card in data.values() if isinstance(data, dict) else []:
        if isinstance(card, dict):
            for key in ("Card Series", "Card SKU", "Card Model", "Market Name"):
                model = _model_from_text(str(card.get(key, "")))
                if model:
                    return model
    return None


def amd_model(props: dict[str, str], env: Mapping[str, str], notes: list[str],
              smi_cache: dict[str, str | None] | None = None) -> str | None:
    model = AMD_DEVICE_IDS.get(to_int(props.get("device_id"), 0))
    if model:
        return model
    model = _model_from_text(props.get("product_name", ""))
    if model:
        return model
    gfx = to_int(props.get("gfx_target_version"), 0)
    if gfx in GFX_FAMILY_MODEL:
        return GFX_FAMILY_MODEL[gfx]
    cache = {} if smi_cache is None else smi_cache
    if "model" not in cache:          # at most one rocm-smi call per detection
        cache["model"] = rocm_smi_model(env)
    if cache["model"]:
        return cache["model"]
    if gfx == 90402:
        notes.append(f"gfx942 GPU with device id {to_int(props.get('device_id'), 0):#06x} not in "
                     "the table and rocm-smi did not name it; using the MI300X layer "
                     "(set PRIMUS_GPU_MODEL to choose)")
        return "MI300X"
    return None


# -- NVIDIA -----------------------------------------------------------------------


def nvidia_gpus(root: str, env: Mapping[str, str]) -> list[Device] | None:
    exe = which("nvidia-smi", env)
    if not exe:
        return None
    import subprocess
    try:
        proc = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    names = [m.group(1).strip() for m in re.finditer(r"^GPU \d+: (.+?)(?: \(UUID:.*)?$",
                                                      proc.stdout, re.M)]
    pci_base = os.path.join(root, "sys/bus/pci/devices")
    nv_pci = sorted(p for p in list_dir(pci_base)
                    if (read_text(os.path.join(pci_base, p, "vendor")) or "").lower() == "0x10de"
                    and (read_text(os.path.join(pci_base, p, "class")) or "").startswith(("0x0300", "0x0302")))
    out = []
    for i, name in enumerate(names):
        pci = nv_pci[i] if len(nv_pci) == len(names) else None
        out.append(Device("gpu", i, name, pci, _pci_numa(root, pci) if pci else -1))
    return out


# -- main entry ---------------------------------------------------------------------
def _override(env: Mapping[str, str], name: str) -> str | None:
    value = (env.get(name) or "").strip()
    return value or None


def _choice_problem(name: str, value: str, accepted: tuple[str, ...], fold: str) -> Problem | None:
    """(variable, value, message, fix) when ``value`` is none of ``accepted``."""
    word = value.strip().lower() if fold == "lower" else value.strip().upper()
    if word in accepted:
        return None
    hint = closest(word, list(accepted))
    return (name, value, f"is not accepted; accepted: {'|'.join(accepted)}"
            + (f" (did you mean '{hint}'?)" if hint else ""),
            f"export {name}={hint or accepted[0]}, or unset it to detect")


def accelerator_problem(value: str) -> Problem | None:
    """Rule accelerator_known: detection (and env check) refuse an unknown accelerator."""
    return _choice_problem("PRIMUS_ACCELERATOR", value, ACCELERATORS, "lower")


def gpu_model_problem(value: str) -> Problem | None:
    """Rule gpu_model_known: a GPU model without a layer is refused, not guessed."""
    return _choice_problem("PRIMUS_GPU_MODEL", value, GPU_MODELS, "upper")


def detect_devices(sysfs_root: str = "/", dev_root: str = "/",
                   env: Mapping[str, str] | None = None) -> Devices:
    from primus_runner.hardware import neuron as neuron_hw  # imports this module: not at its top

    env = os.environ if env is None else env
    notes: list[str] = []
    overrides: dict[str, str] = {}
    wanted = _override(env, "PRIMUS_ACCELERATOR")
    if wanted is not None:
        problem = accelerator_problem(wanted)
        if problem is not None:
            raise RuleRefusal("accelerator_known", problem)
        wanted = wanted.lower()
        if wanted != "auto":
            overrides["PRIMUS_ACCELERATOR"] = wanted
        else:
            wanted = None
    model_override = _override(env, "PRIMUS_GPU_MODEL")
    if model_override is not None:
        problem = gpu_model_problem(model_override)
        if problem is not None:
            raise RuleRefusal("gpu_model_known", problem)
        model_override = model_override.upper()
        overrides["PRIMUS_GPU_MODEL"] = model_override
    instance_override = _override(env, "PRIMUS_NEURON_INSTANCE")
    if instance_override is not None:
        neuron_hw.neuron_instance_facts(instance_override)      # validates
        overrides["PRIMUS_NEURON_INSTANCE"] = instance_override.lower()
    if wanted is None and model_override is not None:
        wanted = "rocm"                                  # a GPU model names the accelerator
    elif wanted is None and instance_override is not None:
        wanted = "neuron"

    cpus = numa_cpus(sysfs_root)
    detected_by: list[str] = []

    amd = [] if wanted in ("cuda", "neuron", "cpu") else amd_gpus_kfd(sysfs_root)
    if amd:
        detected_by.append("kfd topology")
    elif wanted not in ("cuda", "neuron", "cpu"):
        amd = amd_gpus_drm(sysfs_root)
        if amd:
            detected_by.append("drm sysfs")
    if (amd and wanted is None) or wanted == "rocm":
        smi: dict[str, str | None] = {}
        model = model_override or (amd_model(amd[0][1], env, notes, smi) if amd else None)
        kinds = {(p.get("device_id"), p.get("gfx_target_version")) for _, p in amd}
        if model_override is None and len(kinds) > 1:
            notes.append("GPUs of different models on one host; using the first one's model")
        if wanted == "rocm" and not amd:
            notes.append("PRIMUS_ACCELERATOR=rocm but no AMD GPU was found under "
                         f"{sysfs_root}; PRIMUS_GPU_COUNT is 0")
        found = Devices("rocm", model, [d for d, _ in amd], None, cpus, detected_by, overrides, notes)
        return _masked(found, env)

    instance = instance_override
    if instance is None:
        product = (read_text(os.path.join(sysfs_root, "sys/class/dmi/id/product_name")) or "").strip().lower()
        # The registry's tables only when the name looks like an instance type:
        # loading them costs ms of every launch on a host that is no Neuron one.
        family = neuron_hw.neuron_family(product) if "." in product else None
        if family is not None and family in neuron_hw.neuron_tables().get("families", {}):
            instance = product
            detected_by.append("dmi product_name")
    neuron = [] if wanted in ("rocm", "cuda", "cpu") else neuron_hw.neuron_devices(sysfs_root, dev_root)
    if neuron:
        detected_by.append("/dev/neuron*")
    if (neuron and wanted is None) or wanted == "neuron":
        if wanted == "neuron" and not neuron and instance is None:
            notes.append("PRIMUS_ACCELERATOR=neuron but no /dev/neuron* device and no instance "
                         "type; set PRIMUS_NEURON_INSTANCE")
        summary = neuron_hw.neuron_summary(sysfs_root, env, neuron, instance, notes)
        return Devices("neuron", None, neuron, summary, cpus, detected_by, overrides, notes)

    if wanted in (None, "cuda"):
        nvidia = nvidia_gpus(sysfs_root, env)
        if nvidia:
            detected_by.append("nvidia-smi -L")
            return _masked(Devices("cuda", None, nvidia, None, cpus, detected_by, overrides, notes), env)
        if wanted == "cuda":
            notes.append("PRIMUS_ACCELERATOR=cuda but nvidia-smi found no GPU")
            return Devices("cuda", None, [], None, cpus, detected_by, overrides, notes)
    return Devices("cpu", None, [], None, cpus, detected_by or ["fallback"], overrides, notes)


# -- GPU masks ------------------------------------------------------------------
def _masked(found: Devices, env: Mapping[str, str]) -> Devices:
    mask = gpu_mask(env, len(found.devices), found.accelerator)
    if mask.count != len(found.devices):
        found.visible_count = mask.count
    return found


def _table(found: Devices) -> str:
    lines = [f"accelerator: {found.accelerator} (detected by {', '.join(found.detected_by) or '-'})"]
    if found.gpu_model:
        lines.append(f"GPU model: {found.gpu_model}")
    if found.neuron:
        lines.append("neuron: " + ", ".join(f"{k}={v}" for k, v in found.neuron.items()))
    for d in found.devices:
        lines.append(f"  {d.kind} {d.index:<3} {d.name:<14} pci {d.pci or '-':<14} numa {d.numa_node}"
                     + (f" cores {d.cores}" if d.cores else ""))
    for node, cpus in found.numa_cpus.items():
        lines.append(f"  numa node {node}: cpus {cpus}")
    from primus_runner.shellfmt import report_table

    return report_table(lines, "override:", found.overrides, found.as_env())


def main(argv: list[str]) -> int:
    from primus_runner.shellfmt import print_report, report_notes, report_parser

    parser = report_parser(
        "devices", "Detect AMD GPUs (model, count), Neuron devices (instance, cores, LNC), "
                   "NVIDIA GPUs or CPU, and each device's NUMA node.", "sys/")
    parser.add_argument("--dev-root", default=os.environ.get("PRIMUS_DEV_ROOT") or "/",
                        help="root holding dev/ (default: $PRIMUS_DEV_ROOT or /)")
    parser.add_argument("--numa-for-rank", type=int, metavar="LOCAL_RANK", default=None,
                        help="print 'NODE CPULIST AFFINITY' for this local rank's device "
                             "(NODE -1 when unknown) instead of the report")
    parser.add_argument("--set-affinity-pid", type=int, metavar="PID", default=None,
                        help="with --numa-for-rank: also pin PID to the node's CPUs via psutil")
    args = parser.parse_args(argv)
    for name, path in (("--sysfs-root", args.sysfs_root), ("--dev-root", args.dev_root)):
        if not os.path.isdir(path):
            raise UsageError(f"{name} '{path}' is not a directory; accepted: a directory "
                             "(default /)")
    found = detect_devices(args.sysfs_root, args.dev_root, os.environ)
    report_notes("devices", found.notes)
    if args.numa_for_rank is not None:
        if args.numa_for_rank < 0:
            raise UsageError(f"--numa-for-rank {args.numa_for_rank}: accepted: a local rank >= 0")
        node = numa_node_for_rank(found, args.numa_for_rank, os.environ)
        cpus = found.numa_cpus.get(node, "") if node >= 0 else ""
        status = "skipped"
        if args.set_affinity_pid is not None and cpus:
            status = set_affinity(args.set_affinity_pid, parse_cpulist(cpus))
        print(f"{node} {cpus or '-'} {status}")
        return 0
    print_report(args.format, found.as_dict(), found.as_env(), lambda: _table(found))
    return 0
