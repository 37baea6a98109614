"""The one value grammar (python/primus_runner/grammar.py) and the promise it
carries: every value the launcher derives passes the same
rules as a user value, on every fixture machine under tests/fixtures/sysfs.

Expected values are written by hand from RFC 1123/1034/3986 and the NCCL and
Neuron references quoted in grammar.py.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from primus_runner import grammar
from primus_runner.env.rules import CheckContext, check

ROOT = Path(__file__).resolve().parents[2]
SYSFS = ROOT / "tests" / "fixtures" / "sysfs"
MACHINES = sorted(p.name for p in SYSFS.iterdir() if p.is_dir())
ADDRS = ["node1.", "[fd00::10]", "fd00::10", "10.0.0.1", "node-0.cluster"]
# Rules about what the machine cannot do for a 2-node launch (no EFA on inf2 and
# trn1.2xlarge), not about a value's form: a derived value may be refused by them.
MACHINE_LIMITS = {"neuron_efa_multinode"}


# --------------------------------------------------------------------------- the grammar
@pytest.mark.parametrize("value, ok", [
    ("node1", True), ("node1.", True), ("node_1.cluster", True), ("10.0.0.1", True),
    ("fd00::10", True), ("[fd00::10]", True), ("fe80::1%eth0", True),
    ("", False), ("-node", False), ("node..x", False), ("[node1]", False), ("fd00::zz", False),
    ("a" * 64, False), ("node 1", False),
])
def test_hosts(value, ok):
    assert grammar.is_valid_host(value) is ok


@pytest.mark.parametrize("value, problem", [
    ("node1.:1235", None), ("[fd00::10]:1235", None), ("10.0.0.1:65535", None),
    ("fd00::10:1235", "without brackets"), ("node1", "no :port"), ("node1:0", "port '0'"),
    ("node1:x", "port 'x'"), ("-bad:80", "not a host name"),
])
def test_hostport(value, problem):
    found = grammar.hostport_problem(value)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_host_for_port_and_loopback():
    assert grammar.host_for_port("fd00::10") == "[fd00::10]"
    assert grammar.host_for_port("[fd00::10]") == "[fd00::10]"
    assert grammar.host_for_port("node1.") == "node1."
    for value in ("localhost", "LOCALHOST.", "127.0.0.5", "::1", "[::1]", "ip6-loopback"):
        assert grammar.is_loopback(value), value
    for value in ("node1", "10.0.0.1", "[fd00::10]", "127.0.0.256"):
        assert not grammar.is_loopback(value), value


@pytest.mark.parametrize("value, cores, why", [
    ("0-3", [0, 1, 2, 3], None), ("0,2,4", [0, 2, 4], None), ("8,0-1", [8, 0, 1], None),
    ("0,0", None, "index 0 twice"), ("0-3,2", None, "index 2 twice"),
    ("3-1", None, "not a list"), ("0,,1", None, "not a list"), ("0, 1", None, "not a list"),
])
def test_index_lists(value, cores, why):
    found, problem = grammar.index_list(value)
    assert found == cores
    assert (problem is None) if why is None else why in (problem or "")


def test_nccl_name_lists():
    assert grammar.parse_nccl_names("^=docker0,lo") == (True, [(True, "docker0"), (False, "lo")])
    assert grammar.parse_nccl_names("bond0") == (False, [(False, "bond0")])
    assert grammar.nccl_name_matches("bond0.2093", False, "bond0")
    assert not grammar.nccl_name_matches("bond0.2093", True, "bond0")


# --------------------------------------------------------------------------- the cases
def test_master_addr_with_trailing_dot_and_what_is_derived_from_it_agree():
    from primus_runner.cluster.ranks import neuron_root_comm_id

    derived = neuron_root_comm_id("node1.", 1234)
    env = {"MASTER_ADDR": "node1.", "NNODES": "2", "MASTER_PORT": "1234",
           "NEURON_RT_ROOT_COMM_ID": derived, "JAX_COORDINATOR_IP": "node1.",
           "JAX_COORDINATOR_PORT": "1234", "JAX_COORDINATOR_ADDRESS": "node1.:1234"}
    assert derived == "node1.:1235"
    assert [f for f in check(env, accelerator="neuron") if f.severity == "error"] == []


def test_bracketed_ipv6_master_addr_gives_a_jax_coordinator_the_rules_accept():
    env = {"MASTER_ADDR": "[fd00::10]", "NNODES": "2", "JAX_COORDINATOR_IP": "[fd00::10]",
           "JAX_COORDINATOR_PORT": "1234", "JAX_COORDINATOR_ADDRESS": "[fd00::10]:1234"}
    assert [f for f in check(env) if f.severity == "error"] == []
    bad = [f for f in check({"JAX_COORDINATOR_ADDRESS": "fd00::10:1234"}) if f.severity == "error"]
    assert [(f.variable, f.rule) for f in bad] == [("JAX_COORDINATOR_ADDRESS", "type")]


@pytest.mark.parametrize("value, twice", [("0,0", 0), ("0-3,2", 2)])
def test_visible_cores_repeat_is_an_error_not_another_core(value, twice):
    env = {"NEURON_RT_VISIBLE_CORES": value, "GPUS_PER_NODE": "4"}
    findings = check(env, accelerator="neuron", context=CheckContext(
        cpu_count=8, neuron_instance_type="trn1.32xlarge", neuron_family="trn1"))
    mine = [f for f in findings if f.variable == "NEURON_RT_VISIBLE_CORES" and f.severity == "error"]
    assert [f.rule for f in mine] == ["type"]
    assert f"index {twice} twice" in mine[0].message
    # No count rule counts the repeat as another core.
    assert not [f for f in findings if f.rule in ("neuron_visible_cores_count", "neuron_cores_fit")]


def test_neuron_layer_names_an_invalid_visible_cores_list_not_an_unset_one():
    from test_layer_drift import TRN1, run_layers

    result = subprocess.run(
        ["bash", "--norc", "-c", 'source "$1" >/dev/null; echo "GPUS=${GPUS_PER_NODE-unset}"', "x",
         str(ROOT / "runner" / "helpers" / "envs" / "primus-env.sh")],
        env={"PATH": "/usr/bin:/bin", "PRIMUS_DETECTION_DONE": "1", "PRIMUS_ENV_DEFER_VALIDATION": "1",
             "PRIMUS_LOG_COLOR": "0", **TRN1, "NNODES": "1", "NEURON_RT_VISIBLE_CORES": "0,0"},
        capture_output=True, text=True, check=True)
    assert "NEURON_RT_VISIBLE_CORES='0,0' is not a core list this layer can use" in result.stderr
    assert "is not set" not in result.stderr
    assert run_layers  # the helper this test shares with test_layer_drift


# --------------------------------------------------------------------------- every derivation
def _detected(machine: str, addr: str) -> tuple[dict[str, str], dict[str, str]]:
    """(the user's env, what detection derived) for a 2-node launch on ``machine``."""
    from primus_runner.config import files as config
    from primus_runner.launch import detect

    root = str(SYSFS / machine)
    env = {"MASTER_ADDR": addr, "MASTER_PORT": "1234", "NNODES": "2", "NODE_RANK": "0",
           "PRIMUS_SYSFS_ROOT": root, "PATH": "/usr/bin:/bin"}
    failures: list[tuple[str, str, int]] = []
    out = detect.detected_env(env, config.load(None, include_user=False), None, root, root,
                              failures=failures)
    return env, out


def _derived_errors(env: dict[str, str], derived: set[str]) -> list[str]:
    accel = env.get("PRIMUS_ACCELERATOR") or "auto"
    return [f"{f.variable}={env.get(f.variable)!r}: {f.message} ({f.rule})"
            for f in check(env, accelerator=accel, context=CheckContext.from_env(env))
            if f.severity == "error" and f.variable in derived and f.rule not in MACHINE_LIMITS]


@pytest.mark.parametrize("machine", MACHINES)
def test_every_python_derivation_passes_the_rules_on_every_fixture(machine):
    from primus_runner.cluster.ranks import neuron_root_comm_id
    from primus_runner.launch import jax_layer

    for addr in ADDRS:
        env, out = _detected(machine, addr)
        derived = {n for n in out if n not in env}
        if out.get("PRIMUS_ACCELERATOR") == "neuron":
            derived.discard("GPUS_PER_NODE")  # refined by the Neuron layer: the test below
        full = {**env, **out}
        full["NEURON_RT_ROOT_COMM_ID"] = neuron_root_comm_id(addr, 1234)
        # the launcher's coordinator in run mode single across nodes (launch/jax_layer.py)
        single = {"RUN_MODE": "single", "NNODES": "2", "MASTER_ADDR": addr, "MASTER_PORT": "1234"}
        full.update({name: value for _, name, value in jax_layer.workload(single)})
        assert full["JAX_COORDINATOR_ADDRESS"] == f"{grammar.host_for_port(addr)}:1234"
        derived |= {"NEURON_RT_ROOT_COMM_ID", "JAX_COORDINATOR_IP", "JAX_COORDINATOR_PORT",
                    "JAX_COORDINATOR_ADDRESS"}
        assert _derived_errors(full, derived) == [], (machine, addr)


@pytest.mark.parametrize("machine", MACHINES)
def test_every_layer_derivation_passes_the_rules_on_every_fixture(machine):
    """The shell layers (base_env.sh, the accelerator layer, jax_xla.sh) on top of
    detection: every value a layer set is checked like a user value."""
    from test_layer_drift import run_layers

    for addr in ("node1.", "[fd00::10]"):
        env, out = _detected(machine, addr)
        layered = run_layers({**env, **out, "PRIMUS_FRAMEWORK": "maxtext",
                              "PYTHONPATH": str(ROOT / "python")})
        values = {name: value for name, (_, value) in layered.items()}
        derived = {name for name, (origin, _) in layered.items()
                   if origin not in ("exported", "user") and name not in env}
        assert {"JAX_COORDINATOR_IP", "JAX_COORDINATOR_PORT"} <= derived, machine
        if values.get("PRIMUS_ACCELERATOR") == "neuron":
            assert values["NEURON_RT_ROOT_COMM_ID"] == f"{grammar.host_for_port(addr)}:1235"
        assert _derived_errors({**env, **out, **values}, derived) == [], (machine, addr)
