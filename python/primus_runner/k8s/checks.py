"""The checks a rendered (or hand-written) manifest must pass before it is applied,
without a cluster: the CRD schemas made strict (k8s/schema.py) and the rules the
API server would apply through CEL or the kubelet at run time, which schema
validation does not evaluate:

* names: metadata.name at most 63 characters and an RFC 1035 label; the pod
  hostnames JobSet derives (<name>-<rjob>-<i>-<j>) and the PyTorchJob services
  (<name>-worker-<i>) valid DNS labels;
* TrainJob: numProcPerNode an integer >= 1 (Trainer v2.2+ takes no string), no
  PET_* in the trainer's env (the Trainer injects them), no pod-override field of
  another Trainer release (podSpecOverrides v2.0, podTemplateOverrides v2.1);
* every pod: /dev/shm mounted from a memory emptyDir with a sizeLimit (the
  container runtime's default is 64 MiB); a pod asking for Neuron devices also
  asks for vpc.amazonaws.com/efa (else collectives fall back to TCP); no
  /dev/infiniband hostPath beside EFA (it hides the EFA provider).

``problems(docs)`` returns one reason per problem (empty: fine).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from primus_runner.k8s import render as r

RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
RFC1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME = 63
OLD_TRAINER_FIELDS = {"podSpecOverrides": "Trainer v2.0", "podTemplateOverrides": "Trainer v2.1"}
KINDS = {("JobSet", r.JOBSET_API), ("TrainJob", r.TRAINER_API), ("ClusterTrainingRuntime", r.TRAINER_API),
         ("PyTorchJob", r.PYTORCHJOB_API)}


def name_problem(what: str, name: object, *, rfc1035: bool = True) -> str | None:
    if not isinstance(name, str) or not name:
        return f"{what} is missing; accepted: a lower-case DNS label (a-z, 0-9, '-'), at most {MAX_NAME} characters"
    pattern = RFC1035 if rfc1035 else RFC1123
    if len(name) > MAX_NAME:
        return (f"{what} '{name}' is {len(name)} characters; accepted: at most {MAX_NAME} (a DNS label). "
                "Fix: a shorter --name")
    if not pattern.match(name):
        return (f"{what} '{name}' is not an RFC 1035 label; accepted: lower-case letters, digits and '-', "
                "starting with a letter and ending with a letter or digit. Fix: e.g. --name llama-8b")
    return None


def _rjob_pods(name: str, rjob: dict[str, Any]) -> Iterator[str]:
    """The largest hostname a replicated Job's pods get: <name>-<rjob>-<i>-<j>."""
    replicas = rjob.get("replicas", 1)
    spec = (rjob.get("template") or {}).get("spec") or {}
    completions = spec.get("completions", spec.get("parallelism", 1))
    if isinstance(replicas, int) and isinstance(completions, int):
        yield f"{name}-{rjob.get('name', '')}-{max(replicas - 1, 0)}-{max(completions - 1, 0)}"


def name_problems(doc: dict[str, Any]) -> Iterator[str]:
    kind = doc.get("kind")
    name = (doc.get("metadata") or {}).get("name")
    found = name_problem(f"{kind} metadata.name", name)
    if found:
        yield found
        return
    spec = doc.get("spec") or {}
    rjobs: list[dict[str, Any]] = []
    if kind == "JobSet":
        rjobs = spec.get("replicatedJobs") or []
    elif kind == "TrainJob":
        rjobs = [{"name": r.TRAINER_RJOB, "replicas": 1,
                  "template": {"spec": {"completions": (spec.get("trainer") or {}).get("numNodes", 1)}}}]
    for rjob in rjobs:
        bad = name_problem(f"{kind} replicatedJobs name", rjob.get("name"))
        if bad:
            yield bad
            continue
        for host in _rjob_pods(str(name), rjob):
            bad = name_problem("pod hostname <name>-<job>-<i>-<j>", host, rfc1035=False)
            if bad:
                yield bad + " (the name and replicated Job name together)"
    if kind == "PyTorchJob":
        workers = ((spec.get("pytorchReplicaSpecs") or {}).get("Worker") or {}).get("replicas", 0)
        if isinstance(workers, int) and workers > 0:
            bad = name_problem("PyTorchJob service <name>-worker-<i>", f"{name}-worker-{workers - 1}")
            if bad:
                yield bad


