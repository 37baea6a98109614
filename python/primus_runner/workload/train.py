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
- ``train.checkpoint_every: N`` (``--checkpoint_every N``; 0, the default, is off):
  rank 0 also saves ``ckpt-step<8 digits>.pt`` there after every N-th step, the model,
  the optimizer and the step, atomically (a temporary file, fsync, rename), so a
  partial write never replaces the last good checkpoint.
- ``train.resume: auto`` (``--resume auto``): rank 0 loads the checkpoint with the
  highest step there, every rank receives it from rank 0, and training goes on at the
  next step; one line says ``[train] resumed from step S: FILE`` (or that there was
  none). The batches of a step depend only on the seed, the rank and the step, so a
  resumed run's losses equal an unfaulted run's (docs/restart-on-failure.md).
"""
from __future__ import annotations

import argparse
import os
import re
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
    checkpoint_every: int = 0

RESUME_CHOICES = ("auto", "off")
# The periodic checkpoints, and the final one (``<UTC>-step<N>[-k].pt``): both name their step.
_STEP_FILE = re.compile(r"step(\d+)(?:-\d+)?\.pt$")


def settings_from(cfg: Mapping[str, Any]) -> TrainSettings:
    """Validated training settings from the ``train`` and ``model`` sections."""
    train = dict(cfg.get("train") or {})
    model = dict(cfg.get("model") or {})
    merged = {**model, **train}
    merged.pop("resume", None)  # a word, not a number: resume_from()
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
        if values[name] < 0 or (values[name] == 0 and name not in ("seed", "checkpoint_every")):
            raise UsageError(f"workload config '{name}: {merged[name]}' must be positive.")
    return TrainSettings(**values)


def fault_plan(value: str, restart_count: str) -> tuple[str, int, int]:
    """PRIMUS_TRAIN_FAULT (test-only) as (kind, rank, step); ("", -1, 0) when off (pure).

    ``hang:RANK:STEP`` sleeps on RANK at STEP while the others wait in all_reduce;
    ``kill:RANK:STEP`` SIGKILLs RANK there. Only on a run's first attempt
    (PRIMUS_RESTART_COUNT unset or 0) unless ``:always`` follows."""
    parts = [p.strip() for p in value.split(":")] if value.strip() else []
    if not parts:
        return "", -1, 0
    always = parts[-1] == "always"
    if always:
        parts = parts[:-1]
    if len(parts) != 3 or parts[0] not in ("hang", "kill") or not parts[1].isdigit() or not parts[2].isdigit():
        raise UsageError(f"PRIMUS_TRAIN_FAULT='{value}' is not known; accepted: hang:RANK:STEP or kill:RANK:STEP, "
                         "optionally followed by :always (test-only: never set it for a real job).")
    if not always and (restart_count or "0").strip() not in ("", "0"):
        return "", -1, 0
    return parts[0], int(parts[1]), int(parts[2])


def _stuck_here(seconds: float) -> None:
    time.sleep(seconds)


def resume_from(cfg: Mapping[str, Any]) -> str:
    """``train.resume``: auto | off (default off); anything else is a usage error (pure)."""
    value = str((cfg.get("train") or {}).get("resume", "off") or "off").strip().lower()
    if value in ("none", "false", "no", "0"):
        value = "off"
    if value not in RESUME_CHOICES:
        raise UsageError(f"workload config 'resume: {value}' is not known; accepted: auto (resume from the "
                         "latest checkpoint) or off. Fix: --resume auto.")
    return value


def periodic_path(directory: Path, step: int) -> Path:
    """The periodic checkpoint of STEP in DIRECTORY (pure)."""
    return directory / f"ckpt-step{step:08d}.pt"


def step_of(name: str) -> int:
    """The step a checkpoint file name carries, -1 when it names none (pure)."""
    found = _STEP_FILE.search(name)
    return int(found.group(1)) if found and not name.startswith(".") else -1


def latest_checkpoint(directory: Path) -> Path | None:
    """The checkpoint in DIRECTORY with the highest step (a periodic one first on a tie)."""
    try:
        names = [p for p in directory.iterdir() if p.is_file() and step_of(p.name) >= 0]
    except OSError:
        return None
    if not names:
        return None
    return max(names, key=lambda p: (step_of(p.name), p.name.startswith("ckpt-")))


def save_checkpoint_atomic(state: Any, path: Path) -> Path:
    """STATE to PATH: a temporary file beside it, fsync, rename, fsync of the directory.
    A crash at any point leaves either the old file or the new one, never a part."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            torch.save(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


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


