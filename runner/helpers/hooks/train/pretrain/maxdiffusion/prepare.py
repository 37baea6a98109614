"""maxdiffusion prepare step (as upstream AMD-AGI/Primus@fd1eeabb
runner/helpers/hooks/train/pretrain/), run by primus_runner.config.experiment.

Needs pre_trainer dataset_type (else exit 78). Emits extra.backend_path only
when the checkout (MAXDIFFUSION_PATH, dir maxdiffusion) exists,
env.RUN_MODE=single, env.NVTE_FRAMEWORK=jax unless set, and with NNODES > 1 and
MASTER_ADDR + MASTER_PORT set: env.JAX_COORDINATOR_IP / JAX_COORDINATOR_PORT
(each unless set).
"""
from __future__ import annotations

import os

from primus_runner.config.experiment import Context, emit_env, emit_extra, require_dataset_type, step_main


def check(ctx: Context) -> None:
    """What a dry run can know, before the set-up step (no side effect)."""
    require_dataset_type(ctx, "maxdiffusion")


def main(ctx: Context) -> None:
    path = ctx.backend_path(["MAXDIFFUSION_PATH"], "maxdiffusion")
    if os.path.isdir(path):
        emit_extra("backend_path", path)
    emit_env("RUN_MODE", "single")
    if not ctx.env.get("NVTE_FRAMEWORK"):
        emit_env("NVTE_FRAMEWORK", "jax")
    try:
        nnodes = int(ctx.env.get("NNODES", "1") or "1")
    except ValueError:
        nnodes = 1
    addr, port = ctx.env.get("MASTER_ADDR"), ctx.env.get("MASTER_PORT")
    if nnodes > 1 and addr and port:
        if not ctx.env.get("JAX_COORDINATOR_IP"):
            emit_env("JAX_COORDINATOR_IP", addr)
        if not ctx.env.get("JAX_COORDINATOR_PORT"):
            emit_env("JAX_COORDINATOR_PORT", port)


if __name__ == "__main__":
    step_main(main, check)
