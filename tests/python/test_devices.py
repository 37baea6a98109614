"""Accelerator detection on fake machine trees; expected values written by hand
from the AWS Neuron instance facts and the fixtures' design."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner.errors import UsageError
from primus_runner.hardware.devices import detect_devices, parse_cpulist
from primus_runner.hardware.neuron import neuron_instance_facts
from primus_runner.hardware.placement import numa_node_for_rank

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "sysfs"
EMPTY_PATH = {"PATH": "/nonexistent"}     # no rocm-smi / nvidia-smi


def _detect(machine: str, **env: str):
    return detect_devices(str(FIX / machine), str(FIX / machine), {**EMPTY_PATH, **env})


EXPECTED_ENV = {
    "mi300x-roce": {"PRIMUS_ACCELERATOR": "rocm", "PRIMUS_GPU_MODEL": "MI300X",
                    "PRIMUS_GPU_COUNT": "8"},
    "ib-node": {"PRIMUS_ACCELERATOR": "rocm", "PRIMUS_GPU_MODEL": "MI325X",
                "PRIMUS_GPU_COUNT": "8"},
    "trn1.32xlarge": {"PRIMUS_ACCELERATOR": "neuron", "PRIMUS_NEURON_INSTANCE": "trn1.32xlarge",
                      "PRIMUS_NEURON_DEVICES": "16", "PRIMUS_NEURON_CORES_PER_DEVICE": "2",
                      "PRIMUS_NEURON_DEFAULT_LNC": "1", "PRIMUS_NEURON_LOGICAL_CORES": "32",
                      "PRIMUS_NEURON_EFA_DEVICES": "8"},
    # AWS: EFA is not available on the smaller Trn1 sizes.
    "trn1.2xlarge": {"PRIMUS_ACCELERATOR": "neuron", "PRIMUS_NEURON_INSTANCE": "trn1.2xlarge",
                     "PRIMUS_NEURON_DEVICES": "1", "PRIMUS_NEURON_CORES_PER_DEVICE": "2",
                     "PRIMUS_NEURON_DEFAULT_LNC": "1", "PRIMUS_NEURON_LOGICAL_CORES": "2",
                     "PRIMUS_NEURON_EFA_DEVICES": "0"},
    "trn2.48xlarge": {"PRIMUS_ACCELERATOR": "neuron", "PRIMUS_NEURON_INSTANCE": "trn2.48xlarge",
                      "PRIMUS_NEURON_DEVICES": "16", "PRIMUS_NEURON_CORES_PER_DEVICE": "8",
                      "PRIMUS_NEURON_DEFAULT_LNC": "2", "PRIMUS_NEURON_LOGICAL_CORES": "64",
                      "PRIMUS_NEURON_EFA_DEVICES": "16"},
    "inf2": {"PRIMUS_ACCELERATOR": "neuron", "PRIMUS_NEURON_INSTANCE": "inf2.24xlarge",
             "PRIMUS_NEURON_DEVICES": "6", "PRIMUS_NEURON_CORES_PER_DEVICE": "2",
             "PRIMUS_NEURON_DEFAULT_LNC": "1", "PRIMUS_NEURON_LOGICAL_CORES": "12",
             "PRIMUS_NEURON_EFA_DEVICES": "0"},
    "no-accel": {"PRIMUS_ACCELERATOR": "cpu"},
}


@pytest.mark.parametrize("machine", sorted(EXPECTED_ENV))
def test_every_fixture_gives_the_expected_env(machine: str) -> None:
    assert _detect(machine).as_env() == EXPECTED_ENV[machine]


def test_mi300x_gpus_with_pci_address_and_numa_node() -> None:
    found = _detect("mi300x-roce")
    assert [(d.pci, d.numa_node) for d in found.devices] == [
        ("0000:0c:00.0", 0), ("0000:22:00.0", 0), ("0000:38:00.0", 0), ("0000:5c:00.0", 0),
        ("0000:9f:00.0", 1), ("0000:af:00.0", 1), ("0000:bf:00.0", 1), ("0000:df:00.0", 1)]
    assert {d.name for d in found.devices} == {"gfx942"}
    assert found.numa_cpus == {0: "0-47,96-143", 1: "48-95,144-191"}


def test_neuron_devices_numa_nodes() -> None:
    found = _detect("trn1.32xlarge")
    assert [d.numa_node for d in found.devices] == [0] * 8 + [1] * 8
    assert [d.cores for d in found.devices] == [2] * 16


@pytest.mark.parametrize("itype, devices, cores, lnc, logical", [
    ("trn1.2xlarge", 1, 2, 1, 2),
    ("trn1.32xlarge", 16, 2, 1, 32),
    ("trn1n.32xlarge", 16, 2, 1, 32),
    ("trn2.48xlarge", 16, 8, 2, 64),
    ("trn2.3xlarge", 1, 8, 2, 4),
    ("inf2.xlarge", 1, 2, 1, 2),
    ("inf2.48xlarge", 12, 2, 1, 24),
    ("TRN2U.48XLARGE", 16, 8, 2, 64),
])
def test_neuron_instance_facts(itype, devices, cores, lnc, logical) -> None:
    facts = neuron_instance_facts(itype)
    assert (facts["devices"], facts["cores_per_device"], facts["default_lnc"],
            facts["logical_cores"]) == (devices, cores, lnc, logical)


def test_neuron_facts_come_from_the_registry_tables() -> None:
    """One place for hardware facts: devices.py reads the registry's neuron tables."""
    from primus_runner.env import registry
    from primus_runner.hardware import neuron as neuron_hw

    tables = registry.load().neuron
    assert set(neuron_hw.neuron_instances()) == set(tables["devices_per_instance"])
    for itype, (count, cores, lnc) in neuron_hw.neuron_instances().items():
        family = tables["families"][neuron_hw.neuron_family(itype)]
        assert (count, cores, lnc) == (tables["devices_per_instance"][itype],
                                       family["cores_per_device"], family["default_lnc"])
    # Inf1 (NeuronCore-v1) is in neither: the runtime reference covers Inf2/Trn1/Trn2/Trn3.
    assert not any(name.startswith("inf1") for name in neuron_hw.neuron_instances())
    with pytest.raises(UsageError):
        neuron_instance_facts("inf1.24xlarge")


