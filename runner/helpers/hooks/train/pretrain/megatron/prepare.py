"""megatron prepare step (as upstream AMD-AGI/Primus@fd1eeabb
runner/helpers/hooks/train/pretrain/), run by primus_runner.config.experiment.

Reads pre_trainer mock_data, train_data_path, model_type, trainer_class,
data_path, tokenizer_type. No dataset work when mock_data is true,
train_data_path is set, a diffusion model has data_path, or tokenizer_type is
unset. Otherwise the data is prepared once for all nodes with primus-runner's
indexed-dataset writer (python/primus_runner/dataprep/: node 0 writes
<prefix>.bin/.idx and the <prefix>.done marker, or <prefix>.failed with the
reason; other nodes wait for a marker, PRIMUS_DATA_PREP_TIMEOUT_SECONDS) at
TOKENIZED_DATA_PATH, default <data_path>/bookcorpus/<tokenizer_type>/
bookcorpus_text_sentence, and extra.train_data_path=<prefix> is emitted.
Always emits extra.backend_path (BACKEND_PATH, then MEGATRON_PATH, dir
Megatron-LM): a missing or empty directory is exit 66, found by ``check``
before any step installs; `make` in megatron/core/datasets (when present)
failing is exit 1.
"""
from __future__ import annotations

import os
import subprocess

from primus_runner import dataprep
from primus_runner.config.experiment import (
    Context,
    HookExit,
    dry_run,
    emit_extra,
    lookup,
    say,
    step_main,
    truthy,
)
from primus_runner.facts import HOOK_EXIT_MISSING


def prepare_data(ctx: Context) -> None:
    sec = ctx.section()
    if truthy(lookup(sec, "mock_data")):
        say("mock_data: no dataset preparation")
        return
    if lookup(sec, "train_data_path"):
        say("train_data_path is set: no dataset preparation")
        return
    diffusion = "diffusion" in f"{lookup(sec, 'model_type') or ''} {lookup(sec, 'trainer_class') or ''}".lower()
    if diffusion and lookup(sec, "data_path"):
        say("diffusion model with data_path: no dataset preparation")
        return
    tokenizer_type = lookup(sec, "tokenizer_type")
    if not tokenizer_type:
        say("no tokenizer_type: no dataset preparation")
        return
    prefix = ctx.env.get("TOKENIZED_DATA_PATH") or os.path.join(
        ctx.data_path, "bookcorpus", str(tokenizer_type), "bookcorpus_text_sentence")
    if dry_run(ctx.env):
        say(f"dry run: would prepare the tokenized data at {prefix} (node 0; other nodes wait for {prefix}.done)")
    else:
        plan = dataprep.resolve_plan({"tokenized_data_path": prefix}, ctx.env, ctx.data_path)
        dataprep.ensure_prepared(plan, node_rank=ctx.node_rank(), local_rank=0, env=ctx.env, say=say)
    emit_extra("train_data_path", prefix)


def backend(ctx: Context) -> str:
    """The Megatron-LM checkout; missing or empty is exit 66."""
    path = ctx.backend_path(["BACKEND_PATH", "MEGATRON_PATH"], "Megatron-LM")
    if not os.path.isdir(path) or not os.listdir(path):
        raise HookExit(HOOK_EXIT_MISSING, f"megatron: the Megatron-LM checkout {path} is missing or empty; set "
                       "MEGATRON_PATH (or --backend_path) to a Megatron-LM checkout, or put one in "
                       "third_party/Megatron-LM.")
    return path


def check(ctx: Context) -> None:
    """What a dry run can know, before any step installs (no side effect)."""
    backend(ctx)


def build_helpers(ctx: Context) -> str:
    path = backend(ctx)
    datasets = os.path.join(path, "megatron", "core", "datasets")
    if os.path.isdir(datasets):
        if dry_run(ctx.env):
            say(f"dry run: would run: make -C {datasets}")
        else:
            rc = subprocess.run(check=False, args=["make", "-C", datasets], stdout=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL).returncode
            if rc != 0:
                raise HookExit(1, f"megatron: 'make -C {datasets}' failed with exit code {rc} (the dataset "
                               "helpers of Megatron-LM could not be built).")
    return path


def main(ctx: Context) -> None:
    prepare_data(ctx)
    emit_extra("backend_path", build_helpers(ctx))


if __name__ == "__main__":
    step_main(main, check)
