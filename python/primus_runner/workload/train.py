"""``train pretrain --config FILE``: the embedded CPU workload (docs/run-on-one-node.md,
"The embedded default workload").

A small real language model (token embedding -> GRU -> vocabulary projection)
trained with PyTorch DDP on the gloo backend, so the whole launch path can be
exercised on a machine with no GPU and no training framework installed.

- The config is YAML with ``${VAR}`` / ``${VAR:default}`` substitution
  (examples/cpu_pretrain.yaml).
- Data: the bundled corpus is tokenized once for all nodes into Megatron's
  indexed format (see primus_runner.dataprep.training_data); every rank samples its own
  batches from it.
- Rank 0 logs the loss of every step; at the end rank 0 saves a checkpoint under
  ``<workspace>/<exp_name>/checkpoints/`` with a unique name (an existing
  checkpoint is never overwritten).
"""
from __future__ import annotations

import argparse
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from primus_runner.config.files import load_rendered_yaml
from primus_runner.errors import UsageError
from primus_runner.records import dataclass, fields


@dataclass(frozen=True)
class TrainSettings:
    steps: int = 30
    batch_size: int = 16
    seq_len: int = 32
    lr: float = 0.01
    seed: int = 1234
    hidden: int = 64
    embed: int = 32
    log_interval: int = 1


def settings_from(cfg: Mapping[str, Any]) -> TrainSettings:
    """Validated training settings from the ``train`` and ``model`` sections."""
    train = dict(cfg.get("train") or {})
    model = dict(cfg.get("model") or {})
    merged = {**model, **train}
    known = fields(TrainSettings)
    unknown = sorted(set(merged) - set(known))
    if unknown:
        raise UsageError(f"unknown train/model keys {unknown} in the workload config; "
                         f"accepted: {sorted(known)}.")
    values: dict[str, Any] = {}
    defaults = TrainSettings()
    for name in known:
        if name not in merged:
            continue
        kind = float if isinstance(getattr(defaults, name), float) else int
        try:
            values[name] = kind(merged[name])
        except (TypeError, ValueError):
            raise UsageError(f"workload config '{name}: {merged[name]!r}' is not a number; "
                             f"accepted: a positive {kind.__name__}.") from None
        if values[name] <= 0 and name != "seed":
            raise UsageError(f"workload config '{name}: {merged[name]}' must be positive.")
    return TrainSettings(**values)


def checkpoint_path(workspace: str, exp_name: str, step: int) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return Path(workspace) / exp_name / "checkpoints" / f"{stamp}-step{step}.pt"


def save_checkpoint_exclusive(state: Any, path: Path) -> Path:
    """Write via a temporary file, then link into place; never replace a file."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(state, tmp)
    candidate, n = path, 1
    while True:
        try:
            os.link(tmp, candidate)
            break
        except FileExistsError:
            candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
            n += 1
    tmp.unlink()
    return candidate


def build_model(vocab: int, s: TrainSettings) -> Any:
    import torch.nn as nn

    class TinyLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, s.embed)
            self.rnn = nn.GRU(s.embed, s.hidden, batch_first=True)
            self.head = nn.Linear(s.hidden, vocab)

        def forward(self, x: Any) -> Any:
            out, _ = self.rnn(self.embed(x))
            return self.head(out)

    return TinyLM()


def run(cfg: Mapping[str, Any], env: Mapping[str, str]) -> int:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    from primus_runner.dataprep.training_data import training_tokens

    s = settings_from(cfg)
    workspace = str(cfg.get("workspace") or env.get("PRIMUS_WORKSPACE") or "./output")
    exp_name = str(cfg.get("exp_name") or "cpu_pretrain")
    rank = int(env.get("RANK", "0"))
    world = int(env.get("WORLD_SIZE", "1"))
    distributed = "WORLD_SIZE" in env
    if distributed:
        dist.init_process_group(backend="gloo")
    torch.manual_seed(s.seed)
    tokens, vocab = training_tokens(dict(cfg.get("data") or {}), workspace=workspace,
                                    node_rank=int(env.get("NODE_RANK", env.get("GROUP_RANK", "0"))),
                                    local_rank=int(env.get("LOCAL_RANK", "0")))
    data = torch.tensor(list(tokens), dtype=torch.long)
    if data.numel() <= s.seq_len + 1:
        raise UsageError(f"training data has {data.numel()} tokens; need more than seq_len+1 = {s.seq_len + 1}.")
    model = build_model(vocab, s)
    ddp = DDP(model) if distributed else model
    opt = torch.optim.Adam(ddp.parameters(), lr=s.lr)
    gen = torch.Generator().manual_seed(s.seed + rank)
    if rank == 0:
        print(f"[train] {exp_name}: {data.numel()} tokens, vocab {vocab}, world size {world}, "
              f"{s.steps} steps, batch {s.batch_size} x {s.seq_len}", flush=True)
    for step in range(1, s.steps + 1):
        starts = torch.randint(0, data.numel() - s.seq_len - 1, (s.batch_size,), generator=gen)
        x = torch.stack([data[i:i + s.seq_len] for i in starts.tolist()])
        y = torch.stack([data[i + 1:i + s.seq_len + 1] for i in starts.tolist()])
        loss = F.cross_entropy(ddp(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        if distributed:
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            mean /= world
        else:
            mean = loss.detach()
        if rank == 0 and (step % s.log_interval == 0 or step == s.steps):
            print(f"[train] step {step}/{s.steps} loss {mean.item():.4f}", flush=True)
    if rank == 0:
        saved = save_checkpoint_exclusive(
            {"model": model.state_dict(), "step": s.steps, "vocab": vocab, "settings": s.__dict__},
            checkpoint_path(workspace, exp_name, s.steps))
        print(f"[train] checkpoint saved: {saved}", flush=True)
    if distributed:
        dist.barrier()
    # Teardown order. The DDP wrapper sits in a reference cycle (its reducer holds the
    # process group; gloo's work objects hold tensors owned by Python), so leaving the
    # function does not free it: the cyclic collector does, at any later moment, often
    # while the interpreter shuts down. A gloo thread that then drops a Python tensor
    # needs the GIL, which a finalizing interpreter answers by ending the thread, and the
    # C++ runtime aborts the rank ("terminate called without an active exception",
    # exit 134). So free every reference to the wrapper, the optimizer and the last
    # tensors now, collect, then destroy the process group: its threads are joined here,
    # with the interpreter whole.
    del ddp, opt, model, loss, mean, x, y
    import gc

    gc.collect()
    if distributed:
        dist.destroy_process_group()
    return 0


def main(argv: list[str]) -> int:
    from primus_runner.usertext import plain

    parser = argparse.ArgumentParser(prog="python3 -m primus_runner train", description=plain(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=["pretrain"], help="training stage (only 'pretrain')")
    parser.add_argument("--config", required=True, help="workload YAML (${VAR:default} allowed)")
    for name in fields(TrainSettings):
        parser.add_argument(f"--{name}", dest=f"override_{name}", metavar="N",
                            help=f"override train.{name} from the config")
    args, extra = parser.parse_known_args(argv)
    if extra:
        # Hooks may append --name value pairs meant for a full framework.
        print(f"[train] ignoring arguments the embedded workload does not know: {extra}", flush=True)
    cfg = dict(load_rendered_yaml(args.config, os.environ))
    overrides = {k[len("override_"):]: v for k, v in vars(args).items()
                 if k.startswith("override_") and v is not None}
    if overrides:
        cfg["train"] = {**dict(cfg.get("train") or {}), **overrides}
    return run(cfg, dict(os.environ))
