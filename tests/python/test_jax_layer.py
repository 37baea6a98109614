"""The JAX coordinator's decisions (launch/jax_layer.py) as pure functions, the
launch helper's answers to its ``layer`` requests (launch/helper.py), and the
``layer`` command a hand-sourced jax_xla.sh runs (launch/layers.py).

Expected values written by hand: the coordinator is MASTER_ADDR:MASTER_PORT, an
IPv6 host in brackets before ``:port``; the registry's distributed defaults are
localhost and 1234.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from primus_runner.errors import UsageError
from primus_runner.launch import helper, jax_layer, layers

ROOT = Path(__file__).resolve().parents[2]
MULTI = {"NNODES": "2", "MASTER_ADDR": "node-0", "MASTER_PORT": "2345", "PRIMUS_FRAMEWORK": "maxtext"}


# --------------------------------------------------------------------------- request `jax` (jax_xla.sh)
def test_one_node_sets_nothing():
    for nodes in ("1", "01", "", "x", "0"):
        assert jax_layer.layer({**MULTI, "NNODES": nodes}) == []
    assert jax_layer.layer({k: v for k, v in MULTI.items() if k != "NNODES"}) == []


def test_two_nodes_default_the_coordinator_to_the_master():
    assert jax_layer.layer(MULTI) == [("default", "JAX_COORDINATOR_IP", "node-0"),
                                      ("default", "JAX_COORDINATOR_PORT", "2345")]
    assert jax_layer.layer({**MULTI, "NNODES": "16", "PRIMUS_FRAMEWORK": "JAX"})[0][2] == "node-0"


def test_missing_master_values_take_the_registry_defaults():
    env = {"NNODES": "2", "MASTER_ADDR": ""}
    assert jax_layer.layer(env) == [("default", "JAX_COORDINATOR_IP", "localhost"),
                                    ("default", "JAX_COORDINATOR_PORT", "1234")]


def test_user_values_are_kept():
    # set before any layer and not detected: the user's
    got = jax_layer.layer({**MULTI, "JAX_COORDINATOR_IP": "coord", "JAX_COORDINATOR_PORT": ""})
    assert got == []
    # recorded as the user's beats "set"; a detected or layer value is not the user's
    env = {**MULTI, "JAX_COORDINATOR_IP": "old", "JAX_COORDINATOR_PORT": "9",
           "PRIMUS_ENV_ORIGINS": "JAX_COORDINATOR_IP:user JAX_COORDINATOR_PORT:jax_xla"}
    assert jax_layer.layer(env) == [("default", "JAX_COORDINATOR_PORT", "2345")]
    env = {**MULTI, "JAX_COORDINATOR_IP": "old", "PRIMUS_DETECTED_VARS": "GPUS_PER_NODE JAX_COORDINATOR_IP"}
    assert ("default", "JAX_COORDINATOR_IP", "node-0") in jax_layer.layer(env)


def test_maxdiffusion_declares_no_coordinator():
    for name in ("maxdiffusion", "MaxDiffusion"):
        assert jax_layer.layer({**MULTI, "PRIMUS_FRAMEWORK": name}) == []
    # no framework named: MaxText's layer
    assert len(jax_layer.layer({k: v for k, v in MULTI.items() if k != "PRIMUS_FRAMEWORK"})) == 2


# --------------------------------------------------------------------------- request `jax-workload` (workload.sh)
def test_single_mode_two_nodes_fills_ip_port_and_address():
    got = jax_layer.workload({**MULTI, "RUN_MODE": "single"})
    assert got == [("set", "JAX_COORDINATOR_IP", "node-0"), ("set", "JAX_COORDINATOR_PORT", "2345"),
                   ("set", "JAX_COORDINATOR_ADDRESS", "node-0:2345")]


def test_single_mode_ipv6_master_is_bracketed_in_the_address():
    got = dict((n, v) for _, n, v in jax_layer.workload({**MULTI, "RUN_MODE": "single", "MASTER_ADDR": "fd00::10"}))
    assert got == {"JAX_COORDINATOR_IP": "fd00::10", "JAX_COORDINATOR_PORT": "2345",
                   "JAX_COORDINATOR_ADDRESS": "[fd00::10]:2345"}
    # already bracketed: not twice
    got = jax_layer.workload({**MULTI, "RUN_MODE": "single", "JAX_COORDINATOR_IP": "[fd00::10]"})
    assert got[-1] == ("set", "JAX_COORDINATOR_ADDRESS", "[fd00::10]:2345")


def test_single_mode_keeps_set_values_and_builds_the_address_from_them():
    env = {**MULTI, "RUN_MODE": "single", "JAX_COORDINATOR_IP": "coord", "JAX_COORDINATOR_PORT": "7000"}
    assert jax_layer.workload(env) == [("set", "JAX_COORDINATOR_ADDRESS", "coord:7000")]
    assert jax_layer.workload({**env, "JAX_COORDINATOR_ADDRESS": "other:1"}) == []
    # an empty value is filled (as the launcher always did)
    assert jax_layer.workload({**env, "JAX_COORDINATOR_IP": ""})[0] == ("set", "JAX_COORDINATOR_IP", "node-0")


def test_single_mode_one_node_and_missing_master():
    assert jax_layer.workload({**MULTI, "RUN_MODE": "single", "NNODES": "1"}) == []
    assert jax_layer.workload({"RUN_MODE": "single"}) == []  # NNODES unset: one node
    got = jax_layer.workload({"RUN_MODE": "single", "NNODES": "2"})
    assert got[-1] == ("set", "JAX_COORDINATOR_ADDRESS", "localhost:1234")


def test_torchrun_mode_drops_only_what_the_jax_layer_defaulted():
    env = {**MULTI, "RUN_MODE": "torchrun", "JAX_COORDINATOR_IP": "node-0", "JAX_COORDINATOR_PORT": "2345",
           "PRIMUS_ENV_ORIGINS": "JAX_COORDINATOR_IP:jax_xla JAX_COORDINATOR_PORT:jax_xla NNODES:default"}
    assert jax_layer.workload(env) == [("unset", "JAX_COORDINATOR_IP", ""), ("unset", "JAX_COORDINATOR_PORT", "")]
    # the user's (recorded, or never recorded) and --env's stay; env check judges them
    env["PRIMUS_ENV_ORIGINS"] = "JAX_COORDINATOR_IP:user JAX_COORDINATOR_PORT:cli"
    assert jax_layer.workload(env) == []
    env.pop("PRIMUS_ENV_ORIGINS")
    assert jax_layer.workload(env) == []
    assert jax_layer.workload({**env, "RUN_MODE": ""}) == []


# --------------------------------------------------------------------------- dispatch, helper, command
def test_requests_go_to_their_module():
    assert layers.decider("jax") is jax_layer.layer
    assert layers.decider("jax-workload") is jax_layer.workload
    from primus_runner.launch import neuron_layer

    assert layers.decider("neuron") is neuron_layer.decide
    with pytest.raises(UsageError, match="layer 'jx' is not known; accepted: neuron, neuron-slices, jax"):
        layers.records("jx", {})


def test_the_request_table_names_exactly_the_modules_decisions():
    """layers.MODULES (kept for the lazy import) lists each module's LAYERS, no more, no fewer."""
    from primus_runner.launch import neuron_layer

    owners = {"jax_layer": jax_layer.LAYERS, "neuron_layer": neuron_layer.LAYERS}
    assert set(layers.MODULES) == set(jax_layer.LAYERS) | set(neuron_layer.LAYERS)
    for which, module in layers.MODULES.items():
        assert which in owners[module], which


