"""maxtext prepare step (as upstream AMD-AGI/Primus@fd1eeabb
runner/helpers/hooks/train/pretrain/), run by primus_runner.config.experiment.

Needs pre_trainer dataset_type (else exit 78). Emits extra.backend_path
(MAXTEXT_PATH, dir maxtext; emitted even when absent) and env.RUN_MODE=single:
MaxText starts one JAX process per node, never torchrun.
(The reference launcher also dpkg-checks and apt-installs RDMA packages on
multi-node runs from a list of its own, not stated by its hooks' files, so it is
not done here.)
"""
from __future__ import annotations

from primus_runner.config.experiment import Context, emit_env, emit_extra, require_dataset_type, step_main


def check(ctx: Context) -> None:
    """What a dry run can know, before the set-up step (no side effect)."""
    require_dataset_type(ctx, "maxtext")


def main(ctx: Context) -> None:
    emit_extra("backend_path", ctx.backend_path(["MAXTEXT_PATH"], "maxtext"))
    emit_env("RUN_MODE", "single")


if __name__ == "__main__":
    step_main(main, check)
