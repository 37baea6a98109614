"""``primus-cli doctor`` on this node: real host checks, fixtures for the failing cases,
stubs only for the vendor tools that cannot exist here (they assert their arguments)."""
from __future__ import annotations

import getpass
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from primus_runner.doctor import accel, system
from primus_runner.doctor.cli import REPORT_PREFIX, read_reports
from primus_runner.hardware import versions as node_versions

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "sysfs"
CLI = ROOT / "runner" / "primus-cli"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NCCL_", "SLURM_", "PRIMUS_", "MASTER_", "GLOO_"))}
    env.update(extra)
    return env


def _doctor(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(CLI), "doctor", *args], capture_output=True, text=True,
                          env=_env(**extra), timeout=60, check=False)


def _stub(tmp_path: Path, name: str, output: str) -> Path:
    """A stand-in for a vendor tool that cannot exist here; it records its arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / name
    script.write_text("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\ncat <<'EOF'\n" + output + "\nEOF\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_cpu_host_is_healthy_with_at_least_8_checks(tmp_path: Path) -> None:
    out = tmp_path / "doctor.json"
    proc = _doctor("--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    names = [c["name"] for c in report["checks"]]
    assert len(names) >= 8
    for wanted in ("launch verdict", "accelerators", "versions", "cpu", "network interfaces",
                   "RDMA ports", "/dev/shm", "ulimit -l", "ulimit -n", "workspace space",
                   "rendezvous port", "clock offset", "devices held"):
        assert wanted in names
    assert not [c for c in report["checks"] if c["status"] == "fail"]
    assert all(set(c) == {"name", "status", "value", "wanted", "fix"} for c in report["checks"])
    assert report["facts"]["cpu vendor"] == node_versions.cpu_facts("/")[0]
    assert report["facts"]["version torch"].startswith("2.")
    # Outside a multi-node job it says it checks this node only, and how to check every node.
    assert "phase 1/1: node checks of this node only (not in a multi-node job); every node of an " \
        "allocation: primus-cli slurm doctor" in proc.stderr
    assert f"{len(names)} checks, 0 failed" in proc.stdout and "healthy" in proc.stdout


def test_socket_ifname_naming_no_interface_fails_naming_the_variable_and_fix() -> None:
    proc = _doctor(NCCL_SOCKET_IFNAME="nosuch0")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    fails = [line for line in proc.stdout.splitlines() if line.startswith("fail")]
    assert any("launch verdict" in f and "NCCL_SOCKET_IFNAME='nosuch0'" in f for f in fails)
    assert any("network interfaces" in f for f in fails)
    assert "fix: NCCL_SOCKET_IFNAME: export NCCL_SOCKET_IFNAME=" in proc.stdout
    assert "unfit" in proc.stdout


def test_ib_hca_naming_a_down_port_fails_naming_the_variable_and_fix(tmp_path: Path) -> None:
    root = str(FIX / "ib-node")
    smi = _stub(tmp_path, "amd-smi", json.dumps([{"gpu": i} for i in range(8)]))
    out = tmp_path / "r.json"
    proc = _doctor("--json", str(out), PRIMUS_SYSFS_ROOT=root, PRIMUS_DEV_ROOT=root,
                   NCCL_IB_HCA="mlx5_9", PATH=f"{smi.parent}:/usr/bin:/bin")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    rdma = next(c for c in json.loads(out.read_text())["checks"] if c["name"] == "RDMA ports")
    assert rdma["status"] == "fail"
    assert ("NCCL_IB_HCA='mlx5_9' names port(s) that are not ACTIVE: mlx5_9:1 (DOWN, Disabled)"
            in rdma["value"])
    assert rdma["fix"].startswith("export NCCL_IB_HCA=mlx5_0:1,") and "mlx5_9" not in rdma["fix"]
    # The same verdict as the launch's: rule nic_values_on_host fails the launch verdict too.
    verdict = next(c for c in json.loads(out.read_text())["checks"] if c["name"] == "launch verdict")
    assert verdict["status"] == "fail" and "mlx5_9:1 (DOWN, Disabled)" in verdict["value"]
    # The vendor tool was asked with the documented arguments, and agreed with sysfs.
    assert Path(f"{smi}.args").read_text() == "list\n--json\n"
    tool = next(c for c in json.loads(out.read_text())["checks"] if c["name"] == "vendor tool")
    assert tool["status"] == "pass" and "amd-smi reports 8" in tool["value"]


def test_vendor_tool_counting_fewer_devices_fails(tmp_path: Path) -> None:
    root = str(FIX / "mi300x-2gpu")
    smi = _stub(tmp_path, "rocm-smi", json.dumps({"card0": {"Card Series": "MI300X"}}))
    checks, facts = accel.accelerator_checks(root, root, {"PATH": f"{smi.parent}:/usr/bin:/bin"})
    tool = next(c for c in checks if c.name == "vendor tool")
    assert tool.status == "fail" and tool.value == "rocm-smi reports 1 device(s), sysfs 2"
    assert Path(f"{smi}.args").read_text() == "--showproductname\n--json\n"
    assert facts["devices"] == "2"


def test_absent_vendor_tool_is_said_plainly() -> None:
    root = str(FIX / "trn1.2xlarge")
    checks, facts = accel.accelerator_checks(root, root, {"PATH": "/nonexistent"})
    tool = next(c for c in checks if c.name == "vendor tool")
    assert tool.status == "warn" and tool.value == "neuron-ls not on PATH: device health not asked"
    assert facts["accelerator"] == "neuron"


def test_neuron_ls_is_asked_for_json(tmp_path: Path) -> None:
    root = str(FIX / "trn1.2xlarge")
    tool = _stub(tmp_path, "neuron-ls", json.dumps([{"neuron_device": 0, "nc_count": 2}]))
    checks, _ = accel.accelerator_checks(root, root, {"PATH": f"{tool.parent}:/usr/bin:/bin"})
    assert Path(f"{tool}.args").read_text() == "--json-output\n"
    assert next(c for c in checks if c.name == "vendor tool").status == "pass"


def test_devices_held_by_another_process_are_named(tmp_path: Path) -> None:
    fd = tmp_path / "proc" / "4242" / "fd"
    fd.mkdir(parents=True)
    (fd / "3").symlink_to("/dev/kfd")
    (fd / "4").symlink_to(str(tmp_path / "dev" / "neuron0"))          # under PRIMUS_DEV_ROOT
    (fd / "5").symlink_to("/tmp/other")
    (tmp_path / "proc" / "4242" / "cmdline").write_bytes(b"python\0old_train.py\0")
    check = accel.holders_check(str(tmp_path), str(tmp_path))
    assert check.status == "fail"
    assert check.value == f"pid 4242 (user {getpass.getuser()}: python old_train.py) holds /dev/kfd, /dev/neuron0"
    assert check.fix.startswith("end the leftover process(es): kill 4242")
    assert accel.holders_check(str(FIX / "no-accel"), str(FIX / "no-accel")).status == "pass"


def test_cpuinfo_and_torch_version_parsers() -> None:
    assert node_versions.parse_cpuinfo("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\n") == \
        ("GenuineIntel", "Xeon")
    assert node_versions.parse_cpuinfo("CPU implementer\t: 0x41\n") == ("ARM", "unknown")
    text = "__version__ = '2.5.1+rocm6.2'\ncuda: Optional[str] = None\nhip: Optional[str] = '6.2.41133'\n"
    assert node_versions.parse_torch_version(text) == {"torch": "2.5.1+rocm6.2", "HIP (torch)": "6.2.41133"}


def test_report_line_is_what_the_fleet_reads(tmp_path: Path) -> None:
    proc = _doctor("--report-line", "--json", str(tmp_path / "node.json"), HF_TOKEN="hf_not_shown_1234",
                   NCCL_ALGO="Ring")
    assert "hf_not_shown_1234" not in proc.stdout + proc.stderr
    assert json.loads((tmp_path / "node.json").read_text())["uniform"]["NCCL_ALGO"] == "Ring"
    assert "hf_not_shown_1234" not in (tmp_path / "node.json").read_text()
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith(REPORT_PREFIX)]
    assert lines and all(len(line) < 1000 for line in lines)
    saved = tmp_path / "out"
    other = [line.replace(".", "x.", 1) for line in lines]               # a second node's id
    # Interleaved with srun noise and another node's lines; a cut-off report is ignored.
    saved.write_text("\n".join(["srun: some noise", *[x for pair in zip(lines, other, strict=True)
                                                       for x in pair], lines[0].replace(".", "y.", 1)]) + "\n")
    reports = read_reports(str(saved))
    assert len(reports) == 2 and reports[0]["checks"] == reports[1]["checks"]
    fleet = subprocess.run([sys.executable, "-m", "primus_runner", "doctor", "fleet", str(saved),
                            "--expect", "2"], capture_output=True, text=True, env=_env(
                                PYTHONPATH=str(ROOT / "python")), timeout=60, check=False)
    assert fleet.returncode == 0, fleet.stdout + fleet.stderr
    assert "2 node(s), 0 failed - fleet healthy" in fleet.stdout
    assert "--exclude=" not in fleet.stdout
    assert "phase 2/2: comparing the nodes" in fleet.stderr            # numbered once per run
    assert "one node checked" not in fleet.stdout
    # One report (srun outside an allocation with no -N ran on one node): said, with the way to all.
    saved.write_text("\n".join(lines) + "\n")
    fleet = subprocess.run([sys.executable, "-m", "primus_runner", "doctor", "fleet", str(saved),
                            "--phases", "3"], capture_output=True, text=True, env=_env(
                                PYTHONPATH=str(ROOT / "python")), timeout=60, check=False)
    assert "phase 3/3: comparing the nodes" in fleet.stderr
    assert "no other node to compare" in fleet.stdout and "primus-cli slurm doctor -N N" in fleet.stdout


def test_bad_ratio_is_a_usage_error(tmp_path: Path) -> None:
    saved = tmp_path / "none"
    saved.write_text("")
    proc = subprocess.run([sys.executable, "-m", "primus_runner", "doctor", "fleet", str(saved),
                           "--ratio", "1.5"], capture_output=True, text=True,
                          env=_env(PYTHONPATH=str(ROOT / "python")), timeout=60, check=False)
    assert proc.returncode == 2
    assert "--ratio 1.5 is not accepted; accepted: 0 < R <= 1" in proc.stderr


def test_a_port_in_use_on_node_0_fails_and_other_nodes_leave_it() -> None:
    import socket

    held = socket.socket()
    held.bind(("", 0))
    held.listen(1)
    port = held.getsockname()[1]
    try:
        busy = system.port_check(port, 0)
        assert busy.status == "fail" and f"MASTER_PORT={port}" in busy.value
        assert busy.fix.startswith("export MASTER_PORT=")
        assert system.port_check(port, 2).status == "pass"
    finally:
        held.close()
    assert system.port_check(port, 0).status == "pass"


def test_cuda_gpus_listed_by_nvidia_smi_count_as_the_vendor_tool_answering(tmp_path: Path) -> None:
    smi = _stub(tmp_path, "nvidia-smi", "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)")
    root = str(FIX / "no-accel")
    checks, facts = accel.accelerator_checks(root, root, {"PATH": f"{smi.parent}:/usr/bin:/bin"})
    assert Path(f"{smi}.args").read_text() == "-L\n"
    assert facts == {"accelerator": "cuda", "devices": "1"}
    assert [(c.name, c.status) for c in checks] == [("accelerators", "pass"), ("vendor tool", "pass")]


def test_one_node_without_a_port_passes_the_port_check_a_launch_picks_one() -> None:
    import socket

    held = socket.socket()
    held.bind(("", 0))
    held.listen(1)
    port = held.getsockname()[1]
    try:
        picked = system.port_check(port, 0, picked=True)
        assert picked.status == "pass" and "a launch picks a free port" in picked.value
    finally:
        held.close()
    from primus_runner.doctor.node import picks_free_port

    assert picks_free_port({}) is True
    assert picks_free_port({"MASTER_PORT": "29500"}) is False
    assert picks_free_port({"NNODES": "2", "MASTER_ADDR": "10.0.0.1"}) is False
