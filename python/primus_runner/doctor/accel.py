"""Accelerator checks of the doctor: how many devices sysfs shows, what the vendor tool
reports, and devices already held by another process.

Vendor tools, each called once with fixed arguments (stubs in the tests assert them):
- ``amd-smi list --json`` (AMD SMI CLI: "list  List GPU information",
  https://rocm.docs.amd.com/projects/amdsmi/en/latest/amdsmi_cli_readme_link.html),
  else ``rocm-smi --showproductname --json`` (the call devices.py already makes);
- ``neuron-ls --json-output`` (Neuron LS user guide: "--json-output, -j: Output in
  JSON format", https://awsdocs-neuron.readthedocs-hosted.com/en/latest/tools/neuron-sys-tools/neuron-ls.html).
A tool that fails, or counts other than sysfs, fails the check; an absent tool is
said plainly (warn). Holders: hardware/holders.py (the launch's refusal reads it too).
Must not change any device state.
"""
from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping

from primus_runner.doctor.record import FAIL, PASS, WARN, Check
from primus_runner.hardware.sysfs import which

TOOLS = {"amd-smi": ["list", "--json"], "rocm-smi": ["--showproductname", "--json"],
         "neuron-ls": ["--json-output"]}




def count_reported(tool: str, text: str) -> int | None:
    """Devices in a vendor tool's JSON: a list of devices (amd-smi, neuron-ls) or
    a dict keyed ``card<N>`` (rocm-smi); None when the text is not that."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, list):
        return len(data)
    if isinstance(data, dict):
        if tool == "neuron-ls" and isinstance(data.get("neuron_devices"), list):
            return len(data["neuron_devices"])
        return sum(1 for k in data if str(k).startswith("card"))
    return None


def run_tool(tool: str, env: Mapping[str, str]) -> tuple[str | None, int | None, str]:
    """(path or None when absent, devices counted or None, error text)."""
    exe = which(tool, env)
    if exe is None:
        return None, None, ""
    try:
        proc = subprocess.run([exe, *TOOLS[tool]], capture_output=True, text=True, timeout=20,
                              check=False, env=dict(env))
    except (OSError, subprocess.SubprocessError) as exc:
        return exe, None, str(exc)
    if proc.returncode != 0:
        return exe, None, f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:200]}"
    count = count_reported(tool, proc.stdout)
    return exe, count, "" if count is not None else "output is not the JSON expected"


def accelerator_checks(root: str, dev_root: str, env: Mapping[str, str]) -> tuple[list[Check], dict[str, str]]:
    """(checks, facts for the fleet comparison: accelerator, model, device count)."""
    from primus_runner.errors import PrimusError
    from primus_runner.hardware.devices import detect_devices

    try:
        found = detect_devices(root, dev_root, env)
    except PrimusError as exc:
        return [Check("accelerators", FAIL, str(exc).splitlines()[0], "detectable devices",
                      "fix the override named above")], {}
    count = len(found.devices)
    facts = {"accelerator": found.accelerator, "devices": str(count)}
    if found.gpu_model:
        facts["model"] = found.gpu_model
    what = f"{found.accelerator}: {count} device(s)" + (f" ({found.gpu_model})" if found.gpu_model else "")
    if found.accelerator == "cpu":
        return [Check("accelerators", PASS, "none (CPU host: gloo on CPU)", "the devices the job needs"),
                Check("vendor tool", PASS, "not needed on a CPU host (amd-smi, rocm-smi, neuron-ls "
                      "not asked)", "amd-smi/rocm-smi on ROCm hosts, neuron-ls on Neuron hosts")], facts
    checks = [Check("accelerators", PASS if count else FAIL, what, ">= 1 device",
                    "" if count else "load the driver (amdgpu/neuron) or check the device nodes")]
    if found.accelerator == "cuda":      # devices.py found them with nvidia-smi -L: it answered
        checks.append(Check("vendor tool", PASS, f"nvidia-smi -L lists {count} GPU(s)",
                            "the vendor tool answers"))
        return checks, facts
    tools = ("neuron-ls",) if found.accelerator == "neuron" else ("amd-smi", "rocm-smi")
    for tool in tools:
        exe, reported, error = run_tool(tool, env)
        if exe is None:
            continue
        if reported is None:
            checks.append(Check("vendor tool", FAIL, f"{tool} {' '.join(TOOLS[tool])}: {error}",
                                "the tool answers", f"run '{tool} {' '.join(TOOLS[tool])}' by hand; "
                                "reload the driver or reset the device it names"))
        elif reported != count:
            checks.append(Check("vendor tool", FAIL, f"{tool} reports {reported} device(s), sysfs {count}",
                                "the same count", "a device is missing or hung: reset it or drain the node"))
        else:
            checks.append(Check("vendor tool", PASS, f"{tool} reports {reported} device(s)",
                                "the same count as sysfs"))
        facts["vendor tool"] = tool
        break
    else:
        names = " or ".join(tools)
        checks.append(Check("vendor tool", WARN, f"{names} not on PATH: device health not asked",
                            f"{names} on PATH", f"install {names} or add its directory to PATH"))
    return checks, facts


# -- devices held by another process -------------------------------------------------------
def holders_check(proc_root: str, dev_root: str) -> Check:
    from primus_runner.hardware.holders import device_holders

    held = device_holders(proc_root, dev_root)
    if not held:
        return Check("devices held", PASS, "no other process holds /dev/kfd, /dev/dri or /dev/neuron*",
                     "no holder")
    return Check("devices held", FAIL, "; ".join(h.describe() for h in held), "no holder (a leftover job "
                 "keeps GPU memory or Neuron cores: 'cores in use')",
                 f"end the leftover process(es): kill {' '.join(str(h.pid) for h in held)} (or drain the node)")
