"""The registry holds every variable of both references, with the references' facts.

Expected values here are written by hand from the two references (the Primus docs'
environment variables page, the AWS Neuron runtime's environment variables page) and
the fixture list of names extracted from them, never produced by the code under test.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from primus_runner.env import registry as registry_mod
from primus_runner.env import rules as rules_mod
from primus_runner.env.registry import load

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "reference_names.txt"
YAML_FILE = ROOT / "python" / "primus_runner" / "data" / "variables.yaml"

KNOWN_FIELDS = {"type", "values", "ci", "min", "max", "default", "default_note",
                "launcher_default", "launcher_derived", "set_by", "used_by", "description",
                "deprecated", "invalid", "subsystem", "host", "source", "scope"}
KNOWN_TYPES = {"bool", "switch", "int", "uint", "bytes", "mib", "seconds", "float", "port",
               "host", "hostport", "range_list", "int_list", "enum", "path", "string",
               "flags", "uri", "s3uri", "ratio", "gpu_archs", "hbm_init", "patches", "device_list"}


def fixture_sections() -> dict[str, list[str]]:
    """The fixture's names grouped under their '#' heading."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in FIXTURE.read_text().splitlines():
        if line.startswith("#"):
            current = line
            sections.setdefault(current, [])
        elif line.strip():
            sections[current].append(line.strip())
    return sections


def reference_names() -> set[str]:
    return {name for names in fixture_sections().values() for name in names}


@pytest.fixture(scope="module")
def reg():
    return load()


def test_fixture_holds_both_references():
    names = reference_names()
    # A few facts from each reference, checked by eye when the fixture was written.
    for name in ("MASTER_ADDR", "SLURM_JOB_NUM_NODES", "DOCKER_IMAGE", "XLA_FLAGS_APPEND",
                 "NEURON_RT_LOG_LEVEL_<submodule>", "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS",
                 "PRIMUS_DETERMINISTIC", "HIPBLASLT_LOG_FILE", "NEURON_SCRATCHPAD_PAGE_SIZE"):
        assert name in names
    assert len(names) == 219


def test_every_reference_name_is_registered(reg):
    missing = sorted(name for name in reference_names() if reg.get(name) is None)
    assert missing == []


# The runner's own switches (docs/run-on-one-node.md "Entry points").
RUNNER_SWITCHES = ["PRIMUS_ACCELERATOR", "PRIMUS_GPU_MODEL", "PRIMUS_NEURON_INSTANCE",
                   "PRIMUS_SYSFS_ROOT", "PRIMUS_DEV_ROOT", "PRIMUS_PYTHON", "PRIMUS_DRY_RUN",
                   "PRIMUS_WORKLOAD_PYTHON",
                   # sourced first, as the upstream Primus runner does
                   "VENV_ACTIVATE"]
