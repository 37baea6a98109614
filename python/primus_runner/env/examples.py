"""Example values of the registered variables: one that passes each variable's own
type, and a full environment of them (the bench's and the tests' "every variable
set" case). Must not be used on a launch path: it loads the whole registry.
"""
from __future__ import annotations

from primus_runner.env.registry import FAMILY_MARK, Registry, Variable, load

_EXAMPLE_BY_TYPE = {
    "bool": "false", "switch": "0", "int": "0", "uint": "1", "bytes": "4096", "mib": "64",
    "seconds": "60", "float": "1.0", "port": "29500", "host": "localhost",
    "hostport": "localhost:29500", "range_list": "0", "int_list": "0", "path": "/tmp",
    "string": "example", "flags": "--xla_gpu_enable_triton_gemm=false", "uri": "http://localhost:5000",
    "s3uri": "s3://bucket/neuron-dumps", "ratio": "3:1", "gpu_archs": "gfx942;gfx950",
    "hbm_init": "off", "patches": "all",
}
_EXAMPLE_BY_NAME = {
    "HIP_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "NEURON_RT_INSPECT_EVENT_FILTER_TYPE": "hardware",
    "PRIMUS_NEURON_INSTANCE": "trn2.48xlarge", "PRIMUS_HIPBLASLT_TUNING_STAGE": "0",
    "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY": "critical", "NEURON_RT_INSPECT_DEVICE_PROFILE": "model",
    "NCCL_PROTO": "Simple,LL128", "NCCL_ALGO": "Ring", "NCCL_DEBUG": "WARN", "TE_HIPBLASLT_TUNING": "0",
    "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS": "0", "PRIMUS_TURBO_DEEPEP_TIMEOUT": "600",
    "NEURON_RT_DBG_CC_DMA_PACKET_SIZE": "4096", "PRIMUS_PYTHON": "python3", "PET_RDZV_BACKEND": "",
    "GPUS_PER_NODE": "8",  # a full 8-GPU node (no registry default: detected)
    # One Slurm step on one node: what the scheduler says agrees with NNODES/NODE_RANK.
    "SLURM_NODEID": "0", "SLURM_PROCID": "0",
    # Values a launch takes literally: an empty user config file (a directory is
    # refused before anything runs), no library to preload into every process and
    # no activation script to source.
    "PRIMUS_USER_CONFIG": "/dev/null", "LD_PRELOAD": "", "VENV_ACTIVATE": "",
    # One core per process: a node-wide list as long as GPUS_PER_NODE (8).
    "NEURON_RT_VISIBLE_CORES": "0-7", "NEURON_RT_NUM_CORES": "8",
    # The detected facts of the example instance (trn2.48xlarge): 16 devices of
    # 8 physical cores, LNC 2, 64 logical cores.
    "PRIMUS_NEURON_DEVICES": "16", "PRIMUS_NEURON_CORES_PER_DEVICE": "8",
    "PRIMUS_NEURON_DEFAULT_LNC": "2", "PRIMUS_NEURON_LOGICAL_CORES": "64",
}


def example_value(var: Variable) -> str:
    """A value that passes ``var``'s own type (its default when it has one); used to
    build a full environment for the bench and the tests."""
    if var.name in _EXAMPLE_BY_NAME:
        return _EXAMPLE_BY_NAME[var.name]
    if var.default not in (None, "") and var.type not in ("string", "path"):
        return var.default
    if var.type == "enum":
        return (var.values or ("",))[0]
    value = _EXAMPLE_BY_TYPE.get(var.type, "example")
    if var.min is not None and value.isdigit() and int(value) < var.min:
        value = str(int(var.min))
    return value


def full_environment(registry: Registry | None = None) -> dict[str, str]:
    """Every registered variable set to its example value (families with submodule NRT)."""
    reg = registry or load()
    env = {}
    for var in reg.variables:
        name = var.name.replace(FAMILY_MARK, "NRT") if var.family else var.name
        env[name] = example_value(var)
    return env
