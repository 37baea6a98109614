"""The variables the launcher uses before its verdict (no rule in
bash): PRIMUS_KILL_GRACE, PRIMUS_HOOK_TIMEOUT and PRIMUS_NEURON_CORES_PER_PROC
are checked by the launch helper's first step (env/refusals.py), by the
registry's own bounds, and refused as the registry's ``type`` rule."""
from __future__ import annotations

import pytest

from primus_runner.env import refusals
from primus_runner.errors import RuleRefusal
from primus_runner.launch import container
from primus_runner.launch.helper import prepare_records


@pytest.mark.parametrize(("name", "value"), [
    ("PRIMUS_KILL_GRACE", "0"), ("PRIMUS_KILL_GRACE", "99999"), ("PRIMUS_KILL_GRACE", "08"),
    ("PRIMUS_HOOK_TIMEOUT", "0"), ("PRIMUS_HOOK_TIMEOUT", "999999999"),
    ("PRIMUS_NEURON_CORES_PER_PROC", "1"), ("PRIMUS_NEURON_CORES_PER_PROC", "32"),
    ("PRIMUS_KILL_GRACE", ""),  # empty is unset: the default applies
])
def test_values_within_the_registered_bounds_pass(name, value):
    assert refusals.early_value_problem({name: value}) is None


@pytest.mark.parametrize(("name", "value", "words"), [
    ("PRIMUS_KILL_GRACE", "1.5", "from 0 to 99999"),
    ("PRIMUS_KILL_GRACE", "-3", "from 0 to 99999"),
    ("PRIMUS_KILL_GRACE", "100000", "from 0 to 99999"),
    ("PRIMUS_KILL_GRACE", " 5", "from 0 to 99999"),
    ("PRIMUS_HOOK_TIMEOUT", "soon", "from 0 to 999999999"),
    ("PRIMUS_HOOK_TIMEOUT", "1000000000", "from 0 to 999999999"),
    ("PRIMUS_NEURON_CORES_PER_PROC", "0", "of at least 1"),
    ("PRIMUS_NEURON_CORES_PER_PROC", "x", "of at least 1"),
])
def test_a_value_outside_them_names_the_variable_and_the_bounds(name, value, words):
    problem = refusals.early_value_problem({name: value})
    assert problem is not None
    variable, got, message, fix = problem
    assert (variable, got) == (name, value)
    assert words in message and "before the verdict" in message
    assert name in fix or "--neuron-cores-per-proc" in fix


def test_the_helper_refuses_before_any_record_exported_or_given_with_env(tmp_path):
    for env, cli in (({"PRIMUS_KILL_GRACE": "abc"}, ()), ({}, ("PRIMUS_HOOK_TIMEOUT=later",))):
        records = prepare_records(env, None, "cpu", str(tmp_path), str(tmp_path), cli_env=cli)
        with pytest.raises(RuleRefusal) as err:
            list(records)
        assert err.value.rule == "type"
        assert err.value.variable in ("PRIMUS_KILL_GRACE", "PRIMUS_HOOK_TIMEOUT")


def test_the_container_plan_refuses_the_same_value(tmp_path):
    with pytest.raises(RuleRefusal) as err:
        container.build(["--image", "img:1", "--", "--single", "--script", "x.py"],
                        {"PRIMUS_KILL_GRACE": "1.5", "PATH": "/usr/bin:/bin"}, str(tmp_path))
    assert (err.value.rule, err.value.variable, err.value.value) == ("type", "PRIMUS_KILL_GRACE", "1.5")