# Names the runner's own code reads or exports (grep of runner/, python/, examples/),
# neither in the references nor in the list of switches above.
RUNNER_OWN = [
    "PRIMUS_VIA_SLURM_ENTRY",  # the entry's mark for the mode it starts (runner/lib/mode_config.sh)
    "PRIMUS_CONTAINER_BYTES",  # non-UTF-8 bytes past the runtime's JSON (launch/container_bytes.py)
    "PRIMUS_ROOT", "PRIMUS_RUNNER_DIR", "PRIMUS_DETECTION_DONE", "PRIMUS_DETECTED_VARS",
    "PRIMUS_ENV_ORIGINS", "PRIMUS_ENV_DEFER_VALIDATION",
    "PRIMUS_ALLOW_BUSY_DEVICES",  # past the refusal of devices another process holds (env/refusals.py)
    "PRIMUS_XLA_FLAGS_OWNED", "PRIMUS_FRAMEWORK", "PRIMUS_GPU_COUNT", "PRIMUS_NEURON_DEVICES",
    "PRIMUS_NEURON_CORES_PER_DEVICE", "PRIMUS_NEURON_DEFAULT_LNC", "PRIMUS_NEURON_LOGICAL_CORES",
    "PRIMUS_IB_HCA_EXCLUDE", "PRIMUS_SOCKET_IFNAME_EXCLUDE", "PRIMUS_NUMA_BIND",
    "PRIMUS_NEURON_CORES_PER_PROC", "PRIMUS_NEURON_CORE_SLICES", "PRIMUS_NEURON_ROOT_COMM_PORT",
    "PRIMUS_RC_DIR", "PRIMUS_TORCHRUN", "PRIMUS_KILL_GRACE",
    "PRIMUS_SECRET_NAMES", "PRIMUS_HOOK_TIMEOUT", "PRIMUS_USER_CONFIG", "PRIMUS_SKIP_MAIN_LAUNCH",
    "PRIMUS_REQUEUE_EXIT_CODE", "PRIMUS_RUN_ID", "PRIMUS_SIGNAL_DIR", "PRIMUS_SIGNAL_WINDOW_MS",
    "PRIMUS_STEP_EXITS",  # each node's launcher status for the srun call (launch/step_exit.py)
    "PRIMUS_RANK_LOG_DIR", "PRIMUS_LOG_PRELUDE", "PRIMUS_LOG_ONCE", "PRIMUS_CONSOLE_RANKS",
    "PRIMUS_EXPERIMENT_NO_FRAMEWORK", "PRIMUS_EXPERIMENT_REQUIRED",
    "PRIMUS_SLURM_REQUEUE",
    "PRIMUS_NO_USER_CONFIG", "PRIMUS_SLURM_FIRST_HOST", "PRIMUS_SLURM_SRUN_NATIVE",
    "PRIMUS_SLURM_KILLWAIT",  # the cluster's KillWait as the entry read it (scheduler/stop_grace.py)
    "PRIMUS_SLURM_SCONTROL_TIMEOUT", "PRIMUS_HOOKS_DIR", "PRIMUS_HOOK_GROUP", "PRIMUS_HOOK_NAME",
    "PRIMUS_TURBO_REPO", "PRIMUS_TURBO_REF", "PRIMUS_TURBO_SRC", "PRIMUS_TURBO_BUILD_DIR",
    "PRIMUS_TE_FLASH_ATTN_MAX_VERSION", "PRIMUS_BNXT_SYSROOT", "PRIMUS_HIPBLASLT_TUNER",
    "PRIMUS_PREFLIGHT_BACKEND", "PRIMUS_PREFLIGHT_TIMEOUT", "PRIMUS_TRAIN_STEPS",
    "PRIMUS_DATA_PREP_FAULT", "PRIMUS_CLUSTER_CHECK", "PRIMUS_CLUSTER_CHECK_PORT",
    "PRIMUS_CLUSTER_CHECK_TIMEOUT", "PRIMUS_PEER_WAIT_TIMEOUT", "PRIMUS_CLUSTER_CHECK_IGNORE", "PRIMUS_ELASTIC",
    "PRIMUS_SRUN_NATIVE", "PRIMUS_HANG_TIMEOUT", "PRIMUS_HANG_ACTION", "PRIMUS_HEARTBEAT_FILE",
    "PRIMUS_HEARTBEAT_DIR", "PRIMUS_RUN_LOG", "PRIMUS_FAULTHANDLER_FILE", "PRIMUS_FAILURE_STACKS",
              "PRIMUS_FR_TRIGGER",
              # the restart loop (docs/restart-on-failure.md)
              "PRIMUS_ON_FAILURE", "PRIMUS_RESTART_MAX", "PRIMUS_NODE_FAILURE_LIMIT", "PRIMUS_RESTART_ON_STRAGGLER",
              "PRIMUS_RESTART_COUNT", "PRIMUS_LEFT_OUT_NODES", "PRIMUS_TRAIN_CHECKPOINT_EVERY", "PRIMUS_TRAIN_RESUME",
              "PRIMUS_TRAIN_FAULT", "PRIMUS_SLURM_SPARE_NODES"]
# Library variables in neither reference that the runner sets or checks:
# OMP_NUM_THREADS (default 1 in every mode), the GPU masks it counts after, and the
# NCCL GID selection it sets when a host's RoCE ports differ.
LIBRARY_OWN = ["OMP_NUM_THREADS", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "NCCL_IB_ADDR_FAMILY",
               # read by jax.distributed.initialize(); set in run mode single
               "JAX_COORDINATOR_ADDRESS",
               # torchrun's --rdzv-backend default (rule pet_rdzv_exported)
               "PET_RDZV_BACKEND",
               # PyTorch's flight recorder on ROCm/CUDA (runner/lib/flight_recorder.sh)
               "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
               # their newer names, for a torch that reads them (runner/lib/flight_recorder.sh)
               "TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE",
               # ProcessGroupNCCL's dump FIFO, set per torchrun rank (runner/helpers/run_worker.sh)
               "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"]
