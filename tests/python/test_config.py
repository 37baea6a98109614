"""Config loading: precedence, source tracking, substitution and errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from primus_runner.config import files as cfgmod
from primus_runner.config.commands import config_records
from primus_runner.errors import MissingError, UsageError
from primus_runner.shellfmt import nul_records


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture()
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "root"
    (root / "runner").mkdir(parents=True)
    write(root / "runner" / ".primus.yaml",
          "direct:\n  nnodes: 1\n  master_port: 1234\n  env: []\n  master_addr: localhost\n"
          "container:\n  options:\n    env: [A, B]\n")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PRIMUS_ROOT", str(root))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PRIMUS_NO_USER_CONFIG", raising=False)
    return tmp_path


def test_precedence_explicit_over_user_over_system(isolated: Path) -> None:
    write(isolated / "home" / ".primus.yaml", "direct:\n  nnodes: 3\n  master_port: 2000\n")
    exp = write(isolated / "exp.yaml", "direct:\n  nnodes: 5\n")
    cfg = cfgmod.load(exp)
    assert cfg.get("direct.nnodes") == 5
    assert cfg.get("direct.master_port") == 2000
    assert cfg.get("direct.master_addr") == "localhost"
    assert cfg.sources["direct.nnodes"] == exp
    assert cfg.sources["direct.master_port"] == str(isolated / "home" / ".primus.yaml")
    assert cfg.sources["direct.master_addr"].endswith("runner/.primus.yaml")


def test_a_later_list_replaces_the_earlier_one(isolated: Path) -> None:
    exp = write(isolated / "exp.yaml", "container:\n  options:\n    env: [C]\n")
    assert cfgmod.load(exp).get("container.options.env") == ["C"]


def test_unknown_key_warns_with_closest(isolated: Path) -> None:
    exp = write(isolated / "exp.yaml", "direct:\n  master_prot: 99\n")
    warnings = cfgmod.load(exp).warnings
    assert len(warnings) == 1
    assert "direct.master_prot" in warnings[0] and "direct.master_port" in warnings[0]


def test_malformed_yaml_names_file_and_line(isolated: Path) -> None:
    bad = write(isolated / "bad.yaml", "direct:\n  nnodes: 2\n   master_port: 3\n")
    with pytest.raises(UsageError, match=r"bad\.yaml:3"):
        cfgmod.load(bad)


def test_top_level_must_be_a_mapping(isolated: Path) -> None:
    bad = write(isolated / "list.yaml", "- a\n- b\n")
    with pytest.raises(UsageError, match="mapping"):
        cfgmod.load(bad)


def test_missing_explicit_config_is_exit_1(isolated: Path) -> None:
    with pytest.raises(MissingError) as info:
        cfgmod.load(str(isolated / "nope.yaml"))
    assert info.value.exit_code == 1


def test_render_required_and_default() -> None:
    text = "a: ${A}\nb: ${B:dflt}\nc: ${C:}\nd: ${EMPTY:not-used}\n"
    out = cfgmod.render_text(text, {"A": "x y", "EMPTY": ""}, "f.yaml")
    assert out == "a: x y\nb: dflt\nc: \nd: \n"


def test_render_missing_names_every_variable_and_file() -> None:
    with pytest.raises(UsageError) as info:
        cfgmod.render_text("a: ${ONE}\nb: ${TWO}\nc: ${ONE}\n", {}, "exp.yaml")
    message = str(info.value)
    assert "ONE, TWO" in message and "exp.yaml" in message


def test_render_values_are_not_re_expanded() -> None:
    out = cfgmod.render_text("a: ${A}\n", {"A": "${B} $(rm -rf /)"}, "f")
    assert out == "a: ${B} $(rm -rf /)\n"


def test_records_encode_lists_and_booleans() -> None:
    cfg = cfgmod.merge([cfgmod.Layer("s", {"direct": {"env": ["A=1", "B=x y"], "numa": True, "log": None}})])
    records = list(config_records(cfg))
    assert records == [
        ("list", "direct.env", "2"), ("item", "direct.env", "A=1"), ("item", "direct.env", "B=x y"),
        ("cfg", "direct.numa", "1"), ("cfg", "direct.log", ""),
    ]
    assert nul_records(records).count(b"\0") == 15


def test_system_json_copy_matches_runner_primus_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stale copy: run `python3 -m primus_runner.config.files --write-json`."""
    import json

    monkeypatch.delenv("PRIMUS_ROOT", raising=False)
    path = cfgmod.system_config_path()
    text = Path(path).read_text(encoding="utf-8")
    stored = json.loads(Path(cfgmod.SYSTEM_JSON).read_text(encoding="utf-8"))
    assert stored["checksum"] == cfgmod.checksum(text)
    assert stored["data"] == cfgmod.parse_yaml(text, path)


def test_an_edited_system_file_is_parsed_not_taken_from_the_copy(isolated: Path) -> None:
    # The isolated root's .primus.yaml differs from the repo's, so its checksum
    # does not match the JSON copy: the file itself must be read.
    cfg = cfgmod.load(None)
    assert cfg.get("container.options.env") == ["A", "B"]
    assert cfg.get("direct.nnodes") == 1


def _prepare_env(tmp_path: Path, sysfs: str, extra: dict[str, str]) -> dict[str, str]:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(root / "python"),
           "PRIMUS_SYSFS_ROOT": sysfs, "PRIMUS_DEV_ROOT": str(tmp_path / "dev"), **extra}
    (tmp_path / "dev").mkdir(exist_ok=True)
    out = subprocess.run([sys.executable, "-m", "primus_runner", "launch", "prepare"], env=env,
                         capture_output=True, check=True).stdout.decode()
    fields = out.split("\0")
    return {fields[i + 1]: fields[i + 2] for i in range(0, len(fields) - 2, 3) if fields[i] == "env"}


def test_prepare_uses_the_detected_gpu_count_unless_someone_set_gpus_per_node(tmp_path: Path) -> None:
    import shutil

    # The MI300X machine with only its first 4 GPUs (KFD nodes 0-1 are CPUs).
    sysfs = str(tmp_path / "four-gpus")
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "sysfs" / "mi300x-roce", sysfs,
                    symlinks=True)
    for node in range(6, 10):
        shutil.rmtree(Path(sysfs) / "sys/class/kfd/kfd/topology/nodes" / str(node))
    got = _prepare_env(tmp_path, sysfs, {})
    assert got["PRIMUS_ACCELERATOR"] == "rocm" and got["PRIMUS_GPU_COUNT"] == "4"
    assert got["GPUS_PER_NODE"] == "4"
    assert "GPUS_PER_NODE" in got["PRIMUS_DETECTED_VARS"].split()
    assert "PRIMUS_ACCELERATOR" in got["PRIMUS_DETECTED_VARS"].split()
    assert _prepare_env(tmp_path, sysfs, {"GPUS_PER_NODE": "8"})["GPUS_PER_NODE"] == "8"
    (tmp_path / ".primus.yaml").write_text("direct:\n  gpus_per_node: 2\n")
    assert _prepare_env(tmp_path, sysfs, {})["GPUS_PER_NODE"] == "2"
