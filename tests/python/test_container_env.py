"""Issue 30 item 11: container mode names the host variables it does not
forward (python/primus_runner/launch/container_env.py) and takes MASTER_PORT=auto."""
from __future__ import annotations

import pytest

from primus_runner.env import registry
from primus_runner.errors import UsageError
from primus_runner.launch import container_env


def test_unregistered_job_settings_outside_the_forwarding_list_are_named() -> None:
    reg = registry.load()
    env = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "NVTE_SOME_NEW_KNOB": "0",
           "NCCL_DEBUG": "INFO",            # forwarded prefix (upstream's)
           "HIPBLASLT_X": "1",              # forwarded prefix
           "NVTE_FRAMEWORK": "pytorch",     # registered: env check's not_forwarded rule says so
           "TORCH_PASSED": "1",             # given with --env
           "TORCH_EMPTY": "",               # not set
           "HOME": "/root", "PATH": "/bin"}  # not a job setting
    names = container_env.unforwarded(env, {"TORCH_PASSED"}, reg, neuron=False)
    assert names == ["NVTE_SOME_NEW_KNOB", "TORCH_NCCL_ASYNC_ERROR_HANDLING"]
    note = container_env.unforwarded_note(names)
    assert "2 host variable(s) do not reach the container" in note and "--env NAME" in note
    # NEURON_ and FI_ are forwarded on Neuron hosts only.
    assert container_env.unforwarded({"FI_NEW": "1"}, set(), reg, neuron=True) == []
    assert container_env.unforwarded({"FI_NEW": "1"}, set(), reg, neuron=False) == ["FI_NEW"]


def test_master_port_auto_is_a_free_port_for_the_check_and_single_node_only() -> None:
    assert container_env.master_port_view({"MASTER_PORT": "29500"}, "1") is None
    view = container_env.master_port_view({"MASTER_PORT": "auto", "A": "1"}, "1")
    assert view is not None and view["A"] == "1" and 1024 <= int(view["MASTER_PORT"]) <= 65535
    with pytest.raises(UsageError, match="MASTER_PORT=auto with NNODES=2"):
        container_env.master_port_view({"MASTER_PORT": "AUTO"}, "2")