# AWS practice around the Neuron runtime (section neuron-aws; each entry cites its AWS source).
NEURON_AWS = ["FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE", "CCOM_SOCKET_IFNAME",
              "MALLOC_ARENA_MAX", "XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_SPMD",
              "NEURON_CC_FLAGS", "PRIMUS_NEURON_SPMD", "PRIMUS_NEURON_EFA_DEVICES",
              "PRIMUS_NEURON_CORE"]


def test_registry_adds_only_the_runner_own_variables(reg):
    extra = sorted(v.name for v in reg.variables if v.name not in reference_names())
    # Names only the reference launcher (upstream's runner/) gives, each with its source.
    sheet = [v.name for v in reg.variables if v.section == "reference-launcher"]
    assert all("AMD-AGI/Primus@fd1eeabb runner/" in (reg.get(name).source or "") for name in sheet)
    assert extra == sorted(RUNNER_SWITCHES + RUNNER_OWN + sheet + LIBRARY_OWN + NEURON_AWS)
    assert all(reg.get(name).section == "neuron-aws" for name in NEURON_AWS)
    assert all(reg.get(name).section == "runner" for name in RUNNER_SWITCHES)
    assert all(reg.get(name).section == "runner-own" for name in RUNNER_OWN)


def test_runner_own_facts(reg):
    """A few entries checked against the code by hand."""
    assert reg.get("PRIMUS_KILL_GRACE").type == "seconds"
    assert reg.get("PRIMUS_KILL_GRACE").default == "10"  # runner/lib/supervise.sh primus_stop_run
    assert reg.get("PRIMUS_IB_HCA_EXCLUDE").default == "bond"  # nics.DEFAULT_HCA_EXCLUDE
    assert reg.get("PRIMUS_SLURM_SCONTROL_TIMEOUT").default == "3"
    assert reg.get("PRIMUS_PREFLIGHT_TIMEOUT").default == "300"
    assert reg.get("PRIMUS_TE_FLASH_ATTN_MAX_VERSION").default == "3.0.0.post1"
    assert reg.get("PRIMUS_TRAIN_STEPS").default == "30"  # examples/cpu_pretrain.yaml
    assert reg.get("PRIMUS_NEURON_ROOT_COMM_PORT").min == 1024
    assert reg.get("PRIMUS_SLURM_SRUN_NATIVE").values == ("1", "true", "yes", "0", "false", "no")
    # Launcher hand-offs need no container forwarding; user knobs read in the job do.
    assert reg.get("PRIMUS_ROOT").host and reg.get("PRIMUS_DETECTED_VARS").host
    assert not reg.get("PRIMUS_KILL_GRACE").host and not reg.get("PRIMUS_TURBO_REPO").host
    assert not any(reg.get(name).secret for name in RUNNER_OWN)


def test_names_are_unique_and_yaml_fields_known():
    data = yaml.safe_load(YAML_FILE.read_text())
    seen: set[str] = set()
    for section in data["sections"]:
        for name, spec in section["variables"].items():
            assert name not in seen, name
            seen.add(name)
            # A flow mapping with an unquoted comma would add a stray key here.
            assert set(spec) <= KNOWN_FIELDS, (name, set(spec) - KNOWN_FIELDS)
            assert spec["type"] in KNOWN_TYPES, name
            assert spec["description"].strip(), name
            for sub in ("deprecated", "invalid"):
                if sub in spec:
                    assert set(spec[sub]) <= {"status", "replacement", "effect", "severity"}
            if spec["type"] == "enum":
                assert spec.get("values"), name


