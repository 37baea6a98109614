"""Neuron launch rules (rules/neuron_launch.py) and the Neuron registry details of
Expectations written by hand from the AWS sources cited in the rules."""
from __future__ import annotations

import pytest

from primus_runner.env.registry import load
from primus_runner.env.rules import CheckContext, Finding, check, exit_code, neuron_launch

TRN1 = CheckContext(cpu_count=8, neuron_instance_type="trn1.32xlarge", neuron_family="trn1")
TRN1_SMALL = CheckContext(cpu_count=8, neuron_instance_type="trn1.2xlarge", neuron_family="trn1")
TRN2 = CheckContext(cpu_count=8, neuron_instance_type="trn2.48xlarge", neuron_family="trn2")
INF2 = CheckContext(cpu_count=8, neuron_instance_type="inf2.24xlarge", neuron_family="inf2")
MULTI = {"NNODES": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}


@pytest.fixture(autouse=True)
def _plenty_of_files(monkeypatch):
    monkeypatch.setattr(neuron_launch, "open_files_limit", lambda: 1048576)


def findings(env: dict[str, str], ctx: CheckContext = TRN1, rule: str | None = None) -> list[Finding]:
    out = check(env, accelerator="neuron", context=ctx)
    return [f for f in out if rule is None or f.rule == rule]


def verdict(env: dict[str, str], ctx: CheckContext = TRN1) -> int:
    return exit_code(check(env, accelerator="neuron", context=ctx))


# --------------------------------------------------------------------------- root comm
@pytest.mark.parametrize("value, extra, severity, text", [
    (None, {}, "error", "is unset with NNODES=2"),
    ("10.0.0.1:29500", {}, "error", "which is MASTER_PORT"),
    ("10.0.0.1:1023", {}, "error", "has port 1023; accepted: 1024-65535"),
    ("127.0.0.1:29501", {}, "error", "loopback host '127.0.0.1'"),
    ("localhost:29501", {}, "error", "loopback host 'localhost'"),
    ("[::1]:29501", {}, "error", "loopback host '::1'"),
    ("fd00::10:29501", {"MASTER_ADDR": "fd00::10"}, "error", "IPv6 host without brackets"),
])
def test_root_comm_errors(value, extra, severity, text):
    env = {**MULTI, **extra}
    if value is not None:
        env["NEURON_RT_ROOT_COMM_ID"] = value
    hits = findings(env, rule="neuron_root_comm")
    assert [f.severity for f in hits] == [severity], hits
    assert text in hits[0].message and hits[0].fix


@pytest.mark.parametrize("env", [
    {**MULTI, "NEURON_RT_ROOT_COMM_ID": "10.0.0.1:29501"},
    {**MULTI, "MASTER_ADDR": "fd00::10", "NEURON_RT_ROOT_COMM_ID": "[fd00::10]:29501"},
    {"NNODES": "1", "MASTER_PORT": "29500", "NEURON_RT_ROOT_COMM_ID": "localhost:29501"},
    {"NNODES": "1"},
])
def test_root_comm_passes(env):
    assert findings(env, rule="neuron_root_comm") == []


def test_root_comm_not_required_off_neuron():
    assert [f for f in check(MULTI, accelerator="rocm", context=CheckContext(cpu_count=8))
            if f.rule == "neuron_root_comm"] == []


def _sysctl(tmp_path, local_range: str, reserved: str) -> str:
    base = tmp_path / "proc/sys/net/ipv4"
    base.mkdir(parents=True)
    (base / "ip_local_port_range").write_text(local_range + "\n")
    (base / "ip_local_reserved_ports").write_text(reserved + "\n")
    return str(tmp_path)


