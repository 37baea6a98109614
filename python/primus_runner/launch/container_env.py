"""What ``primus-cli container`` says about host variables it does not forward,
and how it takes ``MASTER_PORT=auto`` (issue 30, item 11).

Owns two decisions of the container plan (python/primus_runner/launch/container.py):
- which set host variables that look like job settings (``TORCH_*``, ``NVTE_*``,
  ``HSA_*`` ...: REPORT_PREFIXES) reach no container: neither on the allowlist
  nor under a forwarded prefix (the registry's ``container_forwarded*`` data:
  reference section 11 and the upstream Primus prefixes PRIMUS_, NCCL_, RCCL_,
  GLOO_, IONIC_, HIPBLASLT_), not given with ``--env``, and not registered
  (a registered one gets its own warning from env check's ``not_forwarded``
  rule). They are named in one warning with the fix, never dropped silently.
- ``MASTER_PORT=auto`` (accepted by direct, rendezvous.auto_port): forwarded as
  ``auto``, so the direct launcher inside picks the free port; the host's check
  sees a free port in its place; more than one node is refused as in direct.
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
REPORT_PREFIXES = ("TORCH_", "TORCHINDUCTOR_", "NVTE_", "TE_", "HSA_", "HIP_", "ROCM_", "ROCR_",
                   "ROCBLAS_", "MIOPEN_", "AITER_", "MSCCLPP_", "CUDA_", "XLA_", "JAX_", "UCX_",
                   "UCCL_", "OMP_", "TRITON_", "NEURON_", "FI_")


def unforwarded(env: Mapping[str, str], passed: set[str], reg: Registry,
                neuron: bool) -> list[str]:
    """Set, unregistered job-setting names that reach no container (sorted)."""
    names = []
    for name, value in env.items():
        if not value or name in passed or not name.startswith(REPORT_PREFIXES):
            continue
        if reg.get(name) is not None or reg.container_forwards(name, neuron):
            continue
        names.append(name)
    return sorted(names)


def unforwarded_note(names: list[str]) -> str:
    shown = " ".join(names[:20]) + (f" (and {len(names) - 20} more)" if len(names) > 20 else "")
    return (f"{len(names)} host variable(s) do not reach the container (not on the forwarding "
            f"list nor under a forwarded prefix; the image's own values apply): {shown}. "
            "Fix: pass them with --env NAME (the host value) or list them in "
            "container.options.env.")


def master_port_view(env: Mapping[str, str], nnodes: str) -> dict[str, str] | None:
    """With MASTER_PORT=auto: the environment the host's check sees (a free port
    in its place), else None. More than one node: UsageError, as in direct."""
    picked = rendezvous.auto_port(env)
    if picked is None:
        return None
    rendezvous.check_auto_single_node(int(nnodes) if nnodes.isdigit() else 1)
    return picked
