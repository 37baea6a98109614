"""torchtitan prepare step (as upstream AMD-AGI/Primus@fd1eeabb
runner/helpers/hooks/train/pretrain/), run by primus_runner.config.experiment.

Backend: TORCHTITAN_PATH, dir torchtitan (missing: exit 66); reinstalled
editable (pip install -e <checkout> --config-settings editable_mode=compat;
PRIMUS_SKIP_PIP=1 skips it); the patch-args file is deleted. Needs
pre_trainer model.hf_assets_path (else exit 78): an existing directory is used;
else an HF repo id whose tokenizer is already at
<data_path>/torchtitan/<last id part>/tokenizer.json. (The reference launcher
downloads missing assets with the checkout's downloader, a script this
launcher does not know, so a missing download is exit 66 here, naming the
directory to fill.) Emits extra.model.hf_assets_path=<dir> and
extra.backend_path. Stays torchrun. The checkout and the assets are
checked (``check``) before anything is installed.
"""
from __future__ import annotations

import os

from primus_runner.config.experiment import (
    Context,
    HookExit,
    dry_run,
    emit_extra,
    lookup,
    say,
    step_main,
)
from primus_runner.facts import HOOK_EXIT_CONFIG, HOOK_EXIT_MISSING


def backend(ctx: Context) -> str:
    path = ctx.backend_path(["TORCHTITAN_PATH"], "torchtitan")
    if not os.path.isdir(path):
        raise HookExit(HOOK_EXIT_MISSING, f"torchtitan: the checkout {path} does not exist; set TORCHTITAN_PATH or "
                       "--backend_path.")
    return path


def assets_dir(ctx: Context) -> str:
    """model.hf_assets_path: a directory, or the tokenizer already downloaded
    to <data_path>/torchtitan/<last id part>."""
    assets = lookup(ctx.section(), "model.hf_assets_path")
    if not assets:
        raise HookExit(HOOK_EXIT_CONFIG, f"torchtitan: {ctx.config} sets no pre_trainer model.hf_assets_path; "
                       "set it to a tokenizer directory or a Hugging Face repo id.")
    assets = str(assets)
    if os.path.isdir(assets):
        return assets
    local = os.path.join(ctx.data_path, "torchtitan", assets.rstrip("/").split("/")[-1])
    if not os.path.isfile(os.path.join(local, "tokenizer.json")):
        raise HookExit(HOOK_EXIT_MISSING, f"torchtitan: model.hf_assets_path '{assets}' is neither a directory "
                       f"nor downloaded to {local} (no tokenizer.json there); download the tokenizer "
                       f"assets of {assets} into {local} (HF_TOKEN may be needed).")
    return local


def check(ctx: Context) -> None:
    """What a dry run can know, before the editable install (no side effect)."""
    backend(ctx)
    assets_dir(ctx)


def main(ctx: Context) -> None:
    path = backend(ctx)
    assets = assets_dir(ctx)
    if not ctx.skip_pip():
        ctx.pip("install", "-e", path, "--config-settings", "editable_mode=compat")
    if ctx.patch_args and os.path.exists(ctx.patch_args):
        if dry_run(ctx.env):
            say(f"dry run: would delete {ctx.patch_args}")
        else:
            os.remove(ctx.patch_args)
    emit_extra("model.hf_assets_path", assets)
    emit_extra("backend_path", path)


if __name__ == "__main__":
    step_main(main, check)
