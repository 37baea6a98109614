"""Render one launch as Kubernetes manifests: pure functions from Options and a
preset (data/k8s_presets.yaml) to plain dicts; the YAML text is ``to_yaml``.

Targets:
* ``jobset`` (default): a JobSet ``jobset.x-k8s.io/v1alpha2`` with one headless
  service (``network.enableDNSHostnames``, ``publishNotReadyAddresses`` so a peer
  resolves before it is Ready), one replicated Job of ``nodes`` indexed pods
  (``completions = parallelism = nodes``), ``restartPolicy: Never``,
  ``backoffLimit: 0`` and ``failurePolicy.maxRestarts`` = the restart budget: a
  failed pod restarts the whole JobSet, never one container in place.
* ``trainjob``: a Kubeflow Trainer (v2.2 and later) ``TrainJob`` plus the
  ``ClusterTrainingRuntime`` it references; the runtime carries what a TrainJob
  cannot (hostNetwork, hostIPC, the failure policy), the TrainJob an integer
  ``numProcPerNode`` and its pod changes as ``runtimePatches``.
* ``pytorchjob``: a Kubeflow training-operator v1 ``PyTorchJob`` (Master + Worker).

Every pod runs ``<entry> direct [LAUNCH ARGS] [-- WORKLOAD ARGS]``; the user's
variables become the container's ``env:`` (secrets as ``secretKeyRef``, never
their value) after the same ``env check`` verdict a launch gets (k8s/cli.py).
"""
from __future__ import annotations

from typing import Any

from primus_runner.errors import UsageError
from primus_runner.records import dataclass, field

LABEL = "primus-runner/name"
CONTAINER = "primus"
JOBSET_RJOB = "node"          # the replicated Job; pods are <name>-node-0-<i>
TRAINER_RJOB = "node"         # Trainer's runtimes name the trainer step "node"
TRAINER_CONTAINER = "node"    # ... and its container "node" (where PET_* go)
PYTORCH_CONTAINER = "pytorch"  # the training-operator v1 requires this name
SHM_VOLUME = "dshm"
MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
NEURON_RESOURCES = ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice")
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
TRAINER_API = "trainer.kubeflow.org/v1alpha1"
PYTORCHJOB_API = "kubeflow.org/v1"
TRAINER_MANAGER = "primus-runner/k8s"
TARGETS = ("jobset", "trainjob", "pytorchjob")


@dataclass(frozen=True)
class Options:
    """What `primus-cli k8s` was asked for (already parsed; validated by ``plan``)."""

    name: str
    image: str
    nodes: int
    preset: str
    target: str = "jobset"
    namespace: str | None = None
    restarts: int = 0
    network: str | None = None
    multus: tuple[str, ...] = ()
    nic_resources: tuple[tuple[str, int], ...] = ()
    efa: int | None = None
    devices: int | None = None
    nproc: int | None = None
    shm_size: str | None = None
    privileged: bool = False
    port: int = 29500
    entry: str = "primus-cli"
    launch_args: tuple[str, ...] = ()
    workload: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    secret_name: str | None = None
    secret_names: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Plan:
    """The resolved pod shape: the preset with the user's options applied."""

    accelerator: str
    resource: str
    devices: int
    nproc: int
    efa: int | None
    network: str
    shm_size: str
    hugepages: str | None
    memory: str | None
    tolerations: tuple[dict[str, Any], ...]
    capabilities: tuple[str, ...]
    host_ipc: bool
    seccomp_unconfined: bool


def _count(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"preset value {what}={value!r} is not an integer >= 1; fix data/k8s_presets.yaml.")
    return value


def plan(opts: Options, preset: dict[str, Any]) -> Plan:
    """The preset with the user's overrides, or a UsageError naming what is missing."""
    networks = [str(n) for n in preset.get("networks") or ["pod"]]
    network = opts.network or networks[0]
    if network not in networks:
        raise UsageError(f"--network {network} is not a mode of preset {opts.preset}; accepted: "
                         f"{', '.join(networks)}.")
    if network == "multus" and not opts.multus:
        raise UsageError("--network multus needs the networks by name: --multus NAME[,NAME...] (the "
                         "NetworkAttachmentDefinitions of the RoCE NICs), e.g. --multus rdma-net-0,rdma-net-1.")
    if opts.multus and network != "multus":
        raise UsageError(f"--multus given with --network {network}; accepted: --multus only with "
                         "--network multus.")
    devices = opts.devices or _count(preset.get("count"), "count")
    nproc = opts.nproc or _count(preset.get("nproc_per_node"), "nproc_per_node")
    efa = opts.efa if opts.efa is not None else _count(preset.get("efa"), "efa")
    missing = [flag for flag, value in (("--devices N", devices), ("--nproc N", nproc)) if value is None]
    resource = str(preset["resource"])
    if resource in NEURON_RESOURCES and efa is None:
        missing.append("--efa N")
    if missing:
        raise UsageError(f"preset {opts.preset} has no sourced value for {', '.join(missing)}; give "
                         f"{' '.join(missing)} (the instance's counts from its AWS documentation).")
    assert devices is not None and nproc is not None
    return Plan(accelerator=str(preset.get("accelerator", "auto")), resource=resource,
                devices=devices, nproc=nproc, efa=efa, network=network,
                shm_size=opts.shm_size or str(preset.get("shm_size", "64Gi")),
                hugepages=preset.get("hugepages_2mi"), memory=preset.get("memory"),
                tolerations=tuple(dict(t) for t in preset.get("tolerations") or ()),
                capabilities=tuple(str(c) for c in preset.get("capabilities") or ()),
                host_ipc=bool(preset.get("host_ipc")), seccomp_unconfined=bool(preset.get("seccomp_unconfined")))


