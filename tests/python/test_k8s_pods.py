"""The pod side of `primus-cli k8s`, in simulated pods: two real launches on this
machine (runner/primus-cli direct -> torchrun -> the embedded CPU workload), each
with the environment a pod of one family gets (JobSet, LeaderWorkerSet,
Trainer/PyTorchJob PET_*), the master's name resolving only once the test adds
it to /etc/hosts (after both pods said they are waiting for it; removed again in
teardown, whatever happens). Then: both ranks join and train, node ranks come
from the pod index whatever order the pods start in, and a name that never
resolves fails within its deadline naming the service. Plus the wait's logic
with a fake clock and resolver."""
from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from primus_runner.errors import RuntimeFailure
from primus_runner.k8s import pod

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "runner" / "primus-cli"
HOSTS = Path("/etc/hosts")


# ------------------------------------------------------------------ the wait's logic

class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wait_resolves_after_some_lookups_and_logs_the_time() -> None:
    clock, lines, lookups = FakeClock(), list[str](), list[str]()

    def resolves(host: str) -> bool:
        lookups.append(host)
        return len(lookups) > 3

    env = {"MASTER_ADDR": "job-node-0-0.job", "NNODES": "2", "NODE_RANK": "1", "MASTER_PORT": "29500"}
    pod.wait(env, log=lines.append, resolves=resolves, clock=clock, sleep=clock.sleep)
    assert lookups == ["job-node-0-0.job"] * 4
    assert any("node 1: MASTER_ADDR job-node-0-0.job resolved after 3.0 s (4 lookups)" in line for line in lines)


def test_wait_deadline_names_the_service_exit_3() -> None:
    clock = FakeClock()
    env = {"MASTER_ADDR": "job-node-0-0.job", "NNODES": "2", "NODE_RANK": "0", pod.VARIABLE: "5"}
    with pytest.raises(RuntimeFailure) as info:
        pod.wait(env, log=lambda _: None, resolves=lambda _: False, clock=clock, sleep=clock.sleep)
    assert info.value.exit_code == 3
    assert "service 'job'" in str(info.value) and "PRIMUS_PEER_WAIT_TIMEOUT=5" in str(info.value)
    assert 5.0 <= clock.now <= 6.0


def test_wait_connects_on_other_nodes_only_without_the_cluster_check() -> None:
    clock, tries = FakeClock(), []

    def connects(host: str, port: int) -> bool:
        tries.append((host, port))
        return len(tries) > 2

    env = {"MASTER_ADDR": "m", "NNODES": "2", "NODE_RANK": "1", "MASTER_PORT": "29500",
           "PRIMUS_CLUSTER_CHECK": "0"}
    lines: list[str] = []
    pod.wait(env, log=lines.append, resolves=lambda _: True, connects=connects, clock=clock, sleep=clock.sleep)
    assert tries == [("m", 29500)] * 3 and any("accepted a connection after 2.0 s" in x for x in lines)
    tries.clear()
    pod.wait({**env, "NODE_RANK": "0"}, log=lines.append, resolves=lambda _: True, connects=connects,
             clock=clock, sleep=clock.sleep)
    pod.wait({**env, "PRIMUS_CLUSTER_CHECK": "1"}, log=lines.append, resolves=lambda _: True,
             connects=connects, clock=clock, sleep=clock.sleep)
    assert tries == []


def test_wait_is_off_for_zero_one_node_and_outside_pods() -> None:
    never = FakeClock()
    for env in ({"MASTER_ADDR": "m", "NNODES": "2", pod.VARIABLE: "0"}, {"MASTER_ADDR": "m", "NNODES": "1"}):
        pod.wait(env, log=lambda _: None, resolves=lambda _: False, clock=never, sleep=never.sleep)
    assert not pod.wanted({"NNODES": "2"})
    assert pod.wanted({"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    assert not pod.wanted({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "PRIMUS_DRY_RUN": "1"})


# ------------------------------------------------------------------ simulated pods

@pytest.fixture
def hosts_entry() -> Iterator[list[str]]:
    """Lines the test appends to /etc/hosts; removed in teardown even on failure
    (written in place: /etc/hosts may be a bind mount)."""
    added: list[str] = []
    try:
        yield added
    finally:
        if added:
            kept = [line for line in HOSTS.read_text().splitlines() if line not in added]
            with HOSTS.open("w") as handle:
                handle.write("\n".join(kept) + "\n")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def family_env(family: str, index: int, host: str, port: int) -> dict[str, str]:
    if family == "jobset":
        return {"JOB_COMPLETION_INDEX": str(index), "MASTER_ADDR": host, "MASTER_PORT": str(port),
                "NNODES": "2", "GPUS_PER_NODE": "1"}
    if family == "lws":
        return {"LWS_LEADER_ADDRESS": host, "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": str(index),
                "MASTER_PORT": str(port), "GPUS_PER_NODE": "1"}
    return {"PET_NNODES": "2", "PET_NODE_RANK": str(index), "PET_MASTER_ADDR": host,
            "PET_MASTER_PORT": str(port), "PET_NPROC_PER_NODE": "1"}


def start_pod(family: str, index: int, host: str, port: int, work: Path, wait: int) -> subprocess.Popen[bytes]:
    env = {"PATH": os.environ["PATH"], "HOME": str(work), "KUBERNETES_SERVICE_HOST": "10.96.0.1",
           "PRIMUS_ACCELERATOR": "cpu", "PRIMUS_PEER_WAIT_TIMEOUT": str(wait),
           "PRIMUS_WORKSPACE": str(work / "ws"), "PRIMUS_TRAIN_STEPS": "4", "PRIMUS_LOG_COLOR": "0",
           "PRIMUS_SYSFS_ROOT": str(work / "sysfs"), "PRIMUS_DEV_ROOT": str(work / "dev"),
           "PRIMUS_WORKLOAD_PYTHON": str(ROOT / ".venv" / "bin" / "python"),
           **family_env(family, index, host, port)}
    (work / "sysfs").mkdir(exist_ok=True)
    (work / "dev").mkdir(exist_ok=True)
    log = (work / f"pod{index}.log").open("wb")
    return subprocess.Popen([str(CLI), "direct", "--module", "primus_runner", "--", "train", "pretrain",
                             "--config", str(ROOT / "examples" / "cpu_pretrain.yaml")],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work)


def wait_for_text(path: Path, text: str, proc: subprocess.Popen[bytes], limit: float = 120) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise AssertionError(f"{path.name} ended ({proc.returncode}) before '{text}':\n{path.read_text()}")
        time.sleep(0.1)
    raise AssertionError(f"'{text}' not in {path.name} after {limit} s:\n{path.read_text()}")


def finish(procs: list[subprocess.Popen[bytes]], limit: float = 300) -> list[int]:
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=limit))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(-9)
    return codes


