"""What ``primus-cli container`` says about the host variables it forwards or
does not, and how it takes ``MASTER_PORT=auto``.

Owns three decisions of the container plan (python/primus_runner/launch/container.py):
- which forwarded names the registry does not know (a name under a forwarded
  prefix or family, the registry's ``container_forwarded*`` data): the launch
  summary names them (names only), so a typo or a stray setting is seen.
- which set host variables that look like job settings (``TORCH_*``, ``TE_*``,
  ``CUDA_*`` ...: REPORT_PREFIXES) reach no container: neither on the allowlist
  nor under a forwarded prefix or family, not given with ``--env``, and not
  registered (a registered one gets its own warning from env check's
  ``not_forwarded`` rule). They are named in one warning with the fix, never
  dropped silently.
- ``MASTER_PORT=auto`` (accepted by direct, rendezvous.auto_port): forwarded as
  ``auto``, so the direct launcher inside picks the free port; the host's check
  sees a free port in its place; more than one node is refused as in direct.
  Under Slurm the host's rank mapping derives the job's port and passes it in.
It must not forward anything itself nor decide the allowlist (registry.py does).
"""
from __future__ import annotations

from collections.abc import Mapping

from primus_runner.cluster import rendezvous

TYPE_CHECKING = False
if TYPE_CHECKING:
    from primus_runner.env.registry import Registry

# Name prefixes of the training stack's own settings: PyTorch, Transformer
# Engine, ROCm/HIP runtime and libraries, CUDA, JAX/XLA, UCX/UCCL, OpenMP, Triton.
# Those of a forwarded family (NVTE_, HSA_, ...) reach the container anyway.
REPORT_PREFIXES = ("TORCH_", "TORCHINDUCTOR_", "NVTE_", "TE_", "HSA_", "HIP_", "ROCM_", "ROCR_",
                   "ROCBLAS_", "MIOPEN_", "AITER_", "MSCCLPP_", "CUDA_", "XLA_", "JAX_", "UCX_",
                   "UCCL_", "OMP_", "TRITON_", "NEURON_", "FI_")


def unforwarded(env: Mapping[str, str], passed: set[str], reg: Registry) -> list[str]:
    """Set, unregistered job-setting names that reach no container (sorted)."""
    names = []
    for name, value in env.items():
        if not value or name in passed or not name.startswith(REPORT_PREFIXES):
            continue
        if reg.get(name) is not None or reg.container_forwards(name):
            continue
        names.append(name)
    return sorted(names)


def _listed(names: list[str]) -> str:
    return " ".join(names[:20]) + (f" (and {len(names) - 20} more)" if len(names) > 20 else "")


def unforwarded_note(names: list[str]) -> str:
    return (f"{len(names)} host variable(s) do not reach the container (not on the forwarding "
            f"list nor under a forwarded prefix or family; the image's own values apply): "
            f"{_listed(names)}. Fix: pass them with --env NAME (the host value) or list them in "
            "container.options.env.")


def unregistered(forwarded: list[str], reg: Registry) -> list[str]:
    """The forwarded names the registry does not know (sorted)."""
    return sorted(name for name in forwarded if reg.get(name) is None)


def unregistered_note(names: list[str]) -> str:
    return (f"forwarding {len(names)} host variable(s) the registry does not know (under a "
            f"forwarded prefix or family; `primus-cli env list` has the known ones): "
            f"{_listed(names)}")


def notes(env: Mapping[str, str], forwarded: list[str], passed: set[str],
          reg: Registry) -> list[tuple[str, str]]:
    """(level, line) for the launch summary: what is forwarded unknown, what is not forwarded."""
    out = []
    unknown = unregistered(forwarded, reg)
    if unknown:
        out.append(("INFO", unregistered_note(unknown)))
    dropped = unforwarded(env, {*forwarded, *passed}, reg)
    if dropped:
        out.append(("WARN", unforwarded_note(dropped)))
    return out


def master_port_view(env: Mapping[str, str], nnodes: str) -> dict[str, str] | None:
    """With MASTER_PORT=auto: the environment the host's check sees (a free port
    in its place), else None. More than one node: UsageError, as in direct.
    (Under Slurm the rank mapping already put the job's port in its place.)"""
    picked = rendezvous.auto_port(env)
    if picked is None or "MASTER_PORT" not in picked:
        return None
    rendezvous.check_auto_single_node(int(nnodes) if nnodes.isdigit() else 1)
    return picked


def ranks_view(env: Mapping[str, str]) -> Mapping[str, str]:
    """The environment the host's rank mapping reads: MASTER_PORT=auto under Slurm
    left out, so the mapping derives the job's port (rendezvous.auto_port), as
    the direct launch under the same entry does; any other env as it is."""
    picked = rendezvous.auto_port(env) if env.get("SLURM_JOB_ID") else None
    return picked if picked is not None and "MASTER_PORT" not in picked else env
