"""Container mode names the host variables it does not forward and the forwarded
ones the registry does not know (python/primus_runner/launch/container_env.py),
and takes MASTER_PORT=auto."""
from __future__ import annotations

import pytest

from primus_runner.env import registry
from primus_runner.errors import UsageError
from primus_runner.launch import container_env


def test_unregistered_job_settings_outside_the_forwarding_list_are_named() -> None:
    reg = registry.load()
    env = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",  # forwarded family (TORCH_NCCL_)
           "NVTE_SOME_NEW_KNOB": "0",               # forwarded family (NVTE_)
           "TORCHINDUCTOR_CACHE_DIR": "/c", "TE_NEW_KNOB": "1",  # no forwarded family
           "NCCL_DEBUG": "INFO",            # forwarded prefix (upstream's)
           "HIPBLASLT_X": "1",              # forwarded prefix
           "FI_NEW": "1",                   # forwarded family on every accelerator
           "OMP_NUM_THREADS": "4",          # registered: env check's not_forwarded rule says so
           "TORCH_PASSED": "1",             # given with --env
           "TORCH_EMPTY": "",               # not set
           "HOME": "/root", "PATH": "/bin"}  # not a job setting
    names = container_env.unforwarded(env, {"TORCH_PASSED"}, reg)
    assert names == ["TE_NEW_KNOB", "TORCHINDUCTOR_CACHE_DIR"]
    note = container_env.unforwarded_note(names)
    assert "2 host variable(s) do not reach the container" in note and "--env NAME" in note


def test_the_summary_names_forwarded_names_the_registry_does_not_know() -> None:
    reg = registry.load()
    forwarded = ["NCCL_IB_HCA", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NEURON_RT_LOG_LEVEL", "FI_NEW"]
    assert container_env.unregistered(forwarded, reg) == ["FI_NEW", "TORCH_NCCL_ASYNC_ERROR_HANDLING"]
    lines = container_env.notes({"TE_NEW": "1", "FI_NEW": "1"}, forwarded, set(), reg)
    assert [level for level, _ in lines] == ["INFO", "WARN"]
    assert lines[0][1].startswith("forwarding 2 host variable(s) the registry does not know")
    assert lines[0][1].endswith(": FI_NEW TORCH_NCCL_ASYNC_ERROR_HANDLING")
    assert container_env.notes({}, ["NCCL_IB_HCA"], set(), reg) == []


def test_master_port_auto_is_a_free_port_for_the_check_and_single_node_only() -> None:
    assert container_env.master_port_view({"MASTER_PORT": "29500"}, "1") is None
    view = container_env.master_port_view({"MASTER_PORT": "auto", "A": "1"}, "1")
    assert view is not None and view["A"] == "1" and 1024 <= int(view["MASTER_PORT"]) <= 65535
    with pytest.raises(UsageError, match="MASTER_PORT=auto with NNODES=2"):
        container_env.master_port_view({"MASTER_PORT": "AUTO"}, "2")


def test_master_port_auto_under_slurm_is_the_job_port_whatever_the_node_count() -> None:
    from primus_runner.cluster import rendezvous

    env = {"MASTER_PORT": "auto", "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"}
    assert rendezvous.auto_port(env) == {"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"}
    assert container_env.master_port_view(env, "2") is None       # not refused on 2 nodes
    assert container_env.ranks_view(env) == {"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"}
    assert container_env.ranks_view({"MASTER_PORT": "29500", "SLURM_JOB_ID": "1"})["MASTER_PORT"] == "29500"
