"""The Neuron layer's decision (launch/neuron_layer.py) and the NeuronCore
arithmetic it asks (hardware/neuron_cores.py), as pure functions; and the launch
helper's ``layer`` requests (launch/helper.py), the way neuron.sh sends them.

Expected values written by hand: trn1.32xlarge is 16 devices x 2 NeuronCores at
LNC 1 (32 logical cores), trn2.48xlarge 16 x 8 at LNC 2 (64).
"""
from __future__ import annotations

import io

import pytest

from primus_runner.grammar import compact_index_list, index_list
from primus_runner.hardware import neuron_cores as nc
from primus_runner.hardware.neuron import family_default_lnc
from primus_runner.launch import helper, neuron_layer

TRN1 = {"PRIMUS_ACCELERATOR": "neuron", "PRIMUS_NEURON_INSTANCE": "trn1.32xlarge",
        "PRIMUS_NEURON_DEVICES": "16", "PRIMUS_NEURON_CORES_PER_DEVICE": "2",
        "PRIMUS_NEURON_DEFAULT_LNC": "1", "PRIMUS_NEURON_LOGICAL_CORES": "32", "GPUS_PER_NODE": "8",
        "PRIMUS_DETECTED_VARS": "GPUS_PER_NODE"}
TRN2 = {**TRN1, "PRIMUS_NEURON_INSTANCE": "trn2.48xlarge", "PRIMUS_NEURON_CORES_PER_DEVICE": "8",
        "PRIMUS_NEURON_DEFAULT_LNC": "2", "PRIMUS_NEURON_LOGICAL_CORES": "64"}


def values(records: list[tuple[str, str, str]]) -> dict[str, str | None]:
    """name -> value set (None: unset) by the records, last one winning."""
    out: dict[str, str | None] = {}
    for kind, name, value in records:
        if kind in ("default", "set"):
            out[name] = value
        elif kind == "unset":
            out[name] = None
    return out


def warnings(records: list[tuple[str, str, str]]) -> list[str]:
    return [value for kind, _, value in records if kind == "warn"]


# --------------------------------------------------------------------------- arithmetic
@pytest.mark.parametrize("cores, text", [
    ([0, 1, 2, 3], "0-3"), ([8, 9, 10, 11, 20, 22], "8-11,20,22"), ([5], "5"), ([3, 2], "3,2"), ([], "")])
def test_compact_index_list_reads_back(cores, text):
    assert compact_index_list(cores) == text
    if cores:
        assert index_list(text)[0] == cores


def test_logical_cores_and_the_family_default():
    assert nc.logical_cores(16, 8, 2) == 64
    assert nc.logical_cores(16, 2, 4) is None      # LNC 4 does not divide 2 cores
    assert nc.logical_cores(None, 2, 1) is None
    assert (family_default_lnc("trn1n.32xlarge"), family_default_lnc("trn2.48xlarge")) == (1, 2)
    assert family_default_lnc("m5.large") is None


@pytest.mark.parametrize("value", ["0-3,2", "3-1", "0-3,", "0, 1", "0-70000"])
def test_visible_cores_refuses_what_is_not_a_core_list(value):
    assert nc.visible_cores(value) is None


# --------------------------------------------------------------------------- the layer
def test_trn1_single_node():
    got = neuron_layer.decide(TRN1)
    assert values(got) == {"NEURON_LOGICAL_NC_CONFIG": "1", "GPUS_PER_NODE": "32",
                           "PRIMUS_NEURON_CORE_SLICES": " ".join(str(i) for i in range(32)),
                           "MALLOC_ARENA_MAX": "64"}
    assert warnings(got) == []


def test_user_values_are_kept_and_read():
    # The user's GPUS_PER_NODE (not in PRIMUS_DETECTED_VARS) is never replaced.
    got = values(neuron_layer.decide({**TRN2, "GPUS_PER_NODE": "4", "PRIMUS_DETECTED_VARS": ""}))
    assert "GPUS_PER_NODE" not in got and got["PRIMUS_NEURON_CORE_SLICES"] == "0 1 2 3"
    got = values(neuron_layer.decide({**TRN2, "NEURON_RT_VISIBLE_CORES": "8-11,20,22,24,26",
                                      "PRIMUS_NEURON_CORES_PER_PROC": "4"}))
    assert got["GPUS_PER_NODE"] == "2"
    assert got["PRIMUS_NEURON_CORE_SLICES"] == "8-11 20,22,24,26"


def test_a_visible_list_the_layer_set_is_not_the_users():
    """Ownership is the shell's: a recorded origin that is not user* is not the user's."""
    env = {**TRN1, "NEURON_RT_VISIBLE_CORES": "4-7", "PRIMUS_ENV_ORIGINS": "NEURON_RT_VISIBLE_CORES:hook"}
    assert values(neuron_layer.decide(env))["GPUS_PER_NODE"] == "32"
    env["PRIMUS_ENV_ORIGINS"] = "NEURON_RT_VISIBLE_CORES:user"
    assert values(neuron_layer.decide(env))["GPUS_PER_NODE"] == "4"


def test_deprecated_names():
    got = values(neuron_layer.decide({**TRN2, "NEURON_RT_VIRTUAL_CORE_SIZE": "1"}))
    assert "NEURON_LOGICAL_NC_CONFIG" not in got and got["GPUS_PER_NODE"] == "128"
    got = values(neuron_layer.decide({**TRN1, "NEURON_RT_NUM_CORES": "16"}))
    assert got["GPUS_PER_NODE"] == "16"