# -- container allowlist (Primus docs, environment variables, section 11) ----
SECTION_11 = ["MASTER_ADDR", "MASTER_PORT", "NNODES", "NODE_RANK", "GPUS_PER_NODE", "DOCKER_IMAGE",
              "HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN", "DATABRICKS_HOST",
              "MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING",
              "ENABLE_NUMA_BINDING", "REBUILD_PRIMUS_TURBO", "GPU_ARCHS", "USING_UEP", "REBUILD_UEP",
              "USING_AINIC", "PATCH_TE_FLASH_ATTN", "REBUILD_BNXT", "HSA_NO_SCRATCH_RECLAIM",
              "NVTE_CK_USES_BWD_V3", "GPU_MAX_HW_QUEUES", "HSA_KERNARG_POOL_SIZE",
              "PRIMUS_TURBO_DEEPEP_TIMEOUT", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME",
              "GLOO_SOCKET_IFNAME", "NCCL_IB_GID_INDEX", "PRIMUS_TURBO_ATTN_V3_ATOMIC_FP32",
              "NVTE_CK_IS_V3_ATOMIC_FP32", "PATH_TO_BNXT_TAR_PACKAGE", "ANP_HOME_DIR",
              "RCCL_HOME_DIR", "MPI_HOME_DIR", "DUMP_HLO", "DUMP_HLO_DIR", "PRIMUS_DETERMINISTIC",
              "PRIMUS_HIPBLASLT_TUNING", "PRIMUS_HIPBLASLT_TUNING_STAGE",
              "TE_HIPBLASLT_TUNING_RUN_COUNT", "TE_HIPBLASLT_TUNING_ALGO_COUNT",
              "HIPBLASLT_LOG_MASK", "HIPBLASLT_LOG_FILE", "HIPBLASLT_LOG_LEVEL",
              "HIPBLASLT_TUNING_OVERRIDE_FILE"]


def test_container_forwarded_is_section_11_in_order(reg):
    assert reg.container_forwarded() == SECTION_11
    fixture_11 = next(v for k, v in fixture_sections().items() if "section 11" in k)
    assert fixture_11 == SECTION_11


def test_forwarded_flag_matches_the_allowlist(reg):
    flagged = [v.name for v in reg.variables if v.forwarded]
    assert sorted(flagged) == sorted(SECTION_11)
    assert not reg.get("TE_HIPBLASLT_ALGO_SELECTION").forwarded
    assert not reg.get("NEURON_RT_VISIBLE_CORES").forwarded


# -- defaults -------------------------------------------------------------------
# Reference sections 1 and 4-8: what base_env.sh / the direct launcher export.
LAUNCHER_DEFAULTS = {
    "MASTER_ADDR": "localhost", "MASTER_PORT": "1234", "NNODES": "1", "NODE_RANK": "0",
    "GPUS_PER_NODE": "8", "NCCL_DEBUG": "", "NCCL_IB_GID_INDEX": "3", "NCCL_PXN_DISABLE": "1",
    "NCCL_P2P_NET_CHUNKSIZE": "524288", "NCCL_CROSS_NIC": "0", "RCCL_MSCCL_ENABLE": "0",
    "RCCL_MSCCLPP_THRESHOLD": str(1024 ** 3), "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK": "0",
    "TORCH_NCCL_HIGH_PRIORITY": "1", "HSA_ENABLE_SDMA": "1", "HSA_NO_SCRATCH_RECLAIM": "1",
    "CUDA_DEVICE_MAX_CONNECTIONS": "1", "NVTE_ROCM_ENABLE_MXFP8": "1", "NVTE_CK_USES_BWD_V3": "1",
    "PATCH_TE_FLASH_ATTN": "0", "OMP_NUM_THREADS": "1",
    # upstream AMD-AGI/Primus@fd1eeabb runner/helpers/envs/base_env.sh (the reference launcher's base_env.sh)
    "NCCL_CHECKS_DISABLE": "1", "RCCL_MSCCLPP_ENABLE": "0", "RCCL_MSCCLPP_FORCE_ENABLE": "0",
    "MSCCLPP_DISABLE_CHANNEL_CACHE": "FALSE", "GPU_MAX_HW_QUEUES": "2", "ENABLE_NUMA_BINDING": "0",
    "NVTE_USE_CAST_TRANSPOSE_TRITON": "1", "NVTE_USE_OPTIMIZED_HIPIFIED_CAST_TRANSPOSE": "0",
    "PRIMUS_TURBO_ATTN_V3_ATOMIC_FP32": "0", "NVTE_DEBUG": "0", "NVTE_DEBUG_LEVEL": "0",
    "NVTE_FUSED_ATTN_LOG_CONFIG": "0", "PRIMUS_TURBO_DEEPEP_TIMEOUT": "600",
}


