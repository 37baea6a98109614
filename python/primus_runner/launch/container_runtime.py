"""Which container runtime a ``primus-cli container`` launch uses: docker or podman.

Owns the choice (``--runtime`` or config ``container.runtime``, else docker when
its engine answers, else podman) and what a missing runtime means where the
plan runs: exit 1 on the node that would start the container (a real launch,
its dry run), but only a note where no container starts: ``env check
--container`` (the verdict needs no runtime) and node 0's simulated dry run of
``primus-cli slurm --dry-run`` on a submit host (each node's launcher picks its
runtime when the job starts). It must not build the runtime command
(python/primus_runner/launch/container.py does).
"""
from __future__ import annotations

import socket
from collections.abc import Callable, Mapping

from primus_runner.errors import MissingError, UsageError
from primus_runner.hardware.sysfs import which

RUNTIMES = ("docker", "podman")
INSTALL_FIX = ("install one: apt-get install podman runc catatonit (or docker.io), or pass "
               "--runtime docker|podman / set container.runtime naming one that is on PATH")
# The simulated node 0 of `primus-cli slurm --dry-run` (runner/lib/slurm_dry_run.sh):
# a job id no Slurm job has, so a plan sees it runs on the submit host.
SIMULATED_JOB_ID = "dry-run"

Log = Callable[[str, str], None]


def docker_engine_answers(env: Mapping[str, str]) -> tuple[bool, str]:
    """(reachable, where): the docker client needs a daemon (podman does not)."""
    host = env.get("DOCKER_HOST", "")
    if host and not host.startswith("unix://"):
        return True, host                    # tcp/ssh: the client finds out itself
    path = host[len("unix://"):] if host else "/var/run/docker.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(path)
        return True, path
    except OSError:
        return False, path
    finally:
        sock.close()


def pick_runtime(wanted: str, origin: str, env: Mapping[str, str], log: Log) -> tuple[str, str]:
    """(name, path) of the runtime: the one asked for, else docker when its engine
    answers, else podman. Missing -> MissingError (exit 1), in dry-run too."""
    if wanted:
        if wanted not in RUNTIMES:
            raise UsageError(f"container runtime '{wanted}' ({origin}) is not supported; "
                             f"accepted: {', '.join(RUNTIMES)}.")
        path = which(wanted, env)
        if path is None:
            raise MissingError(f"container runtime '{wanted}' ({origin}) not found on PATH. "
                               f"Fix: {INSTALL_FIX}.")
        return wanted, path
    for name in RUNTIMES:
        path = which(name, env)
        if path is None:
            continue
        if name == "docker":
            ok, where = docker_engine_answers(env)
            if not ok:
                log("INFO", f"runtime: docker ({path}) skipped: its engine does not answer "
                            f"at {where} (start the docker daemon, or set DOCKER_HOST)")
                continue
        log("INFO", f"runtime: {name} ({path}), auto-detected (--runtime to choose)")
        return name, path
    raise MissingError("no container runtime found: neither docker (with a running engine) nor "
                       f"podman is on PATH. Fix: {INSTALL_FIX}.")


def runtime_for(wanted: str, origin: str, env: Mapping[str, str], log: Log,
                verdict: bool) -> tuple[str, str]:
    """pick_runtime where a container starts; where none does (``verdict``, or the
    simulated node 0 of a Slurm dry run), a missing runtime is a note and the
    command names the runtime by its name alone."""
    try:
        return pick_runtime(wanted, origin, env, log)
    except MissingError as exc:
        if verdict:
            log("DEBUG", f"env check needs no container runtime ({exc})")
        elif env.get("SLURM_JOB_ID") == SIMULATED_JOB_ID:
            log("INFO", "runtime: none on this host (neither docker with a running engine nor "
                        "podman); checked on the nodes: each node's launcher picks its runtime "
                        "when the job starts, and exits 1 there without one")
        else:
            raise
    name = wanted if wanted in RUNTIMES else "docker-or-podman"
    return name, name