@pytest.mark.parametrize("local_range, reserved, port, warned", [
    ("32768\t60999", "", 44001, True),
    ("32768\t60999", "44001", 44001, False),
    ("32768\t60999", "41000,44000-44010", 44001, False),
    ("32768\t60999", "", 29501, False),            # outside the ephemeral range
])
def test_root_comm_port_reserved(tmp_path, local_range, reserved, port, warned):
    root = _sysctl(tmp_path, local_range, reserved)
    env = {**MULTI, "PRIMUS_SYSFS_ROOT": root, "NEURON_RT_ROOT_COMM_ID": f"10.0.0.1:{port}"}
    hits = findings(env, rule="neuron_root_comm_port_reserved")
    assert [f.severity for f in hits] == (["warning"] if warned else [])
    if warned:
        assert f"ip_local_reserved_ports={port}" in hits[0].fix


# --------------------------------------------------------------------------- EFA
def test_efa_instance_without_efa_is_an_error():
    env = {**MULTI, "NEURON_RT_ROOT_COMM_ID": "10.0.0.1:29501"}
    hits = findings(env, TRN1_SMALL, "neuron_efa_multinode")
    assert [(f.severity, f.variable) for f in hits] == [("error", "NNODES")]
    assert "trn1.2xlarge" in hits[0].message and "trn1.32xlarge" in hits[0].fix


def test_efa_no_device_found_is_an_error():
    env = {**MULTI, "NEURON_RT_ROOT_COMM_ID": "10.0.0.1:29501", "PRIMUS_NEURON_EFA_DEVICES": "0"}
    hits = findings(env, INF2, "neuron_efa_multinode")
    assert [(f.severity, f.variable) for f in hits] == [("error", "PRIMUS_NEURON_EFA_DEVICES")]
    assert "efa_installer" in hits[0].fix


def test_efa_found_or_single_node_passes():
    env = {**MULTI, "NEURON_RT_ROOT_COMM_ID": "10.0.0.1:29501", "PRIMUS_NEURON_EFA_DEVICES": "8"}
    assert findings(env, TRN1, "neuron_efa_multinode") == []
    assert findings({"NNODES": "1"}, TRN1_SMALL, "neuron_efa_multinode") == []


# --------------------------------------------------------------------------- cores
def test_cores_per_proc_needs_spmd():
    hits = findings({"PRIMUS_NEURON_CORES_PER_PROC": "2", "GPUS_PER_NODE": "16"},
                    rule="neuron_cores_per_proc_spmd")
    assert [f.severity for f in hits] == ["error"]
    assert "XLA_USE_SPMD" in hits[0].message and "XLA_USE_SPMD=1" in hits[0].fix
    assert "LOCAL_WORLD_SIZE 16 ... is not equal to count 2" in hits[0].message
    for flag in ("XLA_USE_SPMD", "PRIMUS_NEURON_SPMD"):
        assert findings({"PRIMUS_NEURON_CORES_PER_PROC": "2", "GPUS_PER_NODE": "16", flag: "1"},
                        rule="neuron_cores_per_proc_spmd") == []


@pytest.mark.parametrize("env, ctx, variable, text", [
    ({"GPUS_PER_NODE": "64"}, TRN1, "GPUS_PER_NODE", "64 processes x 1 NeuronCore(s) each = 64, but only 32"),
    ({"GPUS_PER_NODE": "17", "PRIMUS_NEURON_CORES_PER_PROC": "2", "XLA_USE_SPMD": "1"}, TRN1,
     "GPUS_PER_NODE", "= 34, but only 32"),
    ({"GPUS_PER_NODE": "4", "NEURON_RT_VISIBLE_CORES": "0-2"}, TRN2, "GPUS_PER_NODE", "only 3 are available"),
    ({"NEURON_RT_NUM_CORES": "64", "GPUS_PER_NODE": "32"}, TRN1, "NEURON_RT_NUM_CORES", "asks for 64"),
])
def test_cores_fit(env, ctx, variable, text):
    hits = [f for f in findings(env, ctx, "neuron_cores_fit") if f.variable == variable]
    assert hits and hits[0].severity == "error" and text in hits[0].message, hits