def test_launcher_defaults(reg):
    assert reg.launcher_defaults() == LAUNCHER_DEFAULTS
    assert set(reg.launcher_derived()) == {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME",
                                           "NCCL_IB_HCA", "HIP_VISIBLE_DEVICES", "HF_HOME",
                                           "DATA_PATH", "PRIMUS_PATH"}


@pytest.mark.parametrize("name, default", [
    ("PRIMUS_LOG_LEVEL", "INFO"), ("PRIMUS_LOG_TIMESTAMP", "1"), ("PRIMUS_SKIP_VALIDATION", "0"),
    ("PRIMUS_CLUSTER", "amd-aig-poolside"), ("PRIMUS_PREFLIGHT_MIN_TFLOPS", "10.0"),
    ("PRIMUS_TURBO_MOE_DISPATCH_COMBINE_BACKEND", "TURBO"), ("PRIMUS_DATA_PREP_TIMEOUT_SECONDS", "3600"),
    ("PRIMUS_HIPBLASLT_TUNING_STAGE", "0"), ("GPU_ARCHS", "gfx942;gfx950"),
    ("DUMP_PP_DIR", "output/pp_data"), ("XLA_GPU_AUTOTUNE_LEVEL", "4"),
    ("XLA_PYTHON_CLIENT_MEM_FRACTION", ".97"), ("TF_CPP_MIN_LOG_LEVEL", "2"),
    ("DUMP_HLO_DIR", "output/xla_dump_hlo"), ("WORLD_SIZE", "1"), ("TORCH_COMPILE_DISABLE", "0"),
    ("NEURON_RT_CC_CHUNK_SIZE", str(2 * 1024 * 1024)), ("NEURON_RT_DEBUG_MEMLOG_MAX_SIZE", str(1024 * 1024)),
    ("NEURON_RT_CC_STREAM_SPLIT", "3:1"), ("NEURON_RT_LOCAL_CORE_DUMP_DIRECTORY", "/tmp/neuron-core-dump/dt-%d-cid-%c"),
    ("NEURON_RT_OOM_DUMP_DIRECTORY", "/tmp"), ("NEURON_RT_HBM_INIT_VAL", "0"),
    ("NEURON_RT_LOG_LOCATION", None), ("NEURON_RT_ROOT_COMM_ID", None), ("HF_TOKEN", None),
])
def test_defaults_from_the_references(reg, name, default):
    assert reg.get(name).default == default


