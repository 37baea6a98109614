"""Every launch's cluster check compares torch's version and the CPU vendor too:
python/primus_runner/hardware/versions.py read on fake nodes."""
from __future__ import annotations

from pathlib import Path

from primus_runner.cluster import clustercheck
from primus_runner.hardware import versions as node_versions


def _node(tmp_path: Path, name: str, vendor: str, torch: str) -> tuple[str, dict[str, str]]:
    root = tmp_path / name
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "cpuinfo").write_text(f"processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: X\n")
    site = tmp_path / f"{name}-venv" / "lib" / "python3.11" / "site-packages" / "torch"
    site.mkdir(parents=True)
    (site / "version.py").write_text(f"__version__ = '{torch}'\nhip: Optional[str] = None\n")
    python = tmp_path / f"{name}-venv" / "bin" / "python"
    python.parent.mkdir()
    python.write_text("")
    return str(root), {"PRIMUS_WORKLOAD_PYTHON": str(python)}


def test_versions_name_torch_and_cpu_vendor_without_importing_torch(tmp_path: Path) -> None:
    root, env = _node(tmp_path, "a", "GenuineIntel", "2.5.1+rocm6.2")
    assert node_versions.versions(root, env) == {"CPU vendor": "GenuineIntel", "torch": "2.5.1+rocm6.2"}


def test_the_cluster_check_names_nodes_with_another_torch_or_cpu_vendor(tmp_path: Path) -> None:
    reports = []
    for i, (vendor, torch) in enumerate((("AuthenticAMD", "2.13.0"), ("AuthenticAMD", "2.13.0"),
                                         ("GenuineIntel", "2.5.1"))):
        root, env = _node(tmp_path, f"n{i}", vendor, torch)
        report = clustercheck.fingerprint(env, root, i)
        report["host"] = f"n{i}"
        reports.append(report)
    problems = clustercheck.compare(reports)
    assert any(p.startswith("CPU vendor version differs between nodes: 'AuthenticAMD' on nodes 0-1")
               and "'GenuineIntel' on node 2 (n2)" in p for p in problems), problems
    assert any(p.startswith("torch version differs between nodes: '2.13.0' on nodes 0-1") for p in problems)


def test_parsers() -> None:
    assert node_versions.parse_cpuinfo("CPU implementer\t: 0x41\n") == ("ARM", "unknown")
    assert node_versions.parse_torch_version("__version__ = '2.13.0+cpu'\ncuda: Optional[str] = '12.4'\n") == \
        {"torch": "2.13.0+cpu", "CUDA (torch)": "12.4"}