def test_num_cores_as_node_total_passes():
    # AWS samples: NEURON_RT_NUM_CORES=32 with --nproc_per_node 32.
    env = {"NEURON_RT_NUM_CORES": "32", "GPUS_PER_NODE": "32"}
    assert findings(env, TRN1, "neuron_cores_fit") == []
    assert verdict(env) == 0


def test_visible_cores_count_matches_the_processes():
    hits = findings({"GPUS_PER_NODE": "4", "NEURON_RT_VISIBLE_CORES": "0-7"}, TRN2,
                    "neuron_visible_cores_count")
    assert [f.severity for f in hits] == ["error"]
    assert "LOCAL_WORLD_SIZE 4 ... is not equal to count 8" in hits[0].message
    assert findings({"GPUS_PER_NODE": "8", "NEURON_RT_VISIBLE_CORES": "0-7"}, TRN2,
                    "neuron_visible_cores_count") == []
    assert findings({"GPUS_PER_NODE": "1", "NEURON_RT_VISIBLE_CORES": "5"}, TRN2,
                    "neuron_visible_cores_count") == []


@pytest.mark.parametrize("procs, per, nearest", [
    ("24", None, "use 16 or 32"), ("4", None, "use 2 or 8"), ("40", None, "use 32 or 64"),
    ("3", None, "use 2 or 8"), ("2", "2", "use 2 or 8"),
])
def test_trn1_topology_errors(procs, per, nearest):
    env = {"GPUS_PER_NODE": procs}
    if per:
        env.update(PRIMUS_NEURON_CORES_PER_PROC=per, XLA_USE_SPMD="1")
    hits = findings(env, TRN1, "trn1_collective_topology")
    assert [f.severity for f in hits] == ["error"] and nearest in hits[0].fix, hits
    assert "Unsupported topology" in hits[0].message


@pytest.mark.parametrize("procs", ["1", "2", "8", "16", "32", "64"])
def test_trn1_topology_passes(procs):
    assert findings({"GPUS_PER_NODE": procs}, TRN1, "trn1_collective_topology") == []


def test_topology_rule_is_trn1_only():
    assert findings({"GPUS_PER_NODE": "24"}, TRN2, "trn1_collective_topology") == []
    assert findings({"GPUS_PER_NODE": "6"}, INF2, "trn1_collective_topology") == []


# --------------------------------------------------------------------------- LNC
@pytest.mark.parametrize("flags, lnc", [
    ("--lnc=1", "1"), ("--lnc 1", "1"), ("--logical-nc-config=1", "1"),
    ("--logical-nc-config 1", "1"), ("-lnc 1", "1"), ("--model-type transformer --lnc=1 -O1", "1"),
    ("-O1", None), ("--lnc=2 --lnc=1", "1"),
])
def test_compiler_lnc_parsing(flags, lnc):
    assert neuron_launch.compiler_lnc(flags) == lnc


def test_compiler_lnc_mismatch():
    hits = findings({"NEURON_CC_FLAGS": "--lnc=1"}, TRN2, "neuron_compiler_lnc")
    assert [f.severity for f in hits] == ["error"] and "--lnc=2" in hits[0].fix
    assert findings({"NEURON_CC_FLAGS": "--lnc=2"}, TRN2, "neuron_compiler_lnc") == []
    assert findings({"NEURON_CC_FLAGS": "--lnc=1", "NEURON_LOGICAL_NC_CONFIG": "1"}, TRN2,
                    "neuron_compiler_lnc") == []
    assert findings({"NEURON_CC_FLAGS": "--lnc=2"}, TRN1, "neuron_compiler_lnc")[0].severity == "error"
    assert findings({"NEURON_CC_FLAGS": "--lnc=x"}, TRN2, "neuron_compiler_lnc")[0].severity == "error"


@pytest.mark.parametrize("ctx", [TRN1, INF2])
def test_lnc_2_on_neuroncore_v2_is_an_error(ctx):
    hits = findings({"NEURON_LOGICAL_NC_CONFIG": "2"}, ctx, "lnc_size")
    assert [f.severity for f in hits] == ["error"]
    assert verdict({"NEURON_LOGICAL_NC_CONFIG": "2"}, ctx) == 2