# ------------------------------------------------------------------ names

def coordinator(name: str) -> str:
    """The JobSet pod of index 0 by its stable DNS name: <jobset>-<rjob>-0-0.<subdomain>
    (the subdomain is the JobSet's name unless network.subdomain says otherwise)."""
    return f"{name}-{JOBSET_RJOB}-0-0.{name}"


def secret_name(opts: Options) -> str:
    return opts.secret_name or f"{opts.name}-secrets"


# ------------------------------------------------------------------ env

def user_env(opts: Options) -> dict[str, str]:
    """The user's variables, later items winning (config direct.env, then --env)."""
    out: dict[str, str] = {}
    for name, value in opts.env:
        out.pop(name, None)
        out[name] = value
    return out


def launcher_env(opts: Options, p: Plan) -> dict[str, str]:
    """What the render adds so the pod side knows the job: the coordinator, port,
    node count and process count for a JobSet (JobSet sets only
    JOB_COMPLETION_INDEX); the process count for a PyTorchJob; nothing for a
    TrainJob (the Trainer injects PET_*; a PET_* of ours would contradict it)."""
    if opts.target == "jobset":
        return {"MASTER_ADDR": coordinator(opts.name), "MASTER_PORT": str(opts.port),
                "NNODES": str(opts.nodes), "GPUS_PER_NODE": str(p.nproc)}
    if opts.target == "pytorchjob":
        return {"GPUS_PER_NODE": str(p.nproc)}
    return {}


def checked_env(opts: Options, p: Plan) -> dict[str, str]:
    """The variables the pod gets from the manifest, values as given: what env check judges."""
    return {**launcher_env(opts, p), **user_env(opts)}


def env_list(opts: Options, p: Plan) -> list[dict[str, Any]]:
    """The container's env: entries; a secret is a secretKeyRef (name/key), never its value."""
    out: list[dict[str, Any]] = []
    for name, value in checked_env(opts, p).items():
        if name in opts.secret_names:
            out.append({"name": name, "valueFrom": {"secretKeyRef": {"name": secret_name(opts), "key": name}}})
        else:
            out.append({"name": name, "value": value})
    return out


# ------------------------------------------------------------------ pod

def command(opts: Options) -> list[str]:
    words = [opts.entry, "direct", *opts.launch_args]
    if opts.workload:
        words += ["--", *opts.workload]
    return words


def resources(opts: Options, p: Plan) -> dict[str, Any]:
    amounts: dict[str, Any] = {p.resource: p.devices}
    if p.efa:
        amounts[EFA_RESOURCE] = p.efa
    for name, count in opts.nic_resources:
        amounts[name] = count
    if p.hugepages:
        amounts["hugepages-2Mi"] = p.hugepages
        amounts["memory"] = p.memory or "8000Mi"
    return {"limits": dict(amounts), "requests": dict(amounts)}


def security_context(opts: Options, p: Plan) -> dict[str, Any]:
    ctx: dict[str, Any] = {"capabilities": {"add": list(p.capabilities)}}
    if p.seccomp_unconfined:
        ctx["seccompProfile"] = {"type": "Unconfined"}
    if opts.privileged:
        ctx["privileged"] = True
    return ctx


def shm_volume(p: Plan) -> dict[str, Any]:
    return {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": p.shm_size}}


def shm_mount() -> dict[str, Any]:
    return {"name": SHM_VOLUME, "mountPath": "/dev/shm"}


def pod_network(p: Plan) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if p.network == "host":
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if p.host_ipc:
        spec["hostIPC"] = True
    return spec


def pod_metadata(opts: Options, p: Plan) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {LABEL: opts.name}}
    if p.network == "multus":
        meta["annotations"] = {MULTUS_ANNOTATION: ",".join(opts.multus)}
    return meta


def container(opts: Options, p: Plan, name: str, with_command: bool = True) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": opts.image}
    if with_command:
        c["command"] = command(opts)
    env = env_list(opts, p)
    if env:
        c["env"] = env
    c["resources"] = resources(opts, p)
    c["securityContext"] = security_context(opts, p)
    c["volumeMounts"] = [shm_mount()]
    return c


