"""Embedded workload pieces that test without a process group."""
from __future__ import annotations

from pathlib import Path

import pytest

from primus_runner.errors import UsageError
from primus_runner.workload.train import TrainSettings, save_checkpoint_exclusive, settings_from


def test_settings_from_config_sections() -> None:
    s = settings_from({"model": {"hidden": 16}, "train": {"steps": "5", "lr": "0.5"}})
    assert s == TrainSettings(steps=5, lr=0.5, hidden=16)


def test_unknown_and_bad_settings_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="stepz"):
        settings_from({"train": {"stepz": 3}})
    with pytest.raises(UsageError, match="steps"):
        settings_from({"train": {"steps": "many"}})
    with pytest.raises(UsageError, match="positive"):
        settings_from({"train": {"steps": 0}})


def test_checkpoint_never_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "ck" / "a-step3.pt"
    first = save_checkpoint_exclusive({"v": 1}, target)
    second = save_checkpoint_exclusive({"v": 2}, target)
    assert first == target and second != target
    import torch

    assert torch.load(first)["v"] == 1 and torch.load(second)["v"] == 2
    assert sorted(p.name for p in target.parent.iterdir()) == ["a-step3-1.pt", "a-step3.pt"]


def test_a_distributed_run_frees_its_ddp_wrapper_and_process_group_before_it_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The teardown order that keeps a rank from aborting at exit: nothing of the DDP
    wrapper (a reference cycle holding the process group) is left for the cyclic
    collector to free while the interpreter shuts down."""
    import gc
    import socket

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from primus_runner.workload.train import run

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"WORLD_SIZE": "1", "RANK": "0", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(port)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    cfg = {"workspace": str(tmp_path), "train": {"steps": 2}, "model": {"embed": 8, "hidden": 8}}
    gc.disable()                      # only what run() frees itself counts
    try:
        assert run(cfg, env) == 0
        left = [o for o in gc.get_objects() if isinstance(o, DistributedDataParallel)]
    finally:
        gc.enable()
    assert left == []
    assert not dist.is_initialized()
