"""Config schema: every key typed in one table; wrong types are exit 2, unknown keys warn."""
from __future__ import annotations

from pathlib import Path

import pytest

from primus_runner.config import files as cfgmod
from primus_runner.config import schema as schema
from primus_runner.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


def check(data: dict) -> tuple[list[str], list[str]]:
    return schema.check(data, "exp.yaml")


@pytest.mark.parametrize(("data", "key", "seen", "wanted"), [
    ({"direct": {"env": "T_FOO=bar"}}, "direct.env", "a string", "a list"),
    ({"direct": {"numa": "maybe"}}, "direct.numa", "a string", "a boolean"),
    ({"direct": {"log_all_ranks": "perhaps"}}, "direct.log_all_ranks", "a string", "a boolean"),
    ({"direct": 5}, "direct", "an integer", "a mapping"),
    ({"direct": {"nnodes": "two"}}, "direct.nnodes", "a string", "a whole number"),
    ({"direct": {"master_port": [1, 2]}}, "direct.master_port", "a list", "a whole number"),
    ({"direct": {"env": [{"A": 1}]}}, "direct.env", "a list holding a mapping", "a list"),
    ({"slurm": {"requeue": "sometimes"}}, "slurm.requeue", "a string", "a boolean"),
    ({"container": {"options": {"volume": {"a": "b"}}}}, "container.options.volume", "a mapping",
     "a value or a list"),
])
def test_a_wrong_type_names_key_file_type_seen_and_wanted(data: dict, key: str, seen: str,
                                                         wanted: str) -> None:
    errors, _ = check(data)
    assert len(errors) == 1
    assert f"'{key}' in exp.yaml is {seen}" in errors[0]
    assert f"wanted {wanted}" in errors[0]
    assert "Fix:" in errors[0]


def test_right_types_and_empty_values_pass() -> None:
    data = {"main": {"debug": True}, "direct": {"nnodes": 2, "master_port": "1234", "log_file": None,
                                                "env": ["A=1", "B=x y"], "numa": False,
                                                "master_addr": "node-1", "script": 12},
            "container": {"options": {"ulimit": ["memlock=-1"], "privileged": True, "ipc": "host"}},
            "slurm": {"time": 60, "nodes": "1-4", "signal": "USR1@120", "requeue": True}}
    assert check(data) == ([], [])


def test_unknown_key_suggests_only_same_section_and_type() -> None:
    _, warnings = check({"direct": {"master_prot": 99}})
    assert "Did you mean 'direct.master_port'" in warnings[0]
    # A string value: master_port (an integer) is not offered for a misspelt text key.
    _, warnings = check({"direct": {"master_prot": "somehost"}})
    assert "master_port" not in warnings[0]
    # Nothing in direct looks like 'bogus': no suggestion at all (never direct.nnodes).
    _, warnings = check({"direct": {"bogus": "x"}})
    assert warnings == ["unknown config key 'direct.bogus' in exp.yaml; it is ignored."]
    # Another section's key is never suggested.
    _, warnings = check({"slurm": {"numa": True}})
    assert "direct.numa" not in warnings[0]


def test_a_misspelt_section_suggests_the_section() -> None:
    _, warnings = check({"drect": {"numa": True}})
    assert "Did you mean 'direct'?" in warnings[0]


def test_load_raises_exit_2_listing_every_wrong_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIMUS_NO_USER_CONFIG", "1")
    exp = tmp_path / "exp.yaml"
    exp.write_text("direct:\n  numa: maybe\n  log_all_ranks: perhaps\n", encoding="utf-8")
    with pytest.raises(UsageError) as info:
        cfgmod.load(str(exp))
    assert info.value.exit_code == 2
    assert "direct.numa" in str(info.value) and "direct.log_all_ranks" in str(info.value)


def test_every_system_default_is_declared_and_well_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key added to runner/.primus.yaml needs its row in config_schema.SCHEMA."""
    monkeypatch.delenv("PRIMUS_ROOT", raising=False)
    path = ROOT / "runner" / ".primus.yaml"
    data = cfgmod.parse_yaml(path.read_text(encoding="utf-8"), str(path))
    assert check(data) == ([], [])
    for dotted, _ in cfgmod.flatten(data):
        assert schema.kind_of(dotted) not in (None, "section"), dotted


def test_every_schema_type_is_known() -> None:
    for key, kind in schema.SCHEMA.items():
        assert kind in schema.WANTED and kind != "section", key