def pod_spec(opts: Options, p: Plan, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", **pod_network(p)}
    if p.tolerations:
        spec["tolerations"] = [dict(t) for t in p.tolerations]
    spec["containers"] = [container(opts, p, name)]
    spec["volumes"] = [shm_volume(p)]
    return spec


def _metadata(opts: Options, name: str | None = None, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name or opts.name}
    if namespaced and opts.namespace:
        meta["namespace"] = opts.namespace
    meta["labels"] = {LABEL: opts.name}
    return meta


# ------------------------------------------------------------------ targets

def jobset_spec(opts: Options, p: Plan, pod: dict[str, Any], rjob: str) -> dict[str, Any]:
    return {
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": {"maxRestarts": opts.restarts},
        "replicatedJobs": [{
            "name": rjob,
            "replicas": 1,
            "template": {"spec": {
                "completionMode": "Indexed", "completions": opts.nodes, "parallelism": opts.nodes,
                "backoffLimit": 0,
                "template": {"metadata": pod_metadata(opts, p), "spec": pod},
            }},
        }],
    }


def render_jobset(opts: Options, p: Plan) -> list[dict[str, Any]]:
    spec = jobset_spec(opts, p, pod_spec(opts, p, CONTAINER), JOBSET_RJOB)
    return [{"apiVersion": JOBSET_API, "kind": "JobSet", "metadata": _metadata(opts), "spec": spec}]


def runtime_name(opts: Options) -> str:
    return f"{opts.name}-runtime"


def render_trainjob(opts: Options, p: Plan) -> list[dict[str, Any]]:
    """The ClusterTrainingRuntime (pod shape that TrainJob cannot carry: host
    network and IPC, restart policy, failure policy, /dev/shm, tolerations) and
    the TrainJob (image, command, integer numProcPerNode, resources, env) with a
    runtimePatches entry labelling the pods (v2.2+; v2.0's podSpecOverrides and
    v2.1's podTemplateOverrides are never emitted)."""
    pod = pod_spec(opts, p, TRAINER_CONTAINER)
    bare = {"name": TRAINER_CONTAINER, "image": opts.image,
            "securityContext": security_context(opts, p), "volumeMounts": [shm_mount()]}
    pod["containers"] = [bare]
    spec = jobset_spec(opts, p, pod, TRAINER_RJOB)
    job_template = spec["replicatedJobs"][0]
    job_template["template"]["metadata"] = {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}}
    runtime = {
        "apiVersion": TRAINER_API, "kind": "ClusterTrainingRuntime",
        "metadata": {"name": runtime_name(opts), "labels": {LABEL: opts.name,
                                                            "trainer.kubeflow.org/framework": "torch"}},
        "spec": {"mlPolicy": {"numNodes": opts.nodes, "torch": {}},
                 "template": {"spec": spec}},
    }
    trainer: dict[str, Any] = {"image": opts.image, "command": command(opts), "numNodes": opts.nodes,
                               "numProcPerNode": p.nproc, "resourcesPerNode": resources(opts, p)}
    env = env_list(opts, p)
    if env:
        trainer["env"] = env
    patch = {"manager": TRAINER_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
        "name": TRAINER_RJOB,
        "template": {"spec": {"template": {"metadata": pod_metadata(opts, p)}}},
    }]}}}}
    trainjob = {"apiVersion": TRAINER_API, "kind": "TrainJob", "metadata": _metadata(opts),
                "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime",
                                        "name": runtime_name(opts)},
                         "trainer": trainer, "runtimePatches": [patch]}}
    return [runtime, trainjob]


def render_pytorchjob(opts: Options, p: Plan) -> list[dict[str, Any]]:
    """PyTorchJob v1 as Primus-SaFE renders it: Master (1) + Worker (nodes-1), the
    same pod (host network, IPC_LOCK, /dev/shm), restartPolicy Never, the restart
    budget as runPolicy.backoffLimit, nprocPerNode as the schema's string."""
    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never",
                "template": {"metadata": pod_metadata(opts, p), "spec": pod_spec(opts, p, PYTORCH_CONTAINER)}}

    specs = {"Master": replica(1)}
    if opts.nodes > 1:
        specs["Worker"] = replica(opts.nodes - 1)
    for spec in specs.values():
        del spec["template"]["spec"]["restartPolicy"]  # the replica's restartPolicy owns it
    return [{"apiVersion": PYTORCHJOB_API, "kind": "PyTorchJob", "metadata": _metadata(opts),
             "spec": {"nprocPerNode": str(p.nproc), "runPolicy": {"backoffLimit": opts.restarts},
                      "pytorchReplicaSpecs": specs}}]


def render(opts: Options, preset: dict[str, Any]) -> list[dict[str, Any]]:
    p = plan(opts, preset)
    if opts.target == "trainjob":
        return render_trainjob(opts, p)
    if opts.target == "pytorchjob":
        return render_pytorchjob(opts, p)
    return render_jobset(opts, p)


# ------------------------------------------------------------------ YAML

def to_yaml(docs: list[dict[str, Any]]) -> str:
    """The documents as one YAML stream (keys in render order, block style)."""
    from primus_runner.yamlload import import_yaml

    yaml = import_yaml()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    parts = [yaml.dump(doc, Dumper=dumper, sort_keys=False, default_flow_style=False, width=4096,
                       allow_unicode=True) for doc in docs]
    return "".join("---\n" + part for part in parts)
