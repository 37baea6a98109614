"""The pod side of a Kubernetes launch: wait for the peers before torchrun.

Runs INSIDE the pod (standard library only: the user's image may lack PyYAML and
psutil), from the launch helper's prepare step, once per launch, after the rank
mapping (cluster/ranks.py: JobSet's JOB_COMPLETION_INDEX, Trainer/PyTorchJob's
PET_*, PyTorchJob v1's RANK/WORLD_SIZE, LeaderWorkerSet's LWS_*) and before the
MASTER_ADDR resolution check that would refuse the launch.

A headless service's DNS record appears some time after the pod starts: until
then ``init_process_group`` dies with "Name or service not known". So every node
resolves MASTER_ADDR with a bounded retry (node 0 too: under JobSet it is its own
name), logging how long DNS took; a node other than 0 then, when the cluster
check is off (it connects to node 0 itself, retrying, when on), connects to
MASTER_ADDR:MASTER_PORT until torchrun's store listens there, logging how long
that took. The deadline is PRIMUS_PEER_WAIT_TIMEOUT seconds (registry default
600; 0 turns the wait off); when it passes the launch fails with exit 3 and a
message naming the host (and the service it belongs to). The node rank never
comes from here or from arrival order: always from the pod's index.
"""
from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping

from primus_runner.errors import RuntimeFailure, UsageError
from primus_runner.facts import CHECKED_BEFORE_VERDICT

VARIABLE = "PRIMUS_PEER_WAIT_TIMEOUT"
DEFAULT_TIMEOUT = int(CHECKED_BEFORE_VERDICT[VARIABLE][0] or 0)  # the registry's default
RETRY_SECONDS = 1.0


def in_pod(env: Mapping[str, str]) -> bool:
    """The kubelet sets KUBERNETES_SERVICE_HOST in every pod's containers."""
    return bool(env.get("KUBERNETES_SERVICE_HOST", "").strip())


def timeout(env: Mapping[str, str]) -> int:
    raw = env.get(VARIABLE, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    if not raw.isdigit():
        raise UsageError(f"{VARIABLE}='{raw}' is not a whole number of seconds; accepted: 0 (no wait) or "
                         f"more. Fix: export {VARIABLE}={DEFAULT_TIMEOUT}.")
    return int(raw)


def service_of(host: str) -> str:
    """The service part of a pod DNS name: <pod>.<service>[.<namespace>...] -> <service>."""
    parts = host.split(".")
    return parts[1] if len(parts) > 1 else host


def _resolves(host: str) -> bool:
    try:
        return bool(socket.getaddrinfo(host, None, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError):
        return False


def _connects(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2.0):
            return True
    except OSError:
        return False


def wait(env: Mapping[str, str], *, log: Callable[[str], None], rank_origin: str = "",
         resolves: Callable[[str], bool] = _resolves, connects: Callable[[str, int], bool] = _connects,
         clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
    """Wait until MASTER_ADDR resolves (and, see the module text, accepts a
    connection); RuntimeFailure (exit 3) naming it at the deadline."""
    limit = timeout(env)
    nnodes = int(env.get("NNODES", "1") or "1")
    if limit == 0 or nnodes <= 1:
        return
    host = env.get("MASTER_ADDR", "")
    node = int(env.get("NODE_RANK", "0") or "0")
    if not host:
        return
    who = f"node {node}" + (f" (from {rank_origin})" if rank_origin else "")
    start = clock()
    deadline = start + limit
    tries = 0
    while not resolves(host):
        tries += 1
        if tries == 1:
            log(f"peer wait, {who}: MASTER_ADDR {host} does not resolve yet (service '{service_of(host)}'); "
                f"retrying every {RETRY_SECONDS:g} s for up to {limit} s ({VARIABLE})")
        if clock() >= deadline:
            raise RuntimeFailure(
                f"MASTER_ADDR '{host}' did not resolve within {VARIABLE}={limit} s (node {node}, {tries} tries): "
                f"the DNS record of service '{service_of(host)}' never appeared. Fix: check that the headless "
                f"service '{service_of(host)}' exists and selects the pods (kubectl get svc,endpoints "
                f"{service_of(host)}), that the pod of index 0 runs, or raise {VARIABLE}.")
        sleep(RETRY_SECONDS)
    log(f"peer wait, {who}: MASTER_ADDR {host} resolved after {clock() - start:.1f} s ({tries + 1} lookups)")
    if node == 0 or env.get("PRIMUS_CLUSTER_CHECK", "1") != "0":
        return  # node 0 hosts the store; the cluster check connects (retrying) itself
    port_text = env.get("MASTER_PORT", "")
    if not port_text.isdigit():
        return
    began = clock()
    while not connects(host, int(port_text)):
        if clock() >= deadline:
            raise RuntimeFailure(
                f"MASTER_ADDR {host}:{port_text} accepted no connection within {VARIABLE}={limit} s (node {node}): "
                f"node 0 of service '{service_of(host)}' has not started its rendezvous. Fix: look at the pod of "
                f"index 0 (primus-cli k8s logs NAME), or raise {VARIABLE}.")
        sleep(RETRY_SECONDS)
    log(f"peer wait, {who}: {host}:{port_text} accepted a connection after {clock() - began:.1f} s")


def wanted(env: Mapping[str, str]) -> bool:
    """A real launch in a pod: not a dry run, not with validation skipped."""
    return (in_pod(env) and env.get("PRIMUS_DRY_RUN") != "1"
            and env.get("PRIMUS_SKIP_VALIDATION") != "1")