def test_efa_devices_need_the_efa_driver(tmp_path) -> None:
    from primus_runner.hardware.neuron import efa_devices

    assert efa_devices(str(FIX / "trn1.32xlarge")) == sorted(
        f"rdmap{16 + 16 * k}s27" for k in range(8))
    assert efa_devices(str(FIX / "inf2")) == []
    assert efa_devices(str(FIX / "mi300x-roce")) == []     # mlx5/bnxt HCAs are not EFA
    dev = tmp_path / "sys/class/infiniband/mlx5_0/device"
    dev.mkdir(parents=True)
    (dev / "driver").symlink_to("../../../../bus/pci/drivers/mlx5_core")
    assert efa_devices(str(tmp_path)) == []


def test_unknown_instance_type_names_the_closest() -> None:
    with pytest.raises(UsageError, match=r"(?i)did you mean 'trn1\.32xlarge'"):
        neuron_instance_facts("trn1.32xlarg")
    trn3 = neuron_instance_facts("trn3.48xlarge")      # family known, sizes not tabled
    assert (trn3["cores_per_device"], trn3["default_lnc"], trn3["devices"]) == (8, 2, None)


def test_overrides_win_over_detection() -> None:
    assert _detect("mi300x-roce", PRIMUS_GPU_MODEL="mi355x").as_env()["PRIMUS_GPU_MODEL"] == "MI355X"
    assert _detect("mi300x-roce", PRIMUS_ACCELERATOR="cpu").as_env() == {"PRIMUS_ACCELERATOR": "cpu"}
    as_trn2 = _detect("no-accel", PRIMUS_NEURON_INSTANCE="trn2.48xlarge").as_env()
    # Implies neuron, facts from the table; no device here, so no EFA count either.
    assert as_trn2 == {k: v for k, v in EXPECTED_ENV["trn2.48xlarge"].items()
                       if k != "PRIMUS_NEURON_EFA_DEVICES"}
    lnc1 = _detect("trn2.48xlarge", NEURON_LOGICAL_NC_CONFIG="1").as_env()
    assert (lnc1["PRIMUS_NEURON_DEFAULT_LNC"], lnc1["PRIMUS_NEURON_LOGICAL_CORES"]) == ("2", "128")
    bad_lnc = _detect("trn2.48xlarge", NEURON_LOGICAL_NC_CONFIG="3")
    assert bad_lnc.as_env()["PRIMUS_NEURON_LOGICAL_CORES"] == "64"
    assert any("NEURON_LOGICAL_NC_CONFIG=3" in n for n in bad_lnc.notes)
    with pytest.raises(UsageError, match="PRIMUS_ACCELERATOR='gpu'"):
        _detect("no-accel", PRIMUS_ACCELERATOR="gpu")
    with pytest.raises(UsageError, match=r"(?i)did you mean 'MI300X'"):
        _detect("no-accel", PRIMUS_GPU_MODEL="MI300")
    assert _detect("trn1.32xlarge", PRIMUS_ACCELERATOR="auto").as_env() == EXPECTED_ENV["trn1.32xlarge"]