# --------------------------------------------------------------------------- host, barrier, BF16
def test_open_files_warning(monkeypatch):
    monkeypatch.setattr(neuron_launch, "open_files_limit", lambda: 1024)
    hits = findings({"GPUS_PER_NODE": "32"}, TRN1, "neuron_open_files")
    assert [f.severity for f in hits] == ["warning"] and "ulimit -n 65535" in hits[0].fix
    assert findings({"GPUS_PER_NODE": "2"}, TRN1, "neuron_open_files") == []
    monkeypatch.setattr(neuron_launch, "open_files_limit", lambda: None)   # unlimited
    assert findings({"GPUS_PER_NODE": "32"}, TRN1, "neuron_open_files") == []


def test_hw_barrier_on_trn1_and_the_proxy_fix_text():
    hits = findings({"NEURON_RT_ENABLE_HW_EXECUTION_BARRIER": "1"}, TRN1, "hw_barrier_trn1")
    assert [f.severity for f in hits] == ["warning"]
    assert findings({"NEURON_RT_ENABLE_HW_EXECUTION_BARRIER": "1"}, TRN2, "hw_barrier_trn1") == []
    # On Trn1 the proxy rule no longer recommends turning the barrier on.
    proxy = findings({"NEURON_RT_RANKS_PER_NETWORK_PROXY": "2"}, TRN1, "ranks_per_proxy_hw_barrier")
    assert proxy and "NEURON_RT_ENABLE_HW_EXECUTION_BARRIER=1" not in proxy[0].fix
    assert "NEURON_RT_RANKS_PER_NETWORK_PROXY=1" in proxy[0].fix
    trn2 = findings({"NEURON_RT_RANKS_PER_NETWORK_PROXY": "2",
                     "NEURON_RT_ENABLE_HW_EXECUTION_BARRIER": "0"}, TRN2, "ranks_per_proxy_hw_barrier")
    assert "NEURON_RT_ENABLE_HW_EXECUTION_BARRIER=1" in trn2[0].fix


@pytest.mark.parametrize("name", ["XLA_USE_BF16", "XLA_DOWNCAST_BF16"])
def test_xla_bf16_removed(name):
    hits = findings({name: "1"}, TRN1, "xla_bf16_removed")
    assert [f.severity for f in hits] == ["warning"] and "2.24" in hits[0].message
    assert findings({name: "0"}, TRN1, "xla_bf16_removed") == []


# --------------------------------------------------------------------------- registry details
def test_registry_details_against_the_reference():
    reg = load()
    assert reg.get("NEURON_RT_DBG_CC_DMA_PACKET_SIZE").type == "int_list"   # "Unsigned integer list"
    for name in ("NEURON_RT_CC_CHANNEL_BUFFER_N", "NEURON_RT_CC_CHUNK_SIZE",
                 "NEURON_RT_RANKS_PER_NETWORK_PROXY", "NEURON_SCRATCHPAD_PAGE_SIZE",
                 "NEURON_RT_NUM_CORES"):
        assert reg.get(name).min is None, name          # the reference states no minimum
    # The Neuron layer's values are decided in launch/neuron_layer.py (neuron.sh exports them).
    assert "launch/neuron_layer.py" in reg.get("NEURON_RT_EXEC_TIMEOUT").set_by
    assert "launch/neuron_layer.py" in reg.get("NEURON_LOGICAL_NC_CONFIG").set_by
    assert reg.neuron["families"]["trn3"]["cores_per_device"] == 8    # 8 NeuronCore-v4 per Trainium3
    assert not any(name.startswith("inf1") for name in reg.neuron["devices_per_instance"])


def test_below_minimum_message_is_readable():
    found = [f for f in check({"PRIMUS_NEURON_ROOT_COMM_PORT": "80"}) if f.rule == "type"]
    assert found and found[0].message.startswith("is below the minimum 1024; accepted:"), found
