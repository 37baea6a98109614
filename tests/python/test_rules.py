"""Every rule of the registry: a violating value (severity, variable named) and a passing one.

Values and expectations are written by hand from the references.
"""
from __future__ import annotations

import pytest

from primus_runner.env.registry import load
from primus_runner.env.rules import RULES, CheckContext, Finding, check, exit_code, neuron_family

UNKNOWN = CheckContext(cpu_count=8)          # instance unknown
TRN1 = CheckContext(cpu_count=8, neuron_instance_type="trn1.2xlarge", neuron_family="trn1")
TRN1_32 = CheckContext(cpu_count=8, neuron_instance_type="trn1.32xlarge", neuron_family="trn1")
TRN2 = CheckContext(cpu_count=8, neuron_instance_type="trn2.48xlarge", neuron_family="trn2")
CONTAINER = CheckContext(cpu_count=8, container=True)


def run(env: dict[str, str], context: CheckContext = UNKNOWN, accelerator: str | None = None
        ) -> list[Finding]:
    return check(env, context=context, accelerator=accelerator)


def about(findings: list[Finding], variable: str, rule: str | None = None) -> list[Finding]:
    return [f for f in findings if f.variable == variable and (rule is None or f.rule == rule)]


def expect(env: dict[str, str], severity: str, variable: str, rule: str,
           context: CheckContext = UNKNOWN, accelerator: str | None = None) -> Finding:
    findings = run(env, context, accelerator)
    hits = about(findings, variable, rule)
    assert hits, f"no {rule} finding for {variable} in {findings}"
    finding = hits[0]
    assert finding.severity == severity, finding
    assert finding.message and finding.fix, finding
    assert finding.value == env.get(variable, finding.value)
    return finding


def clean(env: dict[str, str], variable: str, rule: str | None = None,
          context: CheckContext = UNKNOWN, accelerator: str | None = None) -> None:
    """No finding above info for ``variable`` (from ``rule`` when given)."""
    hits = [f for f in about(run(env, context, accelerator), variable, rule)
            if f.severity != "info"]
    assert hits == []


def test_every_rule_has_cases_here():
    import inspect
    source = inspect.getsource(inspect.getmodule(test_every_rule_has_cases_here))
    for rule_id in RULES:
        assert f'"{rule_id}"' in source, f"rule {rule_id} has no test case"


# --------------------------------------------------------------------------- clean
def test_clean_environment_has_no_findings():
    assert run({}) == []
    assert run({"PATH": "/usr/bin:/bin", "HOME": "/root"}) == []
    assert exit_code([]) == 0


def test_empty_value_counts_as_unset():
    assert run({"NEURON_RT_VALIDATE_HASH": "", "MASTER_PORT": "", "NCCL_DEBUG": ""}) == []


def test_exit_codes():
    error = run({"MASTER_PORT": "80"})
    warning = run({"NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS": "100"})
    assert exit_code(error) == 2
    assert exit_code(warning) == 0
    assert exit_code(warning, strict=True) == 2
    assert exit_code(run({"NEURON_RT_INSPECT_OUTPUT_DIR": "/x"}), strict=True) == 0  # info only


def test_errors_sort_first():
    findings = run({"MASTER_PORT": "80", "NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS": "100"})
    assert [f.severity for f in findings] == ["error", "warning"]


# --------------------------------------------------------------------------- type
@pytest.mark.parametrize("value", ["0", "1", "true", "false", "TRUE", "False", "tRuE"])
def test_neuron_bool_accepts(value):
    clean({"NEURON_RT_VALIDATE_HASH": value}, "NEURON_RT_VALIDATE_HASH")


@pytest.mark.parametrize("value", ["yes", "on", "2", " true", "enable"])
def test_neuron_bool_rejects(value):
    f = expect({"NEURON_RT_VALIDATE_HASH": value}, "error", "NEURON_RT_VALIDATE_HASH", "type")
    assert "0, 1, true or false" in f.message


@pytest.mark.parametrize("name, bad, good, severity", [
    ("PRIMUS_LOG_TIMESTAMP", "yes", "0", "error"),                        # switch
    ("NEURON_RT_EXEC_TIMEOUT", "-5", "600", "error"),                     # uint seconds
    ("NEURON_RT_EXEC_TIMEOUT", "30s", "30", "error"),
    ("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", "x", "-1", "error"),             # signed int
    ("JAX_COORDINATOR_PORT", "70000", "1234", "error"),                   # port
    ("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", "loud", "critical", "error"),
    ("NEURON_RT_LOG_LEVEL", "VERBOSE", "info", "error"),                  # enum, any case
    ("NEURON_RT_LOG_LOCATION", "file", "syslog", "error"),
    ("NEURON_RT_INSPECT_DEVICE_PROFILE", "always", "session", "error"),
    ("NEURON_RT_ROOT_COMM_ID", "10.0.0.1", "10.0.0.1:62182", "error"),    # host:port
    ("NEURON_RT_ROOT_COMM_ID", "node1:0", "[fe80::1]:5000", "error"),
    ("NEURON_RT_VISIBLE_CORES", "3-1", "0-3", "error"),                   # range list
    ("NEURON_RT_VISIBLE_CORES", "0-", "0,2,4", "error"),
    ("NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY", "0-1;2", "0-1,3", "error"),
    ("NEURON_RT_CC_STREAM_SPLIT", "3-1", "3:1", "warning"),               # W0:W1, default kept
    ("NEURON_RT_CC_STREAM_SPLIT", "0:1", "1:1", "warning"),
    ("NEURON_RT_HBM_INIT_VAL", "nan", "fp32_nan", "error"),               # enum or uint32
    ("NEURON_RT_HBM_INIT_VAL", "4294967296", "4294967295", "error"),
    ("NEURON_RT_HBM_INIT_VAL", "-1", "off", "error"),
    ("NEURON_RT_S3_CORE_DUMP_PREFIX", "bucket/dumps", "s3://bucket/dumps/%d", "error"),
    ("GPU_ARCHS", "gfx942,gfx950", "gfx942;gfx950", "error"),             # semicolons
    ("GPU_ARCHS", "mi300x", "gfx90a:xnack-", "error"),
    ("XLA_PYTHON_CLIENT_MEM_FRACTION", "1.5", ".97", "error"),
    ("XLA_PYTHON_CLIENT_MEM_FRACTION", "97%", "0.5", "error"),
    ("MASTER_ADDR", "node 1", "node-001.cluster", "error"),
    ("MASTER_ADDR", "", "10.1.2.3", None),
    ("NEURON_RT_CC_CHUNK_SIZE", "2MiB", "2097152", "error"),              # byte count
    ("TF_CPP_MIN_LOG_LEVEL", "5", "3", "error"),
    ("PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND", "NCCL", "DEEP_EP", "error"),
    ("PRIMUS_HIPBLASLT_TUNING_STAGE", "4", "3", "error"),                 # stages 0-3
    ("PRIMUS_LOG_LEVEL", "VERBOSE", "debug", "warning"),                  # treated as INFO
    ("NCCL_DEBUG", "LOUD", "INFO", "warning"),                            # RCCL ignores it
    ("NNODES", "0", "16", "error"),                                       # >= 1
    ("GPUS_PER_NODE", "eight", "8", "error"),
])
def test_type_rule(name, bad, good, severity):
    if severity is not None:
        expect({name: bad}, severity, name, "type")
    clean({name: good}, name, "type")


def test_type_error_fix_names_accepted_values_and_default():
    f = expect({"NEURON_RT_NUMERICAL_ERRORS_VERBOSITY": "loud"}, "error",
               "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", "type")
    assert "none, critical, debug, verbose" in f.fix
    assert "default none" in f.fix


