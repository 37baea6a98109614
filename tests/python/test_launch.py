"""The launch helper protocol (`launch serve`): prepare records, then env check
of an environment handed over on stdin."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def serve(tmp_path: Path, stdin: bytes, extra_env: dict[str, str] | None = None) -> tuple[list[str], str]:
    (tmp_path / "sys").mkdir(exist_ok=True)
    (tmp_path / "dev").mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT / "python"),
           "PRIMUS_SYSFS_ROOT": str(tmp_path / "sys"), "PRIMUS_DEV_ROOT": str(tmp_path / "dev"),
           **(extra_env or {})}
    proc = subprocess.run([sys.executable, "-m", "primus_runner", "launch", "serve"], input=stdin,
                          env=env, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode().split("\0"), proc.stderr.decode()


def test_records_end_then_the_check_result(tmp_path: Path) -> None:
    fields, err = serve(tmp_path, b"check\0cpu\0MASTER_PORT=80\0NNODES=1\0\0")
    end = fields.index("end")
    assert fields[end:end + 3] == ["end", "", ""]
    assert "env" in fields[:end] and "cfg" in fields[:end]
    # No experiment config: the hooks' records are only their end marker.
    assert fields[end + 3:end + 6] == ["hooks", "", ""]
    assert fields[end + 6:end + 9] == ["rc", "2", ""]
    assert "MASTER_PORT='80'" in err


def test_a_clean_final_environment_passes(tmp_path: Path) -> None:
    fields, err = serve(tmp_path, b"check\0cpu\0MASTER_PORT=29500\0NNODES=1\0\0")
    end = fields.index("hooks")
    assert fields[end + 3:end + 5] == ["rc", "0"]
    assert "ERROR" not in err


def test_skip_and_a_vanished_launcher_end_the_helper_cleanly(tmp_path: Path) -> None:
    for stdin in (b"skip\0", b""):
        fields, _ = serve(tmp_path, stdin)
        end = fields.index("hooks")
        assert fields[end + 3:end + 5] == ["rc", "0"]


def test_the_experiment_config_is_read_after_end_before_the_hooks(tmp_path: Path) -> None:
    cfg = tmp_path / "exp.yaml"
    cfg.write_text("modules:\n  pre_trainer:\n    model: x\n")
    fields, _ = serve(tmp_path, b"skip\0", {"PRIMUS_EXPERIMENT_CONFIG": str(cfg)})
    end, hooks = fields.index("end"), fields.index("hooks")
    assert "PRIMUS_EXPERIMENT_NO_FRAMEWORK" not in fields[:end]
    late = fields[end + 3:hooks]
    assert late[:3] == ["env", "PRIMUS_EXPERIMENT_NO_FRAMEWORK", str(cfg)]


def test_values_are_data_in_the_handed_over_environment(tmp_path: Path) -> None:
    hostile = "a=b\n$(touch pwned) `x`; *"
    stdin = b"check\0cpu\0" + f"PRIMUS_T_X={hostile}".encode() + b"\0\0"
    fields, _ = serve(tmp_path, stdin)
    assert "rc" in fields
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()
    assert os.path.exists(tmp_path / "sys")


def test_the_launch_helper_imports_nothing_heavy(tmp_path: Path) -> None:
    # The helper starts on every launch (docs/run-on-one-node.md "Launch overhead"): typing,
    # dataclasses/inspect, yaml, argparse and pathlib each cost milliseconds.
    # (An experiment config is read after the `end` record, in parallel with
    # the shell's layers: not here.)
    (tmp_path / "sys").mkdir()
    (tmp_path / "dev").mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT / "python"),
           "PRIMUS_SYSFS_ROOT": str(tmp_path / "sys"), "PRIMUS_DEV_ROOT": str(tmp_path / "dev")}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "primus_runner", "launch",
                           "prepare"], env=env, capture_output=True, timeout=60, text=True)
    assert proc.returncode == 0, proc.stderr
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "primus_runner.launch.detect" in imported
    heavy = {"typing", "dataclasses", "inspect", "yaml", "argparse", "pathlib"} & imported
    assert heavy == set()
