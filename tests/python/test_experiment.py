"""experiment.static_framework: what the launch helper may decide early, and
launch.experiment_records, the records it sends."""
from __future__ import annotations

from pathlib import Path

import pytest

from primus_runner.config.experiment_config import static_framework
from primus_runner.launch import helper as launch


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return str(path)


def test_no_framework_with_templated_values_and_the_required_names(tmp_path: Path) -> None:
    path = write(tmp_path, "workspace: ${PRIMUS_WORKSPACE:./output}\nexp: ${NEEDED}\n"
                           "modules:\n  pre_trainer:\n    steps: ${STEPS:3}\n")
    assert static_framework(path) == ("", ["NEEDED"])


@pytest.mark.parametrize(("text", "framework"), [
    ("modules:\n  pre_trainer:\n    framework: megatron\n", "megatron"),
    ("pre_trainer:\n  framework: maxtext\n", "maxtext"),
    # A templated framework is never decided early.
    ("modules:\n  pre_trainer:\n    framework: ${FW:megatron}\n", "primus-placeholder"),
    ("modules:\n  pre_trainer:\n    framework: ${FW:}\n", "primus-placeholder"),
])
def test_a_named_or_templated_framework_is_not_empty(tmp_path: Path, text: str, framework: str) -> None:
    found = static_framework(write(tmp_path, text))
    assert found is not None and found[0] == framework


def test_unreadable_or_malformed_is_left_to_the_hook(tmp_path: Path) -> None:
    assert static_framework(str(tmp_path / "absent.yaml")) is None
    assert static_framework(write(tmp_path, "a: [unclosed\n")) is None


def test_records_only_for_a_config_without_framework(tmp_path: Path) -> None:
    none = write(tmp_path, "x: ${A}\n")
    assert list(launch.experiment_records(none)) == [
        ("env", "PRIMUS_EXPERIMENT_NO_FRAMEWORK", none), ("env", "PRIMUS_EXPERIMENT_REQUIRED", "A")]
    named = tmp_path / "named.yaml"
    named.write_text("pre_trainer:\n  framework: torchtitan\n")
    assert list(launch.experiment_records(str(named))) == []
    assert list(launch.experiment_records("")) == []