# Hand-extracted from the Neuron reference: (name, registry type for the reference's
# type words, literal default). None = the reference gives no such type word / literal.
NEURON_ROWS = [
    ("NEURON_RT_VISIBLE_CORES", "range_list", None),
    ("NEURON_LOGICAL_NC_CONFIG", "uint", "2"),
    ("NEURON_RT_ROOT_COMM_ID", "hostport", None),
    ("NEURON_RT_EXEC_TIMEOUT", "seconds", "30"),
    ("NEURON_RT_ALLOW_LEGACY_NEFF", "uint", "0"),
    ("NEURON_RT_VALIDATE_HASH", "bool", "false"),
    ("NEURON_RT_ENABLE_RG_VALIDATION", "bool", "false"),
    ("NEURON_RT_ASYNC_SENDRECV_BOOTSTRAP_PORT", "port", "0"),
    ("NEURON_RT_ASYNC_SENDRECV_EXPERIMENTAL_ENABLED", "bool", "false"),
    ("NEURON_RT_ENABLE_P2P", "bool", None),
    ("NEURON_FAIL_ON_NAN", "bool", "false"),
    ("NEURON_RT_STOCHASTIC_ROUNDING_EN", "bool", "false"),
    ("NEURON_RT_STOCHASTIC_ROUNDING_SEED", "uint", "0"),
    ("NEURON_RT_DBG_DMA_PACKETIZATION_SIZE", "bytes", "4096"),
    ("NEURON_RT_XU_COMPUTE_MAX_QUEUED_REQUESTS", "uint", "8"),
    ("NEURON_RT_DISABLE_DEBUG_INFO", "bool", "false"),
    ("NEURON_RT_CC_CHANNEL_BUFFER_N", "uint", "8"),
    ("NEURON_RT_CC_CHUNK_SIZE", "bytes", "2097152"),
    ("NEURON_RT_CC_STREAM_SPLIT", "ratio", "3:1"),
    ("NEURON_RT_DBG_CC_DMA_PACKET_SIZE", None, None),
    ("NEURON_RT_DISABLE_EXECUTION_BARRIER", "bool", "false"),
    ("NEURON_RT_ENABLE_HW_EXECUTION_BARRIER", "bool", None),
    ("NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY", "range_list", None),
    ("NEURON_RT_ONE_THREAD_PER_CORE", "bool", "false"),
    ("NEURON_RT_RANKS_PER_NETWORK_PROXY", "uint", "1"),
    ("NEURON_RT_REGISTER_HBM_MR", "bool", "true"),
    ("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "bool", None),
    ("NEURON_RT_MAP_HBM", "bool", "true"),
    ("NEURON_SCRATCHPAD_PAGE_SIZE", "mib", "512"),
    ("NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES", "bytes", "0"),
    ("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", "enum", "none"),
    ("NEURON_RT_DBG_VERBOSE_DEV_MEM", "bool", "false"),
    ("NEURON_RT_DEBUG_MEMLOG_MAX_SIZE", "bytes", "1048576"),
    ("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", "bool", "true"),
    ("NEURON_RT_ENABLE_MEMORY_METRICS", "bool", "true"),
    ("NEURON_RT_LOG_LEVEL", "enum", "WARN"),
    ("NEURON_RT_LOG_LOCATION", "enum", None),
    ("NEURON_RT_LOG_LEVEL_<submodule>", "enum", None),
    ("NEURON_RT_LOG_LOCATION_<submodule>", "enum", None),
    ("NEURON_RT_MIN_MEM_ERROR_INTERVAL", "seconds", "3600"),
    ("NEURON_RT_OOM_DUMP_DIRECTORY", "path", "/tmp"),
    ("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE", "uint", "262144"),
    ("NEURON_RT_INSPECT_ENABLE", "bool", "false"),
    ("NEURON_RT_INSPECT_CPU_UTIL", "bool", "false"),
    ("NEURON_RT_INSPECT_DEVICE_PROFILE", "enum", None),
    ("NEURON_RT_INSPECT_DEVICE_PROFILE_NUM_WARMUP", "uint", "0"),
    ("NEURON_RT_INSPECT_EVENT_FILTER_NC", "range_list", None),
    ("NEURON_RT_INSPECT_EVENT_FILTER_TYPE", None, None),
    ("NEURON_RT_INSPECT_HOST_MEMORY", "bool", "false"),
    ("NEURON_RT_INSPECT_ON_FAIL", "bool", "false"),
    ("NEURON_RT_INSPECT_OUTPUT_DIR", "path", None),
    ("NEURON_RT_INSPECT_PRECACHE_ENABLE", "bool", "false"),
    ("NEURON_RT_INSPECT_SYSTEM_PROFILE", "bool", "true"),
    ("NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC", "uint", "0"),
    ("NEURON_RT_PROFILE_BUF_CC_CORE_EVENT_MB", "mib", "2"),
    ("NEURON_RT_PROFILE_BUF_CC_CORE_INSTRUCTION_MB", "mib", "64"),
    ("NEURON_RT_PROFILE_BUF_DMA_MB", "mib", "128"),
    ("NEURON_RT_PROFILE_BUF_EVENT_MB", "mib", "64"),
    ("NEURON_RT_PROFILE_BUF_H2D_DMA_MB", "mib", "64"),
    ("NEURON_RT_PROFILE_BUF_INSTRUCTION_MB", "mib", "128"),
    ("NEURON_RT_PROFILE_BUF_THROTTLE_MB", "mib", "64"),
    ("NEURON_RT_ENABLE_DGE_NOTIFICATIONS", "bool", "false"),
    ("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", "int", "0"),
    ("NEURON_RT_DBG_INPUT_DUMP_DIRECTORY", "path", "/tmp/neuron-input-dump"),
    ("NEURON_RT_LOCAL_CORE_DUMP_DIRECTORY", "path", "/tmp/neuron-core-dump/dt-%d-cid-%c"),
    ("NEURON_RT_S3_CORE_DUMP_PREFIX", "s3uri", None),
    ("NEURON_RT_HBM_INIT_VAL", "hbm_init", "0"),
    ("NEURON_RT_NUM_CORES", None, None),
    ("NEURON_RT_VIRTUAL_CORE_SIZE", None, None),
    ("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", None, None),
]


def test_neuron_rows_cover_the_fixture():
    neuron_fixture = next(v for k, v in fixture_sections().items() if "neuron-runtime" in k)
    assert [row[0] for row in NEURON_ROWS] == neuron_fixture


@pytest.mark.parametrize("name, kind, default", NEURON_ROWS)
def test_neuron_types_and_defaults(reg, name, kind, default):
    var = reg.get(name)
    if kind is not None:
        assert var.type == kind
    if default is not None:
        assert var.default == default


def test_every_default_passes_its_own_type(reg):
    for var in reg.variables:
        if var.default not in (None, ""):
            assert rules_mod.type_problem(var, var.default) is None, (var.name, var.default)


# -- families, deprecations, managed flags, secrets -------------------------------
SUBMODULES = ["ENC", "ENCD", "HAL", "NDBG", "NEFF", "NLOG", "NMGR", "NRT", "RUST", "TDRV", "TEST",
              "UTIL"]


def test_submodule_families(reg):
    assert list(reg.log_submodules) == SUBMODULES
    for sub in SUBMODULES:
        assert reg.get(f"NEURON_RT_LOG_LEVEL_{sub}").name == "NEURON_RT_LOG_LEVEL_<submodule>"
        assert reg.get(f"NEURON_RT_LOG_LOCATION_{sub}").name == "NEURON_RT_LOG_LOCATION_<submodule>"
    assert reg.get("NEURON_RT_LOG_LEVEL_FOO") is None
    assert reg.get("NEURON_RT_LOG_LEVEL_hal") is None
    assert reg.get("NEURON_RT_LOG_LEVEL").name == "NEURON_RT_LOG_LEVEL"


def test_deprecated_names(reg):
    deprecated = {v.name: v.deprecated for v in reg.variables if v.deprecated}
    assert set(deprecated) == {"NEURON_RT_NUM_CORES", "NEURON_RT_VIRTUAL_CORE_SIZE",
                               "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS"}
    assert deprecated["NEURON_RT_NUM_CORES"].replacement == ("NEURON_RT_VISIBLE_CORES",
                                                             "NEURON_LOGICAL_NC_CONFIG")
    assert deprecated["NEURON_RT_VIRTUAL_CORE_SIZE"].replacement == ("NEURON_LOGICAL_NC_CONFIG",)
    assert "still applied" in deprecated["NEURON_RT_NUM_CORES"].status
    assert "ignored" in deprecated["NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS"].status


def test_managed_xla_flags(reg):
    flags = [(f["flag"], f["value"]) for f in reg.managed_xla_flags]
    assert flags == [
        ("--xla_gpu_memory_limit_slop_factor", "95"),
        ("--xla_gpu_reduce_scatter_combine_threshold_bytes", "8589934592"),
        ("--xla_gpu_all_gather_combine_threshold_bytes", "8589934592"),
        ("--xla_gpu_enable_command_buffer", "''"),
        ("--xla_gpu_enable_latency_hiding_scheduler", "true"),
        ("--xla_gpu_enable_triton_gemm", "false"),
        ("--xla_gpu_enable_cublaslt", "true"),
        ("--xla_gpu_autotune_level", "4"),
        ("--xla_gpu_enable_all_gather_combine_by_dim", "false"),
    ]


def test_secrets(reg):
    secret = sorted(v.name for v in reg.variables if v.secret)
    assert secret == ["DATABRICKS_TOKEN", "HF_TOKEN", "WANDB_API_KEY"]


def test_two_name_rows_both_registered(reg):
    assert reg.get("SLURM_NNODES").subsystem == reg.get("SLURM_JOB_NUM_NODES").subsystem == "slurm"


def test_subsystems_and_groups(reg):
    subsystems = reg.subsystems()
    assert len(subsystems) == len(set(subsystems))
    assert {"distributed", "nccl", "rocm", "hipblaslt", "jax-xla", "slurm"} <= set(subsystems)
    neuron = reg.in_subsystem("neuron")
    assert {v.name for v in neuron} >= {"NEURON_RT_VISIBLE_CORES", "NEURON_FAIL_ON_NAN",
                                        "NEURON_RT_INSPECT_ENABLE", "NEURON_RT_NUM_CORES"}
    assert all(v.name.startswith("NEURON_") or v.section == "neuron-aws" for v in neuron)
    assert [v.name for v in reg.in_subsystem("slurm")] == [
        "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_NODEID", "SLURM_PROCID", "SLURM_JOB_ID"]


# -- rules and the JSON copy -------------------------------------------------------
def test_every_documented_rule_is_implemented(reg):
    assert set(reg.rules) == set(rules_mod.RULES)
    for rule in reg.rules.values():
        assert rule.severity in ("error", "warning", "info")
        for name in rule.variables:
            assert reg.get(name) is not None, (rule.id, name)


def test_json_copy_is_current():
    assert registry_mod.main(["--check-json"]) == 0, \
        "run: python3 -m primus_runner.env.registry --write-json"


def test_json_copy_is_used_only_when_it_matches(tmp_path, monkeypatch):
    yaml_copy = tmp_path / "variables.yaml"
    json_copy = tmp_path / "variables.json"
    yaml_copy.write_bytes(YAML_FILE.read_bytes())
    from primus_runner import registry_data

    monkeypatch.setattr(registry_data, "YAML_PATH", str(yaml_copy))
    monkeypatch.setattr(registry_data, "JSON_PATH", str(json_copy))
    stale = {"source_digest": "crc32:00000000:0", "data": {"sections": []}}
    json_copy.write_text(json.dumps(stale))
    assert len(registry_data.read_data()["sections"]) > 10  # fell back to the YAML
    fresh = {"source_digest": registry_data.yaml_digest(yaml_copy.read_bytes()),
             "data": {"marker": True}}
    json_copy.write_text(json.dumps(fresh))
    assert registry_data.read_data() == {"marker": True}
    yaml_copy.write_bytes(YAML_FILE.read_bytes() + b"\n# edited\n")
    assert "sections" in registry_data.read_data()  # edited YAML: the copy is stale again


def test_load_is_cached():
    assert load() is load()


# The detected Neuron facts of the example instance (PRIMUS_NEURON_INSTANCE=trn2.48xlarge):
# 16 devices x 8 physical cores, default LNC 2 -> 64 logical cores. Generic per-type
# examples (1, 1, 1, 1) contradict the instance and NEURON_LOGICAL_NC_CONFIG=2.
TRN2_48XL_FACTS = {"PRIMUS_NEURON_DEVICES": "16", "PRIMUS_NEURON_CORES_PER_DEVICE": "8",
                   "PRIMUS_NEURON_DEFAULT_LNC": "2", "PRIMUS_NEURON_LOGICAL_CORES": "64"}


def test_example_values_pass(reg):
    from primus_runner.env.examples import full_environment

    env = full_environment(reg)
    assert len(env) == len(reg.variables)
    assert env["PRIMUS_NEURON_INSTANCE"] == "trn2.48xlarge"
    env.update(TRN2_48XL_FACTS)
    assert [f for f in rules_mod.check(env) if f.severity == "error"] == []


def test_runner_config_allowlist_matches_the_registry(reg):
    """runner/.primus.yaml's container.options.env is the allowlist the container mode
    forwards (docs/configuration.md "Environment variables and checks": checked against the registry so
    the two cannot drift)."""
    config = yaml.safe_load((ROOT / "runner" / ".primus.yaml").read_text())
    assert config["container"]["options"]["env"] == reg.container_forwarded()


def test_every_variable_has_a_scope(reg):
    from primus_runner.env.registry import SCOPES

    assert {v.scope for v in reg.variables} == set(SCOPES)
    assert reg.get("NCCL_SOCKET_IFNAME").scope == "per-node"
    assert reg.get("NCCL_IB_GID_INDEX").scope == "per-node"
    assert reg.get("NCCL_PROTO").scope == "cluster-uniform"
    assert reg.get("RANK").scope == "per-process"
    assert reg.get("HF_TOKEN").scope == "local"
    assert reg.scope_of("NCCL_ALGO") == "cluster-uniform"
    assert reg.scope_of("HOME") == "local"


def test_a_scope_the_loader_does_not_know_is_refused():
    from primus_runner.env.registry import Registry, read_data

    data = read_data()
    import copy

    broken = copy.deepcopy(data)
    broken["sections"][0]["variables"]["MASTER_ADDR"]["scope"] = "cluster-wide"
    with pytest.raises(ValueError, match="MASTER_ADDR has scope 'cluster-wide'"):
        Registry(broken)