def test_unknown_cores_and_bad_lists_warn_and_leave_gpus_per_node():
    got = neuron_layer.decide({"PRIMUS_NEURON_INSTANCE": "trn2.48xlarge", "GPUS_PER_NODE": "8"})
    assert values(got) == {"NEURON_LOGICAL_NC_CONFIG": "2", "PRIMUS_NEURON_CORE_SLICES": None,
                           "MALLOC_ARENA_MAX": "64"}
    assert "NeuronCores of instance 'trn2.48xlarge' are unknown" in warnings(got)[0]
    got = neuron_layer.decide({**TRN1, "NEURON_RT_VISIBLE_CORES": "0-3,2"})
    assert "NEURON_RT_VISIBLE_CORES='0-3,2' is not a core list" in warnings(got)[0]
    got = neuron_layer.decide({"PRIMUS_NEURON_INSTANCE": "m5.large"})
    assert "instance type 'm5.large' is not known" in warnings(got)[0]


def test_nccl_ib_values_are_dropped_unless_the_users():
    env = {**TRN1, "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TIMEOUT": "22",
           "PRIMUS_DETECTED_VARS": "GPUS_PER_NODE NCCL_IB_GID_INDEX"}
    got = values(neuron_layer.decide(env))
    assert got["NCCL_IB_GID_INDEX"] is None and "NCCL_IB_TIMEOUT" not in got


def test_multinode():
    env = {**TRN1, "NNODES": "2", "MASTER_ADDR": "fd00::10", "MASTER_PORT": "29500", "IP_INTERFACE": "ens32"}
    got = values(neuron_layer.decide(env))
    assert got["NEURON_RT_ROOT_COMM_ID"] == "[fd00::10]:29501"
    assert (got["NEURON_RT_EXEC_TIMEOUT"], got["FI_PROVIDER"], got["FI_EFA_USE_DEVICE_RDMA"],
            got["FI_EFA_FORK_SAFE"], got["CCOM_SOCKET_IFNAME"]) == ("600", "efa", "1", "1", "ens32")
    assert values(neuron_layer.decide({**env, "PRIMUS_NEURON_ROOT_COMM_PORT": "46820"}))[
        "NEURON_RT_ROOT_COMM_ID"] == "[fd00::10]:46820"
    bad = neuron_layer.decide({**env, "PRIMUS_NEURON_ROOT_COMM_PORT": "80"})
    assert "NEURON_RT_ROOT_COMM_ID" not in values(bad)
    assert "could not derive NEURON_RT_ROOT_COMM_ID" in warnings(bad)[0]
    assert "PRIMUS_NEURON_ROOT_COMM_PORT=80" in warnings(bad)[0]


def test_slices_after_the_last_env():
    final = {**TRN1, "NEURON_LOGICAL_NC_CONFIG": "1", "PRIMUS_NEURON_CORES_PER_PROC": "4"}
    assert neuron_layer.slices({**final, "GPUS_PER_NODE": "2"}) == [
        ("set", "PRIMUS_NEURON_CORE_SLICES", "0-3 4-7")]
    # At LNC 2 a trn1 node has 16 logical cores: 16 one-core processes fit, 17 do not.
    one = {**final, "NEURON_LOGICAL_NC_CONFIG": "2", "PRIMUS_NEURON_CORES_PER_PROC": "1"}
    assert neuron_layer.slices({**one, "GPUS_PER_NODE": "16"})[0][:2] == ("set", "PRIMUS_NEURON_CORE_SLICES")
    assert neuron_layer.slices({**one, "GPUS_PER_NODE": "17"}) == [("unset", "PRIMUS_NEURON_CORE_SLICES", "")]


def test_k_above_one_gives_every_worker_its_own_cores_even_when_the_cores_are_unknown():
    """What run_worker.sh computed itself before (rank i: cores i*K..i*K+K-1), now decided here."""
    unknown = {"PRIMUS_NEURON_INSTANCE": "trn2.48xlarge", "GPUS_PER_NODE": "3"}
    assert neuron_layer.slices({**unknown, "PRIMUS_NEURON_CORES_PER_PROC": "2"}) == [
        ("set", "PRIMUS_NEURON_CORE_SLICES", "0-1 2-3 4-5")]
    assert neuron_layer.slices(unknown) == [("unset", "PRIMUS_NEURON_CORE_SLICES", "")]
    huge = {**unknown, "GPUS_PER_NODE": "999999999", "PRIMUS_NEURON_CORES_PER_PROC": "2"}
    assert neuron_layer.slices(huge) == [("unset", "PRIMUS_NEURON_CORE_SLICES", "")]


# --------------------------------------------------------------------------- the helper's requests
class _Stdout:
    def __init__(self) -> None:
        self.buffer = io.BytesIO()


def test_the_helper_answers_layer_requests_then_hands_back_the_next_header(monkeypatch):
    env = b"\0".join(f"{k}={v}".encode() for k, v in {**TRN1, "GPUS_PER_NODE": "2",
                                                              "NEURON_LOGICAL_NC_CONFIG": "1"}.items())
    request = b"layer\0neuron-slices\0" + env + b"\0\0" + b"check\0neuron\0A=1\0\0"
    entries = helper.Entries(io.BytesIO(request))
    out = _Stdout()
    monkeypatch.setattr(helper.sys, "stdout", out)
    assert helper.serve_layers(entries) == "check"
    assert out.buffer.getvalue() == b"set\0PRIMUS_NEURON_CORE_SLICES\x000 1\0layer-end\0\0\0"
    assert (entries.next(), entries.environ()) == ("neuron", {"A": "1"})
    assert entries.next() is None