def pod_templates(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, pod template spec) of every pod a document describes."""
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    jobset: dict[str, Any] | None = None
    if kind == "JobSet":
        jobset = spec
    elif kind == "ClusterTrainingRuntime":
        jobset = (spec.get("template") or {}).get("spec") or {}
    if jobset is not None:
        for rjob in jobset.get("replicatedJobs") or []:
            pod = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")
            if isinstance(pod, dict):
                yield f"{kind} replicatedJobs[{rjob.get('name')}]", pod
    elif kind == "PyTorchJob":
        for role, replica in (spec.get("pytorchReplicaSpecs") or {}).items():
            pod = ((replica or {}).get("template") or {}).get("spec")
            if isinstance(pod, dict):
                yield f"PyTorchJob {role}", pod


def _requests(container: dict[str, Any]) -> dict[str, Any]:
    res = container.get("resources") or {}
    return {**(res.get("requests") or {}), **(res.get("limits") or {})}


def shm_problem(where: str, pod: dict[str, Any]) -> str | None:
    volumes = {v.get("name"): v for v in pod.get("volumes") or [] if isinstance(v, dict)}
    for c in pod.get("containers") or []:
        for mount in c.get("volumeMounts") or []:
            if mount.get("mountPath") != "/dev/shm":
                continue
            empty = (volumes.get(mount.get("name")) or {}).get("emptyDir")
            if not isinstance(empty, dict) or empty.get("medium") != "Memory":
                return (f"{where}: /dev/shm is mounted from '{mount.get('name')}', not a memory emptyDir; "
                        "accepted: emptyDir {medium: Memory, sizeLimit: SIZE}")
            if not empty.get("sizeLimit"):
                return f"{where}: the /dev/shm emptyDir has no sizeLimit; accepted: e.g. sizeLimit: 64Gi"
            return None
    return (f"{where}: /dev/shm is not mounted: the container gets the runtime's 64 MiB and RCCL/NCCL fail "
            "creating their shared-memory segments. Fix: a volume emptyDir {medium: Memory, sizeLimit: 64Gi} "
            "mounted at /dev/shm (primus-cli k8s renders it)")


def device_problems(where: str, pod: dict[str, Any], extra: dict[str, Any] | None = None) -> Iterator[str]:
    asked: dict[str, Any] = dict(extra or {})
    for c in pod.get("containers") or []:
        asked.update(_requests(c))
    neuron = [n for n in r.NEURON_RESOURCES if n in asked]
    efa = asked.get(r.EFA_RESOURCE)
    if neuron and not efa:
        yield (f"{where}: asks for {neuron[0]} but not {r.EFA_RESOURCE}: the collectives would fall back to "
               f"TCP. Fix: request {r.EFA_RESOURCE} at the instance's count (primus-cli k8s --preset trn1 "
               "renders 8)")
    if efa:
        for v in pod.get("volumes") or []:
            path = str(((v or {}).get("hostPath") or {}).get("path", ""))
            if path.rstrip("/") == "/dev/infiniband" or path.startswith("/dev/infiniband/"):
                yield (f"{where}: volume '{v.get('name')}' mounts hostPath {path} beside "
                       f"{r.EFA_RESOURCE}: the EFA provider is not found (fi_info -p efa fails) and NCCL falls "
                       "back to TCP. Fix: drop the hostPath; the EFA device plugin adds the devices")


def trainjob_problems(doc: dict[str, Any]) -> Iterator[str]:
    spec = doc.get("spec") or {}
    for old, release in OLD_TRAINER_FIELDS.items():
        if old in spec:
            yield (f"TrainJob spec.{old} is a field of {release}; Trainer v2.2 and later prune it (its "
                   "tolerations and volumes are silently lost). Fix: spec.runtimePatches")
    trainer = spec.get("trainer") or {}
    if "numProcPerNode" in trainer:
        n = trainer["numProcPerNode"]
        if isinstance(n, bool) or not isinstance(n, int):
            yield (f"TrainJob spec.trainer.numProcPerNode is {n!r} (a {type(n).__name__}); Trainer v2.2 and "
                   "later take an integer only ('auto' counted only resources named *gpu*, so Neuron and "
                   "AMD partition resources got the CPU count). Fix: numProcPerNode: <processes per node>")
        elif n < 1:
            yield f"TrainJob spec.trainer.numProcPerNode is {n}; accepted: an integer >= 1"
    for entry in trainer.get("env") or []:
        name = str((entry or {}).get("name", ""))
        if name.startswith("PET_"):
            yield (f"TrainJob spec.trainer.env sets {name}: the Trainer injects the PET_* variables itself and "
                   "a second value contradicts it. Fix: drop it")
    asked = (trainer.get("resourcesPerNode") or {})
    extra = {**(asked.get("requests") or {}), **(asked.get("limits") or {})}
    if extra:
        yield from device_problems("TrainJob spec.trainer.resourcesPerNode", {}, extra)


def problems(docs: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for doc in docs:
        if not isinstance(doc, dict):
            found.append(f"a document is a {type(doc).__name__}, not a mapping")
            continue
        kind, api = doc.get("kind"), doc.get("apiVersion")
        if (kind, api) not in KINDS:
            accepted = ", ".join(f"{k} {a}" for k, a in sorted(KINDS))
            found.append(f"kind {kind} apiVersion {api} is not one this check knows; accepted: {accepted}")
            continue
        found.extend(name_problems(doc))
        if kind == "TrainJob":
            found.extend(trainjob_problems(doc))
        for where, pod in pod_templates(doc):
            shm = shm_problem(where, pod)
            if shm:
                found.append(shm)
            found.extend(device_problems(where, pod))
            if kind in ("JobSet", "ClusterTrainingRuntime") and pod.get("restartPolicy", "Never") != "Never":
                found.append(f"{where}: restartPolicy {pod.get('restartPolicy')} restarts one container in place "
                             "while its peers wait in the old collective. Fix: restartPolicy: Never and "
                             "failurePolicy.maxRestarts for the job")
    return found