@pytest.mark.parametrize("family", ["jobset", "lws", "pytorchjob"])
def test_two_pods_wait_for_dns_then_train_ranks_from_the_index(family: str, tmp_path: Path,
                                                               hosts_entry: list[str]) -> None:
    tag = "p" + uuid.uuid4().hex[:8]
    host = f"{tag}-node-0-0.{tag}"
    port = free_port()
    # Index 1 starts first: the node rank must still come from the index.
    procs = [start_pod(family, 1, host, port, tmp_path, 120)]
    wait_for_text(tmp_path / "pod1.log", "does not resolve yet", procs[0])
    procs.append(start_pod(family, 0, host, port, tmp_path, 120))
    try:
        wait_for_text(tmp_path / "pod0.log", "does not resolve yet", procs[1])
        line = f"127.0.0.1 {host}"
        hosts_entry.append(line)
        with HOSTS.open("a") as handle:
            handle.write(line + "\n")
        codes = finish(procs)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    logs = {i: (tmp_path / f"pod{i}.log").read_text(errors="replace") for i in (0, 1)}
    assert codes == [0, 0], logs
    origin = {"jobset": "JOB_COMPLETION_INDEX", "lws": "LWS_WORKER_INDEX", "pytorchjob": "PET_NODE_RANK"}[family]
    for i in (0, 1):
        assert f"peer wait, node {i} (from {origin}): MASTER_ADDR {host} resolved after" in logs[i]
        assert f"--nnodes 2 --node_rank {i} --master_addr {host} --master_port {port}" in logs[i]
    assert "[train] step" in logs[0] and "loss" in logs[0]


def test_a_name_that_never_resolves_fails_within_its_deadline_naming_the_service(tmp_path: Path) -> None:
    tag = "n" + uuid.uuid4().hex[:8]
    host = f"{tag}-node-0-0.{tag}"
    began = time.monotonic()
    proc = start_pod("jobset", 1, host, free_port(), tmp_path, 3)
    (code,) = finish([proc], 120)
    took = time.monotonic() - began
    log = (tmp_path / "pod1.log").read_text(errors="replace")
    assert code == 3, log
    assert f"MASTER_ADDR '{host}' did not resolve within PRIMUS_PEER_WAIT_TIMEOUT=3 s" in log
    assert f"service '{tag}'" in log
    assert took < 3 + 30  # the deadline plus the launcher's own start


# ------------------------------------------------------------------ identity of each family

def test_lws_identity_maps_leader_group_size_and_worker_index() -> None:
    from primus_runner.cluster.ranks import resolve

    m = resolve({"LWS_LEADER_ADDRESS": "llama-0.llama", "LWS_GROUP_SIZE": "4", "LWS_WORKER_INDEX": "3"})
    assert (m.source, m.master_addr, m.nnodes, m.node_rank) == ("lws", "llama-0.llama", 4, 3)
    assert m.origins["NODE_RANK"] == "LWS_WORKER_INDEX"


def test_jobset_identity_rank_from_the_completion_index() -> None:
    from primus_runner.cluster.ranks import resolve

    m = resolve({"JOB_COMPLETION_INDEX": "5", "MASTER_ADDR": "llama-node-0-0.llama", "NNODES": "8"})
    assert (m.source, m.node_rank, m.origins["NODE_RANK"]) == ("jobset", 5, "JOB_COMPLETION_INDEX")


def test_pytorchjob_v1_pod_rank_with_process_world_size_is_refused() -> None:
    from primus_runner.cluster.ranks import resolve
    from primus_runner.errors import RuleRefusal

    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "MASTER_ADDR": "job-master-0", "WORLD_SIZE": "16",
           "RANK": "1", "PET_NPROC_PER_NODE": "8"}
    with pytest.raises(RuleRefusal) as info:
        resolve(env)
    assert info.value.rule == "scheduler_environment"
    assert "WORLD_SIZE='16'" in str(info.value) and "RANK=1 is the pod's index" in str(info.value)
    assert "export NNODES=2 NODE_RANK=1" in str(info.value)
    # the same pod with one process per pod is the plain v1 mapping
    m = resolve({**env, "WORLD_SIZE": "2", "PET_NPROC_PER_NODE": "1"})
    assert (m.source, m.nnodes, m.node_rank) == ("pytorchjob-v1", 2, 1)