class _Stdout:
    def __init__(self) -> None:
        self.buffer = io.BytesIO()


def _request(which: str, env: dict[str, str]) -> bytes:
    return b"layer\0" + which.encode() + b"\0" + b"\0".join(f"{k}={v}".encode() for k, v in env.items()) + b"\0\0"


def test_the_helper_answers_the_layer_then_the_workload_request_after_the_hooks(monkeypatch):
    # jax_xla.sh asks while the layers are sourced; workload.sh asks after the
    # hooks, still before the `check` header: serve_layers answers both.
    stream = (_request("jax", {**MULTI, "MASTER_ADDR": "fd00::10"})
              + _request("jax-workload", {**MULTI, "MASTER_ADDR": "fd00::10", "RUN_MODE": "single",
                                          "JAX_COORDINATOR_IP": "fd00::10", "JAX_COORDINATOR_PORT": "2345",
                                          "PRIMUS_ENV_ORIGINS": "JAX_COORDINATOR_IP:jax_xla"})
              + b"check\0rocm\0A=1\0\0")
    entries = helper.Entries(io.BytesIO(stream))
    out = _Stdout()
    monkeypatch.setattr(helper.sys, "stdout", out)
    assert helper.serve_layers(entries) == "check"
    assert out.buffer.getvalue() == (
        b"default\0JAX_COORDINATOR_IP\0fd00::10\0default\0JAX_COORDINATOR_PORT\x002345\0layer-end\0\0\0"
        b"set\0JAX_COORDINATOR_ADDRESS\0[fd00::10]:2345\0layer-end\0\0\0")
    assert (entries.next(), entries.environ()) == ("rocm", {"A": "1"})


def _layer_command(which: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "primus_runner", "layer", which], capture_output=True,
                          env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT / "python"), **env},
                          check=False)


def test_the_layer_command_accepts_the_jax_requests():
    got = _layer_command("jax", {"NNODES": "2", "MASTER_ADDR": "fd00::10", "MASTER_PORT": "2345"})
    assert got.returncode == 0, got.stderr
    assert got.stdout == (b"default\0JAX_COORDINATOR_IP\0fd00::10\0default\0JAX_COORDINATOR_PORT\x002345\0"
                          b"end\0\0\0")
    got = _layer_command("jax-workload", {"NNODES": "2", "MASTER_ADDR": "fd00::10", "RUN_MODE": "single"})
    assert got.stdout.endswith(b"set\0JAX_COORDINATOR_ADDRESS\0[fd00::10]:1234\0end\0\0\0")
    got = _layer_command("jaxx", {})
    assert got.returncode == 2 and b"usage: python3 -m primus_runner layer {neuron,neuron-slices,jax,jax-workload}" \
        in got.stderr