# --------------------------------------------------------------------------- generic
def test_deprecated_names():
    f = expect({"NEURON_RT_NUM_CORES": "4"}, "warning", "NEURON_RT_NUM_CORES", "deprecated")
    assert "NEURON_RT_VISIBLE_CORES" in f.fix and "still applied" in f.message
    f = expect({"NEURON_RT_VIRTUAL_CORE_SIZE": "2"}, "warning", "NEURON_RT_VIRTUAL_CORE_SIZE",
               "deprecated")
    assert "NEURON_LOGICAL_NC_CONFIG" in f.fix
    f = expect({"NEURON_RT_VIRTUAL_CORE_SIZE": "2", "NEURON_LOGICAL_NC_CONFIG": "2"}, "warning",
               "NEURON_RT_VIRTUAL_CORE_SIZE", "deprecated")
    assert "ignored" in f.message
    f = expect({"NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS": "4"}, "warning",
               "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "deprecated")
    assert "ignored" in f.message and "async" in f.fix
    clean({"NEURON_RT_VISIBLE_CORES": "0-3", "NEURON_LOGICAL_NC_CONFIG": "2"},
          "NEURON_RT_VISIBLE_CORES", "deprecated")


def test_unknown_neuron_variable():
    f = expect({"NEURON_RT_VISIBLE_CORE": "0-3"}, "warning", "NEURON_RT_VISIBLE_CORE",
               "unknown_neuron_variable")
    assert "NEURON_RT_VISIBLE_CORES" in f.fix
    assert about(run({"NEURON_CC_FLAGS": "--model-type=transformer"}), "NEURON_CC_FLAGS") == []
    assert about(run({"NEURON_RT_VISIBLE_CORES": "0"}), "NEURON_RT_VISIBLE_CORES") == []


def test_unknown_primus_variable():
    f = expect({"PRIMUS_HIPBLASLT_TUNNING": "1"}, "info", "PRIMUS_HIPBLASLT_TUNNING",
               "unknown_primus_variable")
    assert "PRIMUS_HIPBLASLT_TUNING" in f.fix
    assert about(run({"PRIMUS_ROOT": "/opt/primus-runner"}), "PRIMUS_ROOT") == []


def test_not_forwarded_into_container():
    # A warning: a registered variable the job reads that the
    # container would silently lose.
    f = expect({"OMP_NUM_THREADS": "4"}, "warning", "OMP_NUM_THREADS", "not_forwarded", CONTAINER)
    assert "--env OMP_NUM_THREADS" in f.fix
    # The reference launcher's prefixes and the families the references use are
    # forwarded on every accelerator.
    for name in ("NCCL_DEBUG", "NCCL_NET_PLUGIN", "PRIMUS_GPU_MODEL", "PRIMUS_SKIP_VALIDATION",
                 "NEURON_RT_EXEC_TIMEOUT", "TORCH_NCCL_HIGH_PRIORITY", "NVTE_DEBUG", "HSA_ENABLE_SDMA"):
        assert about(run({name: "1"}, CONTAINER), name, "not_forwarded") == []
    # A name the launch passes with --env is not reported.
    explicit = CONTAINER.replace(forwarded=("OMP_NUM_THREADS",))
    assert about(run({"OMP_NUM_THREADS": "4"}, explicit), "OMP_NUM_THREADS", "not_forwarded") == []
    hit = about(run({"CUDA_DEVICE_MAX_CONNECTIONS": "1"}, CONTAINER, "rocm"),
                "CUDA_DEVICE_MAX_CONNECTIONS", "not_forwarded")
    assert hit and hit[0].severity == "warning"
    assert about(run({"MASTER_ADDR": "n1", "PRIMUS_LOG_LEVEL": "INFO"}, CONTAINER),
                 "MASTER_ADDR") == []
    assert about(run({"PRIMUS_LOG_LEVEL": "INFO"}, CONTAINER), "PRIMUS_LOG_LEVEL") == []
    assert about(run({"NEURON_RT_EXEC_TIMEOUT": "600"}), "NEURON_RT_EXEC_TIMEOUT") == []


def test_secret_values_are_masked():
    findings = run({"NEURON_RT_API_TOKEN": "s3cr3t-value"})
    assert findings and findings[0].value == "****"
    assert all("s3cr3t" not in f.message + f.fix + f.value for f in findings)


# --------------------------------------------------------------------------- Primus
@pytest.mark.parametrize("port, bad", [("80", True), ("1023", True), ("1024", False),
                                       ("29500", False), ("65535", False)])
def test_master_port_range(port, bad):
    if bad:
        f = expect({"MASTER_PORT": port}, "error", "MASTER_PORT", "master_port_range")
        assert "1024-65535" in f.message
    else:
        clean({"MASTER_PORT": port}, "MASTER_PORT")


def test_master_port_above_65535_is_reported_once():
    findings = about(run({"MASTER_PORT": "70000"}), "MASTER_PORT")
    assert [(f.severity, f.rule) for f in findings] == [("error", "master_port_range")]


def test_rank_bounds():
    expect({"NODE_RANK": "2", "NNODES": "2"}, "error", "NODE_RANK", "rank_bounds")
    expect({"RANK": "8", "WORLD_SIZE": "8"}, "error", "RANK", "rank_bounds")
    expect({"LOCAL_RANK": "8", "LOCAL_WORLD_SIZE": "8"}, "error", "LOCAL_RANK", "rank_bounds")
    clean({"NODE_RANK": "1", "NNODES": "2"}, "NODE_RANK")


@pytest.mark.parametrize("value, ok", [("Simple,FOO", False), ("LL256", False), ("^LL128", True),
                                       ("simple,ll", True), ("Simple,LL,LL128", True)])
def test_nccl_proto_values(value, ok):
    if ok:
        clean({"NCCL_PROTO": value}, "NCCL_PROTO")
    else:
        expect({"NCCL_PROTO": value}, "error", "NCCL_PROTO", "nccl_proto_values")


@pytest.mark.parametrize("value, ok", [("a,,b", False), ("all,fused_rope", False),
                                       ("fused rope", False), ("te_patch,", False),
                                       ("all", True), ("none", True), ("", True),
                                       ("te_patch,moe.fix-1", True)])
def test_primus_patches_syntax(value, ok):
    if ok:
        clean({"PRIMUS_PATCHES": value}, "PRIMUS_PATCHES")
    else:
        expect({"PRIMUS_PATCHES": value}, "warning", "PRIMUS_PATCHES", "primus_patches_syntax")


def test_hipblaslt_stage_needs_switch():
    expect({"PRIMUS_HIPBLASLT_TUNING_STAGE": "2"}, "warning", "PRIMUS_HIPBLASLT_TUNING_STAGE",
           "hipblaslt_stage_needs_switch")
    expect({"PRIMUS_HIPBLASLT_TUNING_STAGE": "1", "PRIMUS_HIPBLASLT_TUNING": "0"}, "warning",
           "PRIMUS_HIPBLASLT_TUNING_STAGE", "hipblaslt_stage_needs_switch")
    clean({"PRIMUS_HIPBLASLT_TUNING_STAGE": "2", "PRIMUS_HIPBLASLT_TUNING": "1"},
          "PRIMUS_HIPBLASLT_TUNING_STAGE")
    clean({"PRIMUS_HIPBLASLT_TUNING_STAGE": "0"}, "PRIMUS_HIPBLASLT_TUNING_STAGE")


def test_hipblaslt_stage3_override_file(tmp_path):
    env = {"PRIMUS_HIPBLASLT_TUNING": "1", "PRIMUS_HIPBLASLT_TUNING_STAGE": "3"}
    f = expect(env, "error", "HIPBLASLT_TUNING_OVERRIDE_FILE", "hipblaslt_stage3_override_file")
    assert f.value == ""
    missing = {**env, "HIPBLASLT_TUNING_OVERRIDE_FILE": str(tmp_path / "nope.txt")}
    expect(missing, "error", "HIPBLASLT_TUNING_OVERRIDE_FILE", "hipblaslt_stage3_override_file")
    tuned = tmp_path / "tuned.txt"
    tuned.write_text("kernel overrides\n")
    clean({**env, "HIPBLASLT_TUNING_OVERRIDE_FILE": str(tuned)}, "HIPBLASLT_TUNING_OVERRIDE_FILE")
    # Inside a container the host cannot see the file: info only.
    clean(missing, "HIPBLASLT_TUNING_OVERRIDE_FILE", context=CONTAINER)
    expect(missing, "info", "HIPBLASLT_TUNING_OVERRIDE_FILE", "hipblaslt_stage3_override_file",
           CONTAINER)


def test_hipblaslt_vs_deterministic():
    expect({"PRIMUS_HIPBLASLT_TUNING": "1", "PRIMUS_DETERMINISTIC": "1"}, "error",
           "PRIMUS_HIPBLASLT_TUNING", "hipblaslt_vs_deterministic")
    clean({"PRIMUS_HIPBLASLT_TUNING": "1", "PRIMUS_DETERMINISTIC": "0"}, "PRIMUS_HIPBLASLT_TUNING")
    clean({"PRIMUS_HIPBLASLT_TUNING": "0", "PRIMUS_DETERMINISTIC": "1"}, "PRIMUS_HIPBLASLT_TUNING")


def test_te_tuning_vs_deterministic():
    expect({"TE_HIPBLASLT_TUNING": "1", "PRIMUS_DETERMINISTIC": "1"}, "warning",
           "TE_HIPBLASLT_TUNING", "te_tuning_vs_deterministic")
    clean({"TE_HIPBLASLT_TUNING": "0", "PRIMUS_DETERMINISTIC": "1"}, "TE_HIPBLASLT_TUNING")


def test_te_algo_selection_container():
    f = expect({"TE_HIPBLASLT_ALGO_SELECTION": "1"}, "warning", "TE_HIPBLASLT_ALGO_SELECTION",
               "te_algo_selection_container", CONTAINER)
    assert "--env TE_HIPBLASLT_ALGO_SELECTION=1" in f.fix
    assert about(run({"TE_HIPBLASLT_ALGO_SELECTION": "1"}), "TE_HIPBLASLT_ALGO_SELECTION") == []


def test_hip_visible_devices_vs_gpus():
    f = expect({"GPUS_PER_NODE": "8", "HIP_VISIBLE_DEVICES": "0,1,2,3"}, "error",
               "HIP_VISIBLE_DEVICES", "hip_visible_devices_vs_gpus")
    assert "GPUS_PER_NODE=8" in f.message
    expect({"HIP_VISIBLE_DEVICES": "0,,1"}, "error", "HIP_VISIBLE_DEVICES",
           "hip_visible_devices_vs_gpus")
    expect({"HIP_VISIBLE_DEVICES": "0,0,1"}, "error", "HIP_VISIBLE_DEVICES",
           "hip_visible_devices_vs_gpus")
    expect({"HIP_VISIBLE_DEVICES": "0,1"}, "error", "HIP_VISIBLE_DEVICES",
           "hip_visible_devices_vs_gpus", CheckContext(gpus_per_node=4))
    expect({"GPUS_PER_NODE": "2", "HIP_VISIBLE_DEVICES": "0,1,2,3"}, "info",
           "HIP_VISIBLE_DEVICES", "hip_visible_devices_vs_gpus")
    clean({"GPUS_PER_NODE": "8", "HIP_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}, "HIP_VISIBLE_DEVICES")
    clean({"GPUS_PER_NODE": "4", "HIP_VISIBLE_DEVICES": "4,5,6,7"}, "HIP_VISIBLE_DEVICES")


def test_xla_autotune_level_min():
    f = expect({"XLA_GPU_AUTOTUNE_LEVEL": "0"}, "error", "XLA_GPU_AUTOTUNE_LEVEL",
               "xla_autotune_level_min")
    assert "NaN" in f.message
    clean({"XLA_GPU_AUTOTUNE_LEVEL": "1"}, "XLA_GPU_AUTOTUNE_LEVEL")


def test_xla_flags_syntax():
    expect({"XLA_FLAGS": "xla_gpu_enable_triton_gemm=false"}, "error", "XLA_FLAGS",
           "xla_flags_syntax")
    expect({"XLA_FLAGS_APPEND": "--xla_a='unbalanced"}, "error", "XLA_FLAGS_APPEND",
           "xla_flags_syntax")
    clean({"XLA_FLAGS_APPEND": "--xla_gpu_autotune_level=2 --xla_gpu_enable_command_buffer=''"},
          "XLA_FLAGS_APPEND")


def test_xla_flags_overridden():
    f = expect({"XLA_FLAGS": "--xla_gpu_enable_triton_gemm=true"}, "warning", "XLA_FLAGS",
               "xla_flags_overridden")
    assert "XLA_FLAGS_APPEND" in f.fix
    expect({"XLA_FLAGS": "--xla_gpu_autotune_level=2"}, "warning", "XLA_FLAGS",
           "xla_flags_overridden")
    clean({"XLA_FLAGS": "--xla_gpu_autotune_level=2", "XLA_GPU_AUTOTUNE_LEVEL": "2"}, "XLA_FLAGS")
    clean({"XLA_FLAGS": "--xla_gpu_enable_triton_gemm=false --xla_gpu_enable_command_buffer=''"},
          "XLA_FLAGS")


def test_xla_dump_by_hand():
    expect({"XLA_FLAGS_APPEND": "--xla_dump_to=/tmp/hlo"}, "info", "XLA_FLAGS_APPEND",
           "xla_dump_by_hand")
    assert about(run({"DUMP_HLO": "1"}), "XLA_FLAGS_APPEND") == []


def test_skip_validation():
    expect({"PRIMUS_SKIP_VALIDATION": "1"}, "warning", "PRIMUS_SKIP_VALIDATION", "skip_validation")
    clean({"PRIMUS_SKIP_VALIDATION": "0"}, "PRIMUS_SKIP_VALIDATION")


# Neuron launch rules (rules/neuron_launch.py): one case each here; the full
# acceptance matrix is in test_rules_neuron_launch.py.
def test_neuron_launch_rules_one_case_each():
    expect({"NNODES": "2"}, "error", "NEURON_RT_ROOT_COMM_ID", "neuron_root_comm", accelerator="neuron")
    expect({"NNODES": "2", "PRIMUS_NEURON_EFA_DEVICES": "0", "NEURON_RT_ROOT_COMM_ID": "n0:2000"},
           "error", "PRIMUS_NEURON_EFA_DEVICES", "neuron_efa_multinode", accelerator="neuron")
    expect({"PRIMUS_NEURON_CORES_PER_PROC": "2"}, "error", "PRIMUS_NEURON_CORES_PER_PROC",
           "neuron_cores_per_proc_spmd", accelerator="neuron")
    expect({"GPUS_PER_NODE": "64"}, "error", "GPUS_PER_NODE", "neuron_cores_fit",
           context=TRN1_32, accelerator="neuron")
    expect({"GPUS_PER_NODE": "4", "NEURON_RT_VISIBLE_CORES": "0-7"}, "error",
           "NEURON_RT_VISIBLE_CORES", "neuron_visible_cores_count", context=TRN1_32, accelerator="neuron")
    expect({"GPUS_PER_NODE": "24"}, "error", "GPUS_PER_NODE", "trn1_collective_topology",
           context=TRN1_32, accelerator="neuron")
    expect({"NEURON_RT_ENABLE_HW_EXECUTION_BARRIER": "1"}, "warning",
           "NEURON_RT_ENABLE_HW_EXECUTION_BARRIER", "hw_barrier_trn1", context=TRN1_32, accelerator="neuron")
    expect({"XLA_USE_BF16": "1"}, "warning", "XLA_USE_BF16", "xla_bf16_removed")
    expect({"NEURON_CC_FLAGS": "--lnc=2"}, "error", "NEURON_CC_FLAGS", "neuron_compiler_lnc",
           context=TRN1_32, accelerator="neuron")
    # neuron_open_files and neuron_root_comm_port_reserved read the host: see
    # test_rules_neuron_launch.py (they need a limit / a /proc/sys tree).
    assert {"neuron_open_files", "neuron_root_comm_port_reserved"} <= set(RULES)


# --------------------------------------------------------------------------- Neuron
@pytest.mark.parametrize("value, context, severity", [
    ("3", UNKNOWN, "error"), ("0", UNKNOWN, "error"), ("6", TRN2, "error"),   # power of two
    ("4", TRN1, "error"),                                   # does not divide 2 cores/device
    ("2", TRN1, "error"),                                   # Trn1 (NeuronCore-v2): LNC 1 only
    ("2", CheckContext(cpu_count=8, neuron_instance_type="inf2.24xlarge", neuron_family="inf2"),
     "error"),                                              # Inf2 likewise
    ("1", TRN2, "warning"), ("4", TRN2, "warning"),         # only 2 supported on Trn2+
])
def test_lnc_size_violations(value, context, severity):
    expect({"NEURON_LOGICAL_NC_CONFIG": value}, severity, "NEURON_LOGICAL_NC_CONFIG", "lnc_size",
           context)


@pytest.mark.parametrize("value, context", [("2", TRN2), ("1", TRN1), ("8", UNKNOWN)])
def test_lnc_size_passes(value, context):
    clean({"NEURON_LOGICAL_NC_CONFIG": value}, "NEURON_LOGICAL_NC_CONFIG", "lnc_size", context)


def test_lnc_size_checks_the_deprecated_spelling_when_alone():
    expect({"NEURON_RT_VIRTUAL_CORE_SIZE": "3"}, "error", "NEURON_RT_VIRTUAL_CORE_SIZE", "lnc_size")
    assert about(run({"NEURON_RT_VIRTUAL_CORE_SIZE": "3", "NEURON_LOGICAL_NC_CONFIG": "2"}),
                 "NEURON_RT_VIRTUAL_CORE_SIZE", "lnc_size") == []


def test_visible_cores_exist():
    # trn1.2xlarge: 1 device x 2 cores at LNC 1 -> cores 0-1.
    f = expect({"NEURON_RT_VISIBLE_CORES": "0-3"}, "error", "NEURON_RT_VISIBLE_CORES",
               "visible_cores_exist", TRN1)
    assert "0-1" in f.message
    clean({"NEURON_RT_VISIBLE_CORES": "0-1"}, "NEURON_RT_VISIBLE_CORES", context=TRN1)
    clean({"NEURON_RT_VISIBLE_CORES": "0-31"}, "NEURON_RT_VISIBLE_CORES", context=TRN1_32)
    clean({"NEURON_RT_VISIBLE_CORES": "0-63"}, "NEURON_RT_VISIBLE_CORES", context=TRN2)
    expect({"NEURON_RT_VISIBLE_CORES": "64"}, "error", "NEURON_RT_VISIBLE_CORES",
           "visible_cores_exist", TRN2)
    clean({"NEURON_RT_VISIBLE_CORES": "0-99"}, "NEURON_RT_VISIBLE_CORES")  # instance unknown
    expect({"NEURON_RT_VISIBLE_CORES": "8"}, "error", "NEURON_RT_VISIBLE_CORES",
           "visible_cores_exist", CheckContext(neuron_cores=8))


def test_dma_packetization_cap():
    f = expect({"NEURON_RT_DBG_DMA_PACKETIZATION_SIZE": "1048576"}, "error",
               "NEURON_RT_DBG_DMA_PACKETIZATION_SIZE", "dma_packetization_cap")
    assert "1048575" in f.message
    clean({"NEURON_RT_DBG_DMA_PACKETIZATION_SIZE": "1048575"}, "NEURON_RT_DBG_DMA_PACKETIZATION_SIZE")


def test_xu_queue_clamp():
    f = expect({"NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS": "100"}, "warning",
               "NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS", "xu_queue_clamp")
    assert "63" in f.message
    clean({"NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS": "63"}, "NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS")


def test_cc_dma_packet_size_ignored():
    expect({"NEURON_RT_DBG_CC_DMA_PACKET_SIZE": "4096,4096"}, "warning",
           "NEURON_RT_DBG_CC_DMA_PACKET_SIZE", "cc_dma_packet_size_ignored")
    assert run({}) == []


@pytest.mark.parametrize("barrier", ["0", "false", "FALSE"])
def test_ranks_per_proxy_needs_hw_barrier(barrier):
    expect({"NEURON_RT_RANKS_PER_NETWORK_PROXY": "2",
            "NEURON_RT_ENABLE_HW_EXECUTION_BARRIER": barrier}, "error",
           "NEURON_RT_RANKS_PER_NETWORK_PROXY", "ranks_per_proxy_hw_barrier")


def test_ranks_per_proxy_barrier_defaults():
    env = {"NEURON_RT_RANKS_PER_NETWORK_PROXY": "4"}
    expect(env, "error", "NEURON_RT_RANKS_PER_NETWORK_PROXY", "ranks_per_proxy_hw_barrier", TRN1)
    expect(env, "warning", "NEURON_RT_RANKS_PER_NETWORK_PROXY", "ranks_per_proxy_hw_barrier")
    clean(env, "NEURON_RT_RANKS_PER_NETWORK_PROXY", context=TRN2)
    clean({**env, "NEURON_RT_ENABLE_HW_EXECUTION_BARRIER": "1"}, "NEURON_RT_RANKS_PER_NETWORK_PROXY",
          context=TRN1)
    clean({"NEURON_RT_RANKS_PER_NETWORK_PROXY": "1", "NEURON_RT_ENABLE_HW_EXECUTION_BARRIER": "0"},
          "NEURON_RT_RANKS_PER_NETWORK_PROXY")


def test_register_hbm_mr_needs_map_hbm():
    expect({"NEURON_RT_REGISTER_HBM_MR": "1", "NEURON_RT_MAP_HBM": "0"}, "warning",
           "NEURON_RT_REGISTER_HBM_MR", "register_hbm_mr_needs_map_hbm")
    expect({"NEURON_RT_MAP_HBM": "false"}, "info", "NEURON_RT_REGISTER_HBM_MR",
           "register_hbm_mr_needs_map_hbm")
    expect({"NEURON_RT_REGISTER_HBM_MR": "true"}, "warning", "NEURON_RT_REGISTER_HBM_MR",
           "register_hbm_mr_needs_map_hbm", TRN1)
    clean({"NEURON_RT_REGISTER_HBM_MR": "1", "NEURON_RT_MAP_HBM": "1"}, "NEURON_RT_REGISTER_HBM_MR")
    clean({"NEURON_RT_REGISTER_HBM_MR": "1"}, "NEURON_RT_REGISTER_HBM_MR", context=TRN2)


def test_contiguous_scratchpad_lnc1():
    env = {"NEURON_RT_CONTIGUOUS_SCRATCHPAD": "1", "NEURON_LOGICAL_NC_CONFIG": "1"}
    f = expect(env, "error", "NEURON_RT_CONTIGUOUS_SCRATCHPAD", "contiguous_scratchpad_lnc1", TRN2)
    assert "NRT_INVALID" in f.message
    expect(env, "warning", "NEURON_RT_CONTIGUOUS_SCRATCHPAD", "contiguous_scratchpad_lnc1")
    clean({"NEURON_RT_CONTIGUOUS_SCRATCHPAD": "1"}, "NEURON_RT_CONTIGUOUS_SCRATCHPAD", context=TRN2)
    clean(env, "NEURON_RT_CONTIGUOUS_SCRATCHPAD", context=TRN1)
    clean({**env, "NEURON_RT_CONTIGUOUS_SCRATCHPAD": "0"}, "NEURON_RT_CONTIGUOUS_SCRATCHPAD",
          context=TRN2)


def test_scratchpad_page_size_ignored():
    expect({"NEURON_SCRATCHPAD_PAGE_SIZE": "256", "NEURON_RT_CONTIGUOUS_SCRATCHPAD": "1"},
           "warning", "NEURON_SCRATCHPAD_PAGE_SIZE", "scratchpad_page_size_ignored")
    expect({"NEURON_SCRATCHPAD_PAGE_SIZE": "256"}, "info", "NEURON_SCRATCHPAD_PAGE_SIZE",
           "scratchpad_page_size_ignored")
    clean({"NEURON_SCRATCHPAD_PAGE_SIZE": "256", "NEURON_RT_CONTIGUOUS_SCRATCHPAD": "0"},
          "NEURON_SCRATCHPAD_PAGE_SIZE")


def test_low_latency_affinity_cpus():
    f = expect({"NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY": "40-47,88-95"}, "error",
               "NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY", "low_latency_affinity_cpus")
    assert "8 CPUs" in f.message
    clean({"NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY": "4-7"},
          "NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY")
    clean({"NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY": "40-47,88-95"},
          "NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY", context=CheckContext(cpu_count=192))


def test_neuron_log_pairing():
    f = expect({"NEURON_RT_LOG_LEVEL": "INFO"}, "warning", "NEURON_RT_LOG_LEVEL",
               "neuron_log_pairing")
    assert "syslog" in f.message
    f = expect({"NEURON_RT_LOG_LOCATION": "console"}, "warning", "NEURON_RT_LOG_LOCATION",
               "neuron_log_pairing")
    assert "ERROR" in f.message
    clean({"NEURON_RT_LOG_LEVEL": "INFO", "NEURON_RT_LOG_LOCATION": "console"},
          "NEURON_RT_LOG_LEVEL")


def test_log_submodule_names():
    f = expect({"NEURON_RT_LOG_LEVEL_FOO": "INFO"}, "warning", "NEURON_RT_LOG_LEVEL_FOO",
               "log_submodule_names")
    assert "HAL" in f.message
    f = expect({"NEURON_RT_LOG_LOCATION_hal": "syslog"}, "warning", "NEURON_RT_LOG_LOCATION_hal",
               "log_submodule_names")
    assert "NEURON_RT_LOG_LOCATION_HAL" in f.fix
    assert about(run({"NEURON_RT_LOG_LEVEL_FOO": "INFO"}), "NEURON_RT_LOG_LEVEL_FOO",
                 "unknown_neuron_variable") == []
    assert run({"NEURON_RT_LOG_LEVEL_HAL": "INFO", "NEURON_RT_LOG_LOCATION_NRT": "console"}) == []
    expect({"NEURON_RT_LOG_LEVEL_HAL": "LOUD"}, "error", "NEURON_RT_LOG_LEVEL_HAL", "type")


def test_oom_dump_dir_length():
    expect({"NEURON_RT_OOM_DUMP_DIRECTORY": "/" + "d" * 200}, "warning",
           "NEURON_RT_OOM_DUMP_DIRECTORY", "oom_dump_dir_length")
    clean({"NEURON_RT_OOM_DUMP_DIRECTORY": "/" + "d" * 199}, "NEURON_RT_OOM_DUMP_DIRECTORY")


@pytest.mark.parametrize("value, ok", [("1000", False), ("0", False), ("262143", False),
                                       ("262144", True), ("1", True), ("1048576", True)])
def test_debug_stream_buffer_pow2(value, ok):
    if ok:
        clean({"NEURON_RT_DEBUG_STREAM_BUFFER_SIZE": value}, "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE")
    else:
        expect({"NEURON_RT_DEBUG_STREAM_BUFFER_SIZE": value}, "error",
               "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE", "debug_stream_buffer_pow2")


def test_inspect_on_fail_implies():
    on_fail = {"NEURON_RT_INSPECT_ON_FAIL": "1"}
    expect({**on_fail, "NEURON_RT_INSPECT_ENABLE": "0"}, "warning", "NEURON_RT_INSPECT_ENABLE",
           "inspect_on_fail_implies")
    expect({**on_fail, "NEURON_RT_INSPECT_DEVICE_PROFILE": "session"}, "warning",
           "NEURON_RT_INSPECT_DEVICE_PROFILE", "inspect_on_fail_implies")
    expect({**on_fail, "NEURON_RT_INSPECT_SYSTEM_PROFILE": "true"}, "warning",
           "NEURON_RT_INSPECT_SYSTEM_PROFILE", "inspect_on_fail_implies")
    assert [f for f in run({**on_fail, "NEURON_RT_INSPECT_DEVICE_PROFILE": "model"})
            if f.severity != "info"] == []


def test_inspect_warmup_model_mode():
    expect({"NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP": "5",
            "NEURON_RT_INSPECT_DEVICE_PROFILE": "session"}, "warning",
           "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "inspect_warmup_model_mode")
    expect({"NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP": "5"}, "warning",
           "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "inspect_warmup_model_mode")
    for mode in ("model", "1"):
        clean({"NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP": "5",
               "NEURON_RT_INSPECT_DEVICE_PROFILE": mode}, "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP")
    clean({"NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP": "5", "NEURON_RT_INSPECT_ON_FAIL": "1"},
          "NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP")


def test_inspect_filter_nc_visible():
    enabled = {"NEURON_RT_INSPECT_ENABLE": "1"}
    f = expect({**enabled, "NEURON_RT_VISIBLE_CORES": "0-3",
                "NEURON_RT_INSPECT_EVENT_FILTER_NC": "2,4"}, "error",
               "NEURON_RT_INSPECT_EVENT_FILTER_NC", "inspect_filter_nc_visible")
    assert "4" in f.message and "NEURON_RT_VISIBLE_CORES=0-3" in f.message
    clean({**enabled, "NEURON_RT_VISIBLE_CORES": "0-3", "NEURON_RT_INSPECT_EVENT_FILTER_NC": "1-3"},
          "NEURON_RT_INSPECT_EVENT_FILTER_NC")
    expect({**enabled, "NEURON_RT_INSPECT_EVENT_FILTER_NC": "2"}, "error",
           "NEURON_RT_INSPECT_EVENT_FILTER_NC", "inspect_filter_nc_visible", TRN1)
    clean({**enabled, "NEURON_RT_INSPECT_EVENT_FILTER_NC": "1"},
          "NEURON_RT_INSPECT_EVENT_FILTER_NC", context=TRN1)
    expect({**enabled, "NEURON_RT_INSPECT_EVENT_FILTER_NC": "0-1000000"}, "error",
           "NEURON_RT_INSPECT_EVENT_FILTER_NC", "inspect_filter_nc_visible", TRN2)
    f = expect({**enabled, "NEURON_RT_INSPECT_EVENT_FILTER_NC": "7"}, "info",
               "NEURON_RT_INSPECT_EVENT_FILTER_NC", "inspect_filter_nc_visible")
    assert "PRIMUS_NEURON_INSTANCE" in f.fix


@pytest.mark.parametrize("value, severity", [("hardware;software", "error"),
                                             ("hardware,,software", "error"),
                                             ("hardware,^", "error"),
                                             ("hardware,dma_foo", "info")])
def test_inspect_filter_type_names(value, severity):
    expect({"NEURON_RT_INSPECT_ENABLE": "1", "NEURON_RT_INSPECT_EVENT_FILTER_TYPE": value},
           severity, "NEURON_RT_INSPECT_EVENT_FILTER_TYPE", "inspect_filter_type_names")


def test_inspect_filter_type_passes():
    assert run({"NEURON_RT_INSPECT_ENABLE": "1",
                "NEURON_RT_INSPECT_EVENT_FILTER_TYPE": "hardware,^cc_running"}) == []
    assert run({"NEURON_RT_INSPECT_ENABLE": "1",
                "NEURON_RT_INSPECT_EVENT_FILTER_TYPE": "software"}) == []


def test_inspect_without_enable():
    expect({"NEURON_RT_INSPECT_OUTPUT_DIR": "/fsx/profiles"}, "info",
           "NEURON_RT_INSPECT_OUTPUT_DIR", "inspect_without_enable")
    assert run({"NEURON_RT_INSPECT_OUTPUT_DIR": "/fsx/profiles",
                "NEURON_RT_INSPECT_ENABLE": "true"}) == []


def test_profile_buf_instruction_zero():
    expect({"NEURON_RT_PROFILE_BUF_INSTRUCTION_MB": "0"}, "warning",
           "NEURON_RT_PROFILE_BUF_INSTRUCTION_MB", "profile_buf_instruction_zero")
    clean({"NEURON_RT_PROFILE_BUF_INSTRUCTION_MB": "128"}, "NEURON_RT_PROFILE_BUF_INSTRUCTION_MB")
    assert run({"NEURON_RT_PROFILE_BUF_H2D_DMA_MB": "0"}) == []  # 0 is the documented off switch


def test_fail_on_nan_verbosity():
    f = expect({"NEURON_FAIL_ON_NAN": "1", "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY": "none"},
               "warning", "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", "fail_on_nan_verbosity")
    assert "critical" in f.message
    clean({"NEURON_FAIL_ON_NAN": "1", "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY": "critical"},
          "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY")
    clean({"NEURON_FAIL_ON_NAN": "0", "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY": "none"},
          "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY")


def test_allow_legacy_neff():
    f = expect({"NEURON_RT_ALLOW_LEGACY_NEFF": "1"}, "warning", "NEURON_RT_ALLOW_LEGACY_NEFF",
               "allow_legacy_neff")
    assert "testing" in f.message
    clean({"NEURON_RT_ALLOW_LEGACY_NEFF": "0"}, "NEURON_RT_ALLOW_LEGACY_NEFF")


def test_disable_execution_barrier():
    f = expect({"NEURON_RT_DISABLE_EXECUTION_BARRIER": "true"}, "warning",
               "NEURON_RT_DISABLE_EXECUTION_BARRIER", "disable_execution_barrier")
    assert "SPMD" in f.message
    clean({"NEURON_RT_DISABLE_EXECUTION_BARRIER": "false"}, "NEURON_RT_DISABLE_EXECUTION_BARRIER")


# --------------------------------------------------------------------------- accelerator, context
def test_accelerator_downgrades_what_has_no_effect():
    f = expect({"NEURON_RT_VALIDATE_HASH": "yes"}, "info", "NEURON_RT_VALIDATE_HASH", "type",
               accelerator="rocm")
    assert "no effect" in f.message
    expect({"NCCL_PROTO": "bogus"}, "info", "NCCL_PROTO", "nccl_proto_values", accelerator="neuron")
    expect({"NCCL_PROTO": "bogus"}, "error", "NCCL_PROTO", "nccl_proto_values", accelerator="rocm")
    expect({"MASTER_PORT": "80"}, "error", "MASTER_PORT", "master_port_range", accelerator="cpu")
    expect({"NEURON_RT_VALIDATE_HASH": "yes", "PRIMUS_ACCELERATOR": "cuda"}, "info",
           "NEURON_RT_VALIDATE_HASH", "type")


def test_context_from_env():
    ctx = CheckContext.from_env({"PRIMUS_NEURON_INSTANCE": "trn1n.32xlarge", "GPUS_PER_NODE": "4"},
                                container=True)
    assert (ctx.neuron_family, ctx.gpus_per_node, ctx.container) == ("trn1", 4, True)
    assert neuron_family("trn2u.48xlarge") == "trn2"
    assert neuron_family("inf2.xlarge") == "inf2"
    assert neuron_family("m5.large") is None
    assert neuron_family(None) is None


def test_instance_type_from_the_env_is_used():
    findings = check({"PRIMUS_NEURON_INSTANCE": "trn1.2xlarge", "NEURON_RT_VISIBLE_CORES": "0-3"})
    assert [f.rule for f in about(findings, "NEURON_RT_VISIBLE_CORES")] == ["visible_cores_exist"]


def test_values_are_data():
    hostile = "$(touch /tmp/primus-pwned); `id` ; rm -rf * \n'\""
    findings = run({"NEURON_RT_VISIBLE_CORES": hostile, "PRIMUS_PATCHES": hostile})
    assert {f.value for f in findings} == {hostile}
    import os
    assert not os.path.exists("/tmp/primus-pwned")


def test_every_default_produces_no_error_or_warning():
    reg = load()
    for var in reg.variables:
        if var.default in (None, "") or var.family or var.deprecated:
            continue
        bad = [f for f in run({var.name: var.default}) if f.severity in ("error", "warning")]
        # Setting only one of the Neuron log pair is itself the documented warning.
        bad = [f for f in bad if f.rule != "neuron_log_pairing"]
        assert bad == [], (var.name, bad)


def test_detected_device_facts_from_the_env():
    # What the devices helper exports on a trn1.32xlarge: 16 devices x 2 cores, LNC 1.
    detected = {"PRIMUS_NEURON_DEVICES": "16", "PRIMUS_NEURON_CORES_PER_DEVICE": "2",
                "PRIMUS_NEURON_DEFAULT_LNC": "1", "PRIMUS_NEURON_LOGICAL_CORES": "32"}
    ctx = CheckContext.from_env(detected)
    assert (ctx.neuron_cores, ctx.neuron_devices, ctx.neuron_family) == (32, 16, None)
    findings = check({**detected, "NEURON_RT_VISIBLE_CORES": "0-31"})
    assert about(findings, "NEURON_RT_VISIBLE_CORES") == []
    findings = check({**detected, "NEURON_RT_VISIBLE_CORES": "32"})
    assert [f.rule for f in about(findings, "NEURON_RT_VISIBLE_CORES")] == ["visible_cores_exist"]
    # LNC 2 fuses the two cores of each device: 16 logical cores remain.
    findings = check({**detected, "NEURON_LOGICAL_NC_CONFIG": "2", "NEURON_RT_VISIBLE_CORES": "16"})
    assert [f.rule for f in about(findings, "NEURON_RT_VISIBLE_CORES")] == ["visible_cores_exist"]
    # 4 does not divide the 2 cores of a device, even without a known family.
    findings = check({**detected, "NEURON_LOGICAL_NC_CONFIG": "4"})
    assert [(f.severity, f.rule) for f in about(findings, "NEURON_LOGICAL_NC_CONFIG")] == [
        ("error", "lnc_size")]
    # Device facts alone do not say the family: the barrier default stays unknown.
    findings = check({**detected, "NEURON_RT_RANKS_PER_NETWORK_PROXY": "2"})
    assert [f.severity for f in about(findings, "NEURON_RT_RANKS_PER_NETWORK_PROXY")] == ["warning"]


@pytest.mark.parametrize("addr", ["localhost", "127.0.0.1", "127.0.1.1", "::1", "LOCALHOST"])
def test_master_addr_multinode(addr):
    f = expect({"NNODES": "4", "MASTER_ADDR": addr}, "warning", "MASTER_ADDR", "master_addr_multinode")
    assert "NNODES=4" in f.message


def test_master_addr_multinode_passes():
    clean({"NNODES": "4", "MASTER_ADDR": "node-001"}, "MASTER_ADDR")
    clean({"NNODES": "1", "MASTER_ADDR": "localhost"}, "MASTER_ADDR")


def test_jax_coordinator_single_node():
    expect({"NNODES": "1", "JAX_COORDINATOR_IP": "node-001"}, "warning", "JAX_COORDINATOR_IP",
           "jax_coordinator_single_node")
    clean({"NNODES": "2", "JAX_COORDINATOR_IP": "node-001"}, "JAX_COORDINATOR_IP")


def test_jax_coordinator_port_clash():
    base = {"RUN_MODE": "torchrun", "MASTER_PORT": "29500", "NNODES": "2"}
    f = expect({**base, "JAX_COORDINATOR_PORT": "29500"}, "error", "JAX_COORDINATOR_PORT",
               "jax_coordinator_port_clash")
    assert "MASTER_PORT=29500" in f.message and "single" in f.fix
    expect({**base, "JAX_COORDINATOR_PORT": "29501"}, "error", "JAX_COORDINATOR_PORT",
           "jax_coordinator_port_clash")
    expect({**base, "JAX_COORDINATOR_ADDRESS": "node-001:29500"}, "error",
           "JAX_COORDINATOR_ADDRESS", "jax_coordinator_port_clash")
    clean({**base, "JAX_COORDINATOR_PORT": "29502"}, "JAX_COORDINATOR_PORT")
    # single mode: no torchrun store, the coordinator may take MASTER_PORT
    clean({**base, "RUN_MODE": "single", "JAX_COORDINATOR_PORT": "29500"}, "JAX_COORDINATOR_PORT")
    # by hand, run mode unknown: no finding
    clean({"MASTER_PORT": "29500", "JAX_COORDINATOR_PORT": "29500"}, "JAX_COORDINATOR_PORT")


def test_dump_hlo_dir_without_dump():
    expect({"DUMP_HLO_DIR": "/fsx/hlo"}, "info", "DUMP_HLO_DIR", "dump_hlo_dir_without_dump")
    assert run({"DUMP_HLO_DIR": "/fsx/hlo", "DUMP_HLO": "1"}) == []


def test_unknown_accelerator_checks_everything():
    findings = run({"PRIMUS_ACCELERATOR": "gpu", "NEURON_RT_VALIDATE_HASH": "yes",
                    "NCCL_PROTO": "bogus"})
    assert {(f.variable, f.severity) for f in findings} == {
        ("PRIMUS_ACCELERATOR", "error"), ("NEURON_RT_VALIDATE_HASH", "error"),
        ("NCCL_PROTO", "error")}


# --------------------------------------------------------------------------- this host
def _fixture(name: str) -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "sysfs" / name)


def test_nic_values_on_host():
    root = _fixture("eno1-gid3")
    f = expect({"PRIMUS_SYSFS_ROOT": root, "NCCL_SOCKET_IFNAME": "eth0"}, "error",
               "NCCL_SOCKET_IFNAME", "nic_values_on_host")
    assert "names no interface of this host for eth0" in f.message and "=eno1" in f.fix
    expect({"PRIMUS_SYSFS_ROOT": root, "NCCL_IB_HCA": "mlx5_3"}, "error", "NCCL_IB_HCA",
           "nic_values_on_host")
    expect({"PRIMUS_SYSFS_ROOT": root, "GLOO_SOCKET_IFNAME": "^docker0"}, "error",
           "GLOO_SOCKET_IFNAME", "nic_values_on_host")
    f = expect({"PRIMUS_SYSFS_ROOT": root, "NCCL_IB_GID_INDEX": "1"}, "error",
               "NCCL_IB_GID_INDEX", "nic_values_on_host")
    assert f.fix == "export NCCL_IB_GID_INDEX=3 (the RoCE v2 IPv4 GID here)"
    clean({"PRIMUS_SYSFS_ROOT": root, "NCCL_SOCKET_IFNAME": "eno", "NCCL_IB_HCA": "=mlx5_0:1",
           "NCCL_IB_GID_INDEX": "3", "GLOO_SOCKET_IFNAME": "eno1"}, "NCCL_SOCKET_IFNAME",
          "nic_values_on_host")
    # values for a container are checked inside it, not against the host
    assert about(run({"PRIMUS_SYSFS_ROOT": root, "NCCL_IB_HCA": "mlx5_3"}, CONTAINER),
                 "NCCL_IB_HCA", "nic_values_on_host") == []


def test_gpu_masks_on_host():
    root = _fixture("mi300x-roce")
    f = expect({"PRIMUS_SYSFS_ROOT": root, "ROCR_VISIBLE_DEVICES": "4,5,6,7",
                "HIP_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}, "error", "HIP_VISIBLE_DEVICES",
               "gpu_masks_on_host", accelerator="rocm")
    assert f.message == ("indexes the 4 GPU(s) left after ROCR_VISIBLE_DEVICES=4,5,6,7 "
                         "(HIP_VISIBLE_DEVICES applies on top of it, counting from 0): 4, 5, 6, 7 "
                         "name(s) nothing")
    f = expect({"PRIMUS_SYSFS_ROOT": root, "ROCR_VISIBLE_DEVICES": "6,8"}, "error",
               "ROCR_VISIBLE_DEVICES", "gpu_masks_on_host", accelerator="rocm")
    assert f.message == "names GPU(s) 8, but this host has 8 (0-7)"
    clean({"PRIMUS_SYSFS_ROOT": root, "ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "0,1"},
          "HIP_VISIBLE_DEVICES", "gpu_masks_on_host", accelerator="rocm")


# --------------------------------------------------------------------------- launch refusals
def test_pet_rdzv_exported_is_an_error_unless_elastic():
    env = {"PET_RDZV_BACKEND": "c10d", "NNODES": "2", "MASTER_ADDR": "10.0.0.1"}
    f = expect(env, "error", "PET_RDZV_BACKEND", "pet_rdzv_exported")
    assert "PRIMUS_ELASTIC=1" in f.fix
    clean({**env, "PRIMUS_ELASTIC": "1"}, "PET_RDZV_BACKEND", "pet_rdzv_exported")


SLURM2 = {"SLURM_JOB_ID": "7", "SLURM_NNODES": "2", "SLURM_NODELIST": "n[1-2]", "SLURM_NODEID": "1"}


def test_scheduler_contradiction_names_both_values_and_only_the_users():
    f = expect({**SLURM2, "NODE_RANK": "0"}, "error", "NODE_RANK", "scheduler_contradiction")
    assert "SLURM_NODEID=1" in f.message and "unset NODE_RANK" in f.fix
    clean({**SLURM2, "NODE_RANK": "1", "NNODES": "2"}, "NODE_RANK", "scheduler_contradiction")
    # A value the launcher detected or a layer set is not the user's: never compared.
    clean({**SLURM2, "PRIMUS_DETECTED_VARS": "NODE_RANK", "NODE_RANK": "0"}, "NODE_RANK",
          "scheduler_contradiction")
    clean({**SLURM2, "NODE_RANK": "0", "PRIMUS_ENV_ORIGINS": "NODE_RANK:neuron"}, "NODE_RANK",
          "scheduler_contradiction")
    expect({**SLURM2, "NODE_RANK": "0", "PRIMUS_ENV_ORIGINS": "NODE_RANK:cli"}, "error", "NODE_RANK",
           "scheduler_contradiction")


@pytest.mark.parametrize("env, variable, text", [
    ({"SLURM_JOB_ID": "7", "SLURM_NNODES": "3", "SLURM_NODELIST": "n[1-2]", "SLURM_NODEID": "0"},
     "SLURM_NNODES", "names 2 hosts"),
    ({"SLURM_JOB_ID": "7", "SLURM_NNODES": "2", "SLURM_NODELIST": "n[1-2]"}, "SLURM_JOB_ID",
     "neither SLURM_NODEID nor SLURM_PROCID"),
    ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "10", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
     "OMPI_COMM_WORLD_SIZE", "not a multiple of OMPI_COMM_WORLD_LOCAL_SIZE=4"),
    ({"PET_NNODES": "1:4", "PET_NODE_RANK": "0", "PET_MASTER_ADDR": "m"}, "PET_NNODES", "elastic range"),
])
def test_scheduler_environment(env, variable, text):
    f = expect(env, "error", variable, "scheduler_environment")
    assert text in f.message
    clean({**env, "SLURM_NODEID": "0", "SLURM_NNODES": "2", "OMPI_COMM_WORLD_SIZE": "8", "NNODES": "2"},
          variable, "scheduler_environment")


@pytest.mark.parametrize("name, bad, good, rule_id", [
    ("PRIMUS_ACCELERATOR", "gpu", "Neuron", "accelerator_known"),
    ("PRIMUS_GPU_MODEL", "MI250", "mi355x", "gpu_model_known"),
    ("PRIMUS_NEURON_INSTANCE", "trn1.64xlarge", "trn3.48xlarge", "neuron_instance_known"),
])
def test_detection_overrides_are_rules(name, bad, good, rule_id):
    """The launcher's detection refuses these values with the same finding (one verdict)."""
    f = expect({name: bad}, "error", name, rule_id)
    assert "accepted:" in f.message and name in f.fix
    clean({name: good}, name)
    assert [x.rule for x in run({name: bad}) if x.variable == name] == [rule_id]   # the type rule stays out


def test_bare_rank_world_size_is_an_error_outside_a_scheduler():
    expect({"RANK": "1", "WORLD_SIZE": "2"}, "error", "RANK", "bare_rank_world_size")
    clean({"RANK": "1", "WORLD_SIZE": "2", "NNODES": "2"}, "RANK", "bare_rank_world_size")
    clean({"RANK": "1", "WORLD_SIZE": "2", "SLURM_JOB_ID": "7"}, "RANK", "bare_rank_world_size")


def test_master_addr_resolves_is_a_host_probe(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/hosts").write_text("127.0.0.1 localhost\n10.0.0.1 node0\n")
    env = {"MASTER_ADDR": "node-zero", "NNODES": "2", "NODE_RANK": "1", "PRIMUS_SYSFS_ROOT": str(tmp_path)}
    expect(env, "error", "MASTER_ADDR", "master_addr_resolves")
    clean({**env, "MASTER_ADDR": "node0"}, "MASTER_ADDR", "master_addr_resolves")
    clean({**env, "NODE_RANK": "0"}, "MASTER_ADDR", "master_addr_resolves")
    clean(env, "MASTER_ADDR", "master_addr_resolves", context=UNKNOWN.replace(host_probes=False))
def test_accelerators_free_is_a_host_probe_naming_the_holder(tmp_path):
    """A real process holds the tree's /dev/kfd; the tree's proc is the real /proc."""
    import os
    import subprocess
    import sys

    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/kfd").write_text("")
    (tmp_path / "proc").symlink_to("/proc")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1]); "
                               "print('up', flush=True); time.sleep(120)", str(tmp_path / "dev/kfd")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "up\n"
        env = {"PRIMUS_ACCELERATOR": "rocm", "PRIMUS_SYSFS_ROOT": str(tmp_path), "PRIMUS_DEV_ROOT": str(tmp_path)}
        f = expect(env, "error", "PRIMUS_ALLOW_BUSY_DEVICES", "accelerators_free")
        assert f"pid {holder.pid} (user " in f.message and "holds /dev/kfd" in f.message
        assert f"kill {holder.pid}" in f.fix and "PRIMUS_ALLOW_BUSY_DEVICES=1" in f.fix
        clean({**env, "PRIMUS_ALLOW_BUSY_DEVICES": "1"}, "PRIMUS_ALLOW_BUSY_DEVICES", "accelerators_free")
        clean({**env, "PRIMUS_ACCELERATOR": "neuron"}, "PRIMUS_ALLOW_BUSY_DEVICES", "accelerators_free")
        clean({**env, "PRIMUS_ACCELERATOR": "cpu"}, "PRIMUS_ALLOW_BUSY_DEVICES", "accelerators_free")
        clean(env, "PRIMUS_ALLOW_BUSY_DEVICES", "accelerators_free",
              context=UNKNOWN.replace(host_probes=False))
        # A task of another Slurm step is a holder; a task of this step (srun-native) is not.
        expect({**env, "SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0"}, "error", "PRIMUS_ALLOW_BUSY_DEVICES",
               "accelerators_free")
    finally:
        holder.kill()
        holder.wait()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1]); "
                               "print('up', flush=True); time.sleep(120)", str(tmp_path / "dev/kfd")],
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0"})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "up\n"
        clean({**env, "SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0"}, "PRIMUS_ALLOW_BUSY_DEVICES",
              "accelerators_free")
        expect({**env, "SLURM_JOB_ID": "7", "SLURM_STEP_ID": "1"}, "error", "PRIMUS_ALLOW_BUSY_DEVICES",
               "accelerators_free")
    finally:
        holder.kill()
        holder.wait()


# --------------------------------------------------------------------------- Build 5
# The references' stated constraints, each a rule with a failing and a passing case.
SYSFS = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"


@pytest.mark.parametrize("value, bad", [("2", True), ("-1", True), ("0", False), ("1", False)])
def test_nccl_pxn_disable_values(value, bad):
    env = {"NCCL_PXN_DISABLE": value}
    if bad:
        expect(env, "error", "NCCL_PXN_DISABLE", "nccl_pxn_disable_values")
    else:
        clean(env, "NCCL_PXN_DISABLE")


def test_nccl_algo_is_registered_and_checked():
    assert load().get("NCCL_ALGO") is not None
    finding = expect({"NCCL_ALGO": "foo"}, "error", "NCCL_ALGO", "nccl_algo_values")
    assert "'foo'" in finding.message and "Ring" in finding.message
    expect({"NCCL_ALGO": "ring;foo:tree"}, "error", "NCCL_ALGO", "nccl_algo_values")
    expect({"NCCL_ALGO": "ring;tree"}, "error", "NCCL_ALGO", "nccl_algo_values")
    for good in ("Ring", "ring,TREE", "^NVLS", "Ring;allreduce:tree,collnetdirect;broadcast:ring",
                 "CollNetChain,PAT,NVLSTree"):
        clean({"NCCL_ALGO": good}, "NCCL_ALGO")


def test_map_hbm_trn2_plus():
    expect({"NEURON_RT_MAP_HBM": "1"}, "warning", "NEURON_RT_MAP_HBM", "map_hbm_trn2_plus",
           TRN1, "neuron")
    clean({"NEURON_RT_MAP_HBM": "1"}, "NEURON_RT_MAP_HBM", context=TRN2, accelerator="neuron")
    clean({"NEURON_RT_MAP_HBM": "0"}, "NEURON_RT_MAP_HBM", context=TRN1, accelerator="neuron")


@pytest.mark.parametrize("value, bad", [("-2", True), ("-100", True), ("-1", False), ("0", False),
                                        ("5", False)])
def test_dump_inputs_on_err_values(value, bad):
    env = {"NEURON_RT_DBG_DUMP_INPUTS_ON_ERR": value}
    if bad:
        expect(env, "error", "NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", "dump_inputs_on_err_values")
    else:
        clean(env, "NEURON_RT_DBG_DUMP_INPUTS_ON_ERR")


def test_xla_flags_append_cannot_get_round_the_autotune_minimum():
    finding = expect({"XLA_FLAGS_APPEND": "--xla_gpu_enable_triton_gemm=true --xla_gpu_autotune_level=0"},
                     "error", "XLA_FLAGS_APPEND", "xla_autotune_level_min")
    assert "--xla_gpu_autotune_level=0" in finding.message
    # The last occurrence wins, as in XLA.
    clean({"XLA_FLAGS_APPEND": "--xla_gpu_autotune_level=0 --xla_gpu_autotune_level=2"},
          "XLA_FLAGS_APPEND", "xla_autotune_level_min")
    clean({"XLA_FLAGS_APPEND": "--xla_gpu_autotune_level=1"}, "XLA_FLAGS_APPEND")


def test_jax_coordinator_port_on_one_node():
    expect({"JAX_COORDINATOR_PORT": "1234", "NNODES": "1"}, "warning", "JAX_COORDINATOR_PORT",
           "jax_coordinator_single_node")
    clean({"JAX_COORDINATOR_PORT": "1234", "NNODES": "2"}, "JAX_COORDINATOR_PORT")


def test_jax_coordinator_port_set_on_one_node_of_a_cluster_is_a_mismatch():
    from primus_runner.cluster.clustercheck import compare

    def report(node: int, uniform: dict[str, str]) -> dict[str, object]:
        return {"node": node, "host": f"n{node}", "uniform": uniform, "meaning": {}, "versions": {}}

    problems = compare([report(0, {"JAX_COORDINATOR_PORT": "1234"}), report(1, {})])
    assert len(problems) == 1 and problems[0].startswith("JAX_COORDINATOR_PORT differs")
    assert "<unset> on node 1" in problems[0]
    assert compare([report(0, {"JAX_COORDINATOR_PORT": "1234"}),
                    report(1, {"JAX_COORDINATOR_PORT": "1234"})]) == []


def test_neuron_num_cores_vs_visible():
    finding = expect({"NEURON_RT_NUM_CORES": "4", "NEURON_RT_VISIBLE_CORES": "0-7"}, "error",
                     "NEURON_RT_NUM_CORES", "neuron_num_cores_vs_visible")
    assert "names 8" in finding.message
    clean({"NEURON_RT_NUM_CORES": "8", "NEURON_RT_VISIBLE_CORES": "0-7"}, "NEURON_RT_NUM_CORES",
          "neuron_num_cores_vs_visible")


def test_databricks_token_without_host():
    hits = about(run({"DATABRICKS_TOKEN": "dapi-secret"}), "DATABRICKS_TOKEN",
                 "databricks_token_without_host")
    assert [f.severity for f in hits] == ["warning"] and hits[0].fix
    finding = hits[0]
    assert finding.value == "****" and "dapi-secret" not in finding.message + finding.fix
    clean({"DATABRICKS_TOKEN": "dapi-secret", "DATABRICKS_HOST": "https://x.cloud.databricks.com"},
          "DATABRICKS_TOKEN")


def test_nccl_ifname_prefix_overlap():
    root = str(SYSFS / "bond-vlan")
    finding = expect({"NCCL_SOCKET_IFNAME": "bond0", "PRIMUS_SYSFS_ROOT": root}, "error",
                     "NCCL_SOCKET_IFNAME", "nccl_ifname_prefix_overlap")
    assert "bond0.2093" in finding.message and finding.fix.endswith("NCCL_SOCKET_IFNAME==bond0")
    # In an exclusion list the overlap only narrows NCCL's choice: a warning.
    expect({"NCCL_SOCKET_IFNAME": "^bond0", "PRIMUS_SYSFS_ROOT": root}, "warning",
           "NCCL_SOCKET_IFNAME", "nccl_ifname_prefix_overlap")
    clean({"NCCL_SOCKET_IFNAME": "=bond0", "PRIMUS_SYSFS_ROOT": root}, "NCCL_SOCKET_IFNAME")
    # A value the launcher detected is not the user's (written with '=' when needed).
    clean({"NCCL_SOCKET_IFNAME": "bond0", "PRIMUS_SYSFS_ROOT": root,
           "PRIMUS_DETECTED_VARS": "NCCL_SOCKET_IFNAME"}, "NCCL_SOCKET_IFNAME")


def test_nccl_ifname_exclude_keeps_lo():
    root = str(SYSFS / "bond-vlan")
    env = {"NCCL_SOCKET_IFNAME": "^docker0", "NNODES": "2", "PRIMUS_SYSFS_ROOT": root}
    finding = expect(env, "error", "NCCL_SOCKET_IFNAME", "nccl_ifname_exclude_keeps_lo")
    assert finding.fix.endswith("NCCL_SOCKET_IFNAME=^docker0,lo")
    clean({**env, "NCCL_SOCKET_IFNAME": "^docker0,lo"}, "NCCL_SOCKET_IFNAME")
    clean({**env, "NNODES": "1"}, "NCCL_SOCKET_IFNAME", "nccl_ifname_exclude_keeps_lo")


def test_user_gid_index_of_a_neighbours_netdev_is_an_error():
    """tests/fixtures/sysfs/roce-macvlan: index 3 holds the neighbour container's IPv4."""
    root = str(SYSFS / "roce-macvlan")
    finding = expect({"NCCL_IB_GID_INDEX": "3", "PRIMUS_SYSFS_ROOT": root}, "error",
                     "NCCL_IB_GID_INDEX", "nic_values_on_host")
    assert "another netdev" in finding.message and "NCCL_IB_GID_INDEX=5" in finding.fix
    clean({"NCCL_IB_GID_INDEX": "5", "PRIMUS_SYSFS_ROOT": root}, "NCCL_IB_GID_INDEX")


def test_master_port_ephemeral(tmp_path):
    base = tmp_path / "proc/sys/net/ipv4"
    base.mkdir(parents=True)
    (base / "ip_local_port_range").write_text("32768\t60999\n")
    root = str(tmp_path)
    finding = expect({"MASTER_PORT": "40000", "PRIMUS_SYSFS_ROOT": root}, "warning",
                     "MASTER_PORT", "master_port_ephemeral")
    assert "ephemeral port range 32768-60999" in finding.message
    assert finding.fix.startswith("export MASTER_PORT=29500 ")
    assert "ip_local_reserved_ports=40000" in finding.fix
    for port in ("29500", "32767", "61000"):
        clean({"MASTER_PORT": port, "PRIMUS_SYSFS_ROOT": root}, "MASTER_PORT", "master_port_ephemeral")
    # Single mode on one node binds no rendezvous port; with NNODES > 1 it does.
    single = {"MASTER_PORT": "40000", "PRIMUS_SYSFS_ROOT": root, "RUN_MODE": "single"}
    clean(single, "MASTER_PORT", "master_port_ephemeral")
    expect({**single, "NNODES": "2"}, "warning", "MASTER_PORT", "master_port_ephemeral")
    # A range that covers 29500 suggests a port below it; a reserved port is not warned about.
    (base / "ip_local_port_range").write_text("20000 60999\n")
    finding = expect({"MASTER_PORT": "40000", "PRIMUS_SYSFS_ROOT": root}, "warning",
                     "MASTER_PORT", "master_port_ephemeral")
    assert finding.fix.startswith("export MASTER_PORT=19500 ")
    (base / "ip_local_reserved_ports").write_text("39000-41000,50000\n")
    clean({"MASTER_PORT": "40000", "PRIMUS_SYSFS_ROOT": root}, "MASTER_PORT", "master_port_ephemeral")
    # No readable range (a fixture tree without it): no finding.
    clean({"MASTER_PORT": "40000", "PRIMUS_SYSFS_ROOT": str(tmp_path / "none")}, "MASTER_PORT")


def test_neuron_variables_on_a_host_without_neuron_name_the_flag_that_checks_them():
    env = {"NEURON_LOGICAL_NC_CONFIG": "2", "NEURON_RT_LOG_LEVEL": "INFO", "NCCL_DEBUG": "WARN"}
    for accel in ("cpu", "rocm", "cuda"):
        f = expect(env, "info", "NEURON_LOGICAL_NC_CONFIG", "accelerator_elsewhere", UNKNOWN, accel)
        assert f"accelerator is {accel}" in f.message and "NEURON_RT_LOG_LEVEL" in f.message
        assert "--accelerator neuron" in f.fix and "PRIMUS_NEURON_INSTANCE" in f.fix
    # On a Neuron host, with the accelerator unknown, or without Neuron names: nothing.
    for accel in ("neuron", "auto"):
        assert [f for f in run(env, UNKNOWN, accel) if f.rule == "accelerator_elsewhere"] == []
    assert [f for f in run({"NCCL_DEBUG": "WARN"}, UNKNOWN, "cpu")
            if f.rule == "accelerator_elsewhere"] == []