def test_visible_devices_subset_is_reported() -> None:
    found = detect_devices(str(FIX / "trn1.32xlarge"), str(FIX / "inf2"), EMPTY_PATH)
    # The inf2 tree exposes 6 /dev/neuron* nodes: a container given 6 of the 16 devices.
    assert found.as_env()["PRIMUS_NEURON_DEVICES"] == "6"
    assert found.as_env()["PRIMUS_NEURON_LOGICAL_CORES"] == "12"
    assert any("16 Neuron devices but 6 are visible" in n for n in found.notes)


@pytest.mark.parametrize("machine, rank, env, node", [
    ("mi300x-roce", 0, {}, 0),
    ("mi300x-roce", 3, {}, 0),
    ("mi300x-roce", 4, {}, 1),
    ("mi300x-roce", 7, {}, 1),
    ("mi300x-roce", 0, {"HIP_VISIBLE_DEVICES": "6,1"}, 1),
    ("mi300x-roce", 1, {"HIP_VISIBLE_DEVICES": "6,1"}, 0),
    ("mi300x-roce", 8, {}, -1),
    ("trn2.48xlarge", 31, {}, 0),      # 4 logical cores per device: device 7
    ("trn2.48xlarge", 32, {}, 1),      # device 8
    ("trn1.32xlarge", 15, {}, 0),      # 2 per device: device 7
    ("trn1.32xlarge", 16, {}, 1),
    ("no-accel", 5, {}, 0),
])
def test_numa_node_for_rank(machine, rank, env, node) -> None:
    found = _detect(machine)
    assert numa_node_for_rank(found, rank, env) == node


def test_parse_cpulist() -> None:
    assert parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []


def _stub(tmp_path: Path, name: str, output: str) -> Path:
    """A stand-in for a vendor tool that cannot exist here; it records its arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / name
    script.write_text("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\ncat <<'EOF'\n"
                      + output + "\nEOF\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_rocm_smi_names_an_unknown_gfx942_device(tmp_path: Path) -> None:
    root = tmp_path / "root"
    props = root / "sys/class/kfd/kfd/topology/nodes/1/properties"
    props.parent.mkdir(parents=True)
    props.write_text("simd_count 1216\ngfx_target_version 90402\nvendor_id 4098\n"
                     "device_id 29858\nlocation_id 3072\ndomain 0\n")
    smi = _stub(tmp_path, "rocm-smi", json.dumps(
        {"card0": {"Card Series": "AMD Instinct MI325X OAM", "Card Model": "0x74a2"}}))
    found = detect_devices(str(root), str(root), {"PATH": str(smi.parent)})
    assert found.as_env() == {"PRIMUS_ACCELERATOR": "rocm", "PRIMUS_GPU_MODEL": "MI325X",
                              "PRIMUS_GPU_COUNT": "1"}
    assert Path(f"{smi}.args").read_text() == "--showproductname\n--json\n"
    assert found.devices[0].pci == "0000:0c:00.0"
    # Without rocm-smi the MI300X layer is assumed, and said so.
    plain = detect_devices(str(root), str(root), EMPTY_PATH)
    assert plain.gpu_model == "MI300X"
    assert any("0x74a2" in n for n in plain.notes)


def test_rocm_smi_is_not_called_when_sysfs_knows_the_model(tmp_path: Path) -> None:
    smi = _stub(tmp_path, "rocm-smi", "{}")
    detect_devices(str(FIX / "mi300x-roce"), str(FIX / "mi300x-roce"), {"PATH": str(smi.parent)})
    assert not Path(f"{smi}.args").exists()


def test_nvidia_smi_lists_gpus(tmp_path: Path) -> None:
    smi = _stub(tmp_path, "nvidia-smi",
                "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)\nGPU 1: NVIDIA H100 80GB HBM3 "
                "(UUID: GPU-bbbb)")
    found = detect_devices(str(FIX / "no-accel"), str(FIX / "no-accel"), {"PATH": str(smi.parent)})
    assert found.as_env() == {"PRIMUS_ACCELERATOR": "cuda", "PRIMUS_GPU_COUNT": "2"}
    assert [d.name for d in found.devices] == ["NVIDIA H100 80GB HBM3"] * 2
    assert Path(f"{smi}.args").read_text() == "-L\n"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMUS_", "NEURON_"))}
    base.update(env or {}, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "primus_runner", "devices", *args],
                          capture_output=True, text=True, env=base)


def test_cli_on_fixtures() -> None:
    trn2 = str(FIX / "trn2.48xlarge")
    shell = _cli("--sysfs-root", trn2, "--dev-root", trn2, "--format", "shell")
    assert shell.stdout == ("export PRIMUS_ACCELERATOR=neuron\nexport PRIMUS_NEURON_INSTANCE="
                            "trn2.48xlarge\nexport PRIMUS_NEURON_DEVICES=16\n"
                            "export PRIMUS_NEURON_CORES_PER_DEVICE=8\n"
                            "export PRIMUS_NEURON_DEFAULT_LNC=2\n"
                            "export PRIMUS_NEURON_LOGICAL_CORES=64\n"
                            "export PRIMUS_NEURON_EFA_DEVICES=16\n")
    via_env = _cli("--numa-for-rank", "5", env={"PRIMUS_SYSFS_ROOT": str(FIX / "mi300x-roce")})
    assert via_env.stdout == "1 48-95,144-191 skipped\n"
    data = json.loads(_cli("--sysfs-root", str(FIX / "mi300x-roce"), "--format", "json").stdout)
    assert data["env"]["PRIMUS_GPU_MODEL"] == "MI300X" and data["devices"][7]["numa_node"] == 1
    bad = _cli(env={"PRIMUS_ACCELERATOR": "tpu"})
    assert bad.returncode == 2 and "PRIMUS_ACCELERATOR='tpu'" in bad.stderr


def test_runs_for_real_on_this_machine() -> None:
    real = _cli("--format", "json")
    assert real.returncode == 0, real.stderr
    assert json.loads(real.stdout)["env"]["PRIMUS_ACCELERATOR"] in ("rocm", "cuda", "neuron", "cpu")
    child = subprocess.Popen(["sleep", "30"])
    try:
        pinned = _cli("--numa-for-rank", "0", "--set-affinity-pid", str(child.pid))
        node, cpus, status = pinned.stdout.split()
        if int(node) < 0:                          # a host without NUMA information
            assert (cpus, status) == ("-", "skipped")
        else:
            assert status == "set"
            assert os.sched_getaffinity(child.pid) == set(parse_cpulist(cpus)) & os.sched_getaffinity(0)
    finally:
        child.kill()
        child.wait()


# -- GPU masks ---------------------------------------------------------------
@pytest.mark.parametrize("env, count", [
    ({"ROCR_VISIBLE_DEVICES": "4,5,6,7"}, "4"),
    ({"ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "0,1"}, "2"),
    ({"HIP_VISIBLE_DEVICES": "0,1,2"}, "3"),
    ({"CUDA_VISIBLE_DEVICES": "3"}, "1"),
    ({"ROCR_VISIBLE_DEVICES": "GPU-4b2c1a9f,GPU-8d3e6f7a"}, "2"),
    ({}, "8"),
])
def test_gpu_count_is_taken_after_the_masks(env: dict[str, str], count: str) -> None:
    found = detect_devices(str(FIX / "mi300x-roce"), "/", {**EMPTY_PATH, **env})
    assert found.as_env()["PRIMUS_GPU_COUNT"] == count


def test_numa_node_follows_rocr_then_hip() -> None:
    found = detect_devices(str(FIX / "mi300x-roce"), "/", EMPTY_PATH)
    # GPUs 0-3 sit on NUMA node 0, 4-7 on node 1
    assert numa_node_for_rank(found, 0, {"ROCR_VISIBLE_DEVICES": "4,5,6,7"}) == 1
    assert numa_node_for_rank(found, 0, {"ROCR_VISIBLE_DEVICES": "2,5", "HIP_VISIBLE_DEVICES": "1"}) == 1


def test_hip_beyond_the_rocr_list_is_a_problem_naming_both() -> None:
    from primus_runner.hardware.placement import gpu_mask

    mask = gpu_mask({"ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}, 8)
    assert mask.count == 4 and mask.visible == [4, 5, 6, 7]
    assert [(name, fix) for name, _, fix in mask.problems] == [
        ("HIP_VISIBLE_DEVICES", "unset HIP_VISIBLE_DEVICES (ROCR_VISIBLE_DEVICES already chooses "
                                "the GPUs), or list indices 0-3")]