def _resume(model: Any, opt: Any, ck_dir: Path, rank: int, distributed: bool) -> int:
    """Rank 0 loads the latest checkpoint and sends it to every rank; each loads the
    model and the optimizer. The step it holds (0: none, start at step 1)."""
    import torch
    import torch.distributed as dist

    found = latest_checkpoint(ck_dir) if rank == 0 else None
    box: list[Any] = [None]
    if rank == 0 and found is not None:
        box = [{"path": str(found), "state": torch.load(found, map_location="cpu", weights_only=False)}]
    if distributed:
        dist.broadcast_object_list(box, src=0)
    got = box[0]
    if got is None:
        if rank == 0:
            print(f"[train] resume auto: no checkpoint in {ck_dir}; starting at step 1", flush=True)
        return 0
    state = got["state"]
    model.load_state_dict(state["model"])
    if "optim" in state:
        opt.load_state_dict(state["optim"])
    step = int(state.get("step", 0))
    if rank == 0:
        print(f"[train] resumed from step {step}: {got['path']}", flush=True)
    return step


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
    ck_dir = Path(workspace) / exp_name / "checkpoints"
    if rank == 0:
        print(f"[train] {exp_name}: {data.numel()} tokens, vocab {vocab}, world size {world}, "
              f"{s.steps} steps, batch {s.batch_size} x {s.seq_len}", flush=True)
    fault, fault_rank, fault_step = fault_plan(env.get("PRIMUS_TRAIN_FAULT", ""), env.get("PRIMUS_RESTART_COUNT", ""))
    first = 1
    if resume_from(cfg) == "auto":
        first = _resume(model, opt, ck_dir, rank, distributed) + 1
    loss: Any = None
    mean: Any = None
    x: Any = None
    y: Any = None
    for step in range(first, s.steps + 1):
        # The batch of a step depends on the seed, the rank and the step only: a resumed
        # run draws the same batches an unfaulted run draws.
        gen = torch.Generator().manual_seed((s.seed + rank) * 1_000_003 + step)
        starts = torch.randint(0, data.numel() - s.seq_len - 1, (s.batch_size,), generator=gen)
        x = torch.stack([data[i:i + s.seq_len] for i in starts.tolist()])
        y = torch.stack([data[i + 1:i + s.seq_len + 1] for i in starts.tolist()])
        loss = F.cross_entropy(ddp(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if fault and rank == fault_rank and step == fault_step:
            if fault == "kill":
                os.kill(os.getpid(), 9)
            _stuck_here(3600)  # the others wait in the all_reduce below: a real hang
        if distributed:
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            mean /= world
        else:
            mean = loss.detach()
        if rank == 0 and (step % s.log_interval == 0 or step == s.steps):
            print(f"[train] step {step}/{s.steps} loss {mean.item():.4f}", flush=True)
        if rank == 0 and s.checkpoint_every and step % s.checkpoint_every == 0 and step < s.steps:
            saved = save_checkpoint_atomic({"model": model.state_dict(), "optim": opt.state_dict(), "step": step,
                                            "vocab": vocab, "settings": s.__dict__}, periodic_path(ck_dir, step))
            print(f"[train] checkpoint step {step}: {saved}", flush=True)
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
    parser.add_argument("--resume", dest="override_resume", choices=RESUME_CHOICES,
                        help="auto: go on from the latest checkpoint (train.resume)")
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
