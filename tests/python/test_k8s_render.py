"""primus-cli k8s: every preset x target renders manifests that pass the vendored
CRD schemas made strict and the core Pod/Job schemas (kubernetes-validate), and
the invariants hold; each kind of bad manifest is refused with its reason; the
env check verdict is the same rule as `env check`; secrets never reach the YAML.
Expected values come from the issue's requirements and the cited AWS/AMD docs
(trn1.32xlarge: 8 EFA, trn1n.32xlarge: 16), never from the renderer."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from primus_runner.k8s import checks, presets, render, schema
from primus_runner.k8s.cli import options, verify

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "runner" / "primus-cli"
PRESETS = ["mi300x", "mi325x", "mi355x", "trn1", "trn1n", "trn2"]
TARGETS = ["jobset", "trainjob", "pytorchjob"]
EFA = {"trn1": 8, "trn1n": 16}  # AWS Neuron docs: trn1.32xlarge 8 EFA devices, trn1n.32xlarge 16


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "PRIMUS_LOG_COLOR": "0"}
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, env={**base, **(env or {})},
                          timeout=60, check=False)


def rendered(preset: str, target: str, nodes: int = 2, *extra: str) -> list[dict[str, Any]]:
    words = ["--image", "registry.example/primus:1", "--nodes", str(nodes), "--preset", preset,
             "--name", "llama", "--as", target]
    if preset == "trn2":
        words += ["--devices", "16", "--nproc", "64", "--efa", "16"]
    opts = options([*words, *extra, "--", "direct", "--", "train", "pretrain", "--config", "exp.yaml"], {})
    return render.render(opts, presets.get(preset))


def pods(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [pod for doc in docs for _, pod in checks.pod_templates(doc)]


def containers(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for pod in pods(docs) for c in pod["containers"]]


def all_resources(docs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in containers(docs):
        out.update(c.get("resources", {}).get("limits", {}))
    for doc in docs:
        if doc["kind"] == "TrainJob":
            out.update(doc["spec"]["trainer"]["resourcesPerNode"]["limits"])
    return out


def env_names(docs: list[dict[str, Any]]) -> list[str]:
    names = [e["name"] for c in containers(docs) for e in c.get("env", [])]
    for doc in docs:
        if doc["kind"] == "TrainJob":
            names += [e["name"] for e in doc["spec"]["trainer"].get("env", [])]
    return names


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("target", TARGETS)
def test_every_preset_and_target_passes_the_strict_schemas(preset: str, target: str) -> None:
    assert schema.core_available(), "kubernetes-validate (a dev dependency) must be installed"
    docs = rendered(preset, target)
    assert verify(docs) == []
    kinds = [d["kind"] for d in docs]
    assert kinds == {"jobset": ["JobSet"], "trainjob": ["ClusterTrainingRuntime", "TrainJob"],
                     "pytorchjob": ["PyTorchJob"]}[target]
    for pod in pods(docs):  # /dev/shm: a memory emptyDir with a size, mounted
        shm = [v for v in pod["volumes"] if v.get("emptyDir", {}).get("medium") == "Memory"]
        assert shm and shm[0]["emptyDir"]["sizeLimit"]
        assert any(m["mountPath"] == "/dev/shm" and m["name"] == shm[0]["name"]
                   for c in pod["containers"] for m in c["volumeMounts"])
        assert not any("/dev/infiniband" in str(v.get("hostPath", {}).get("path", "")) for v in pod["volumes"])
    for c in containers(docs):
        assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]
        assert "SYS_PTRACE" in c["securityContext"]["capabilities"]["add"]
        assert "privileged" not in c["securityContext"]


@pytest.mark.parametrize("preset,nodes", [("mi300x", 2), ("trn1", 2), ("trn1", 16), ("trn1n", 16)])
def test_jobset_shape(preset: str, nodes: int) -> None:
    (js,) = rendered(preset, "jobset", nodes, "--restarts", "3")
    assert js["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert js["spec"]["network"]["enableDNSHostnames"] is True
    assert js["spec"]["failurePolicy"]["maxRestarts"] == 3
    (rjob,) = js["spec"]["replicatedJobs"]
    job = rjob["template"]["spec"]
    assert (job["completionMode"], job["completions"], job["parallelism"], job["backoffLimit"]) == \
        ("Indexed", nodes, nodes, 0)
    pod = job["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == f"llama-{rjob['name']}-0-0.llama"
    assert env["NNODES"] == str(nodes)
    assert pod["containers"][0]["command"][:2] == ["primus-cli", "direct"]
    assert pod["containers"][0]["command"][-4:] == ["train", "pretrain", "--config", "exp.yaml"]


def test_amd_host_network_and_multus() -> None:
    pod = pods(rendered("mi300x", "jobset"))[0]
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet" and pod["hostIPC"] is True
    assert pod["containers"][0]["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    assert pod["containers"][0]["resources"]["limits"]["amd.com/gpu"] == 8
    docs = rendered("mi300x", "jobset", 2, "--network", "multus", "--multus", "rdma-0,rdma-1",
                    "--nic-resource", "amd.com/nic=8")
    assert verify(docs) == []
    tmpl = docs[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert tmpl["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "rdma-0,rdma-1"
    assert "hostNetwork" not in tmpl["spec"]
    assert tmpl["spec"]["containers"][0]["resources"]["limits"]["amd.com/nic"] == 8


@pytest.mark.parametrize("preset", ["trn1", "trn1n"])
@pytest.mark.parametrize("target", TARGETS)
def test_trainium_efa_count_and_hugepages(preset: str, target: str) -> None:
    res = all_resources(rendered(preset, target))
    assert res["vpc.amazonaws.com/efa"] == EFA[preset]
    assert res["aws.amazon.com/neuron"] == 16
    assert res["hugepages-2Mi"] and res["memory"]
    for pod in pods(rendered(preset, target)):
        assert "hostNetwork" not in pod  # bootstrap on the pod's eth0, EFA from the plugin


def test_trn2_needs_the_counts_given() -> None:
    opts = options(["--image", "i", "--nodes", "2", "--preset", "trn2", "--name", "a"], {})
    with pytest.raises(Exception, match=r"--devices N.*--nproc N.*--efa N"):
        render.render(opts, presets.get("trn2"))


@pytest.mark.parametrize("preset", ["mi300x", "trn1"])
def test_trainjob_integer_nproc_runtime_patches_and_no_pet(preset: str) -> None:
    runtime, job = rendered(preset, "trainjob")
    n = job["spec"]["trainer"]["numProcPerNode"]
    assert isinstance(n, int) and not isinstance(n, bool) and n == {"mi300x": 8, "trn1": 32}[preset]
    assert job["spec"]["runtimeRef"]["name"] == runtime["metadata"]["name"]
    assert job["spec"]["runtimePatches"][0]["manager"]
    assert "podSpecOverrides" not in job["spec"] and "podTemplateOverrides" not in job["spec"]
    assert not [n for n in env_names([runtime, job]) if n.startswith("PET_")]
    assert runtime["spec"]["template"]["spec"]["failurePolicy"]["maxRestarts"] == 0


def test_pytorchjob_master_worker() -> None:
    (job,) = rendered("mi300x", "pytorchjob", 4)
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["replicas"] == 1 and specs["Worker"]["replicas"] == 3
    assert all(s["restartPolicy"] == "Never" for s in specs.values())
    assert all(s["template"]["spec"]["containers"][0]["name"] == "pytorch" for s in specs.values())
    assert job["spec"]["nprocPerNode"] == "8"


# ------------------------------------------------------------------ refusals

def _pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return pods(docs)[0]


def test_refuses_a_field_of_another_trainer_release() -> None:
    docs = copy.deepcopy(rendered("trn1", "trainjob"))
    docs[1]["spec"]["podTemplateOverrides"] = [{"targetJobs": [{"name": "node"}]}]
    reasons = verify(docs)
    assert any("podTemplateOverrides is a field of Trainer v2.1" in r for r in reasons)
    assert any("spec.podTemplateOverrides: unknown field" in r for r in reasons)


def test_refuses_a_string_num_proc_per_node() -> None:
    docs = copy.deepcopy(rendered("trn1", "trainjob"))
    docs[1]["spec"]["trainer"]["numProcPerNode"] = "auto"
    assert any("numProcPerNode is 'auto'" in r and "integer only" in r for r in verify(docs))


def test_refuses_a_missing_dev_shm() -> None:
    docs = copy.deepcopy(rendered("mi300x", "jobset"))
    _pod(docs)["containers"][0]["volumeMounts"] = []
    assert any("/dev/shm is not mounted" in r for r in verify(docs))
    docs = copy.deepcopy(rendered("mi300x", "jobset"))
    del _pod(docs)["volumes"][0]["emptyDir"]["sizeLimit"]
    assert any("no sizeLimit" in r for r in verify(docs))


@pytest.mark.parametrize("target", ["jobset", "trainjob", "pytorchjob"])
def test_refuses_a_missing_efa_request_on_trn1(target: str) -> None:
    docs = copy.deepcopy(rendered("trn1", target))
    for c in containers(docs):
        for part in c.get("resources", {}).values():
            part.pop("vpc.amazonaws.com/efa", None)
    for doc in docs:
        if doc["kind"] == "TrainJob":
            for part in doc["spec"]["trainer"]["resourcesPerNode"].values():
                part.pop("vpc.amazonaws.com/efa", None)
    assert any("but not vpc.amazonaws.com/efa" in r for r in verify(docs))


def test_refuses_infiniband_host_path_beside_efa() -> None:
    docs = copy.deepcopy(rendered("trn1", "jobset"))
    _pod(docs)["volumes"].append({"name": "ib", "hostPath": {"path": "/dev/infiniband"}})
    assert any("hostPath /dev/infiniband beside vpc.amazonaws.com/efa" in r for r in verify(docs))


def test_refuses_long_and_bad_names() -> None:
    docs = copy.deepcopy(rendered("mi300x", "jobset", 16))
    docs[0]["metadata"]["name"] = "a" * 54  # 54 + len("-node-0-15") = 64 > 63
    assert any("is 64 characters" in r for r in verify(docs))
    docs[0]["metadata"]["name"] = "Llama_8B"
    assert any("not an RFC 1035 label" in r for r in verify(docs))


def test_refuses_on_failure_restart_policy() -> None:
    docs = copy.deepcopy(rendered("mi300x", "jobset"))
    _pod(docs)["restartPolicy"] = "OnFailure"
    assert any("restartPolicy OnFailure" in r for r in verify(docs))


def test_strict_schema_refuses_unknown_container_field() -> None:
    docs = copy.deepcopy(rendered("mi300x", "jobset"))
    _pod(docs)["containers"][0]["bogus"] = 1
    reasons = schema.errors(docs)
    assert any("containers[0].bogus: unknown field" in r for r in reasons)
    assert any("as a v1 Pod" in r and "bogus" in r for r in reasons)


# ------------------------------------------------------------------ the CLI

def test_check_file_refusals_and_pass(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(render.to_yaml(rendered("trn1", "trainjob")))
    ok = run_cli("k8s", "check", str(good))
    assert ok.returncode == 0, ok.stderr
    docs = rendered("trn1", "trainjob")
    docs[1]["spec"]["trainer"]["numProcPerNode"] = "32"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump_all(docs))
    out = run_cli("k8s", "check", str(bad))
    assert out.returncode == 2
    assert "numProcPerNode is '32' (a str)" in out.stderr
    missing = run_cli("k8s", "check", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 1 and "nope.yaml" in missing.stderr


def test_same_rule_id_as_env_check() -> None:
    env_check = subprocess.run([sys.executable, "-m", "primus_runner", "env", "check", "--format", "json"],
                               capture_output=True, text=True, check=False, cwd=ROOT,
                               env={"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT / "python"),
                                    "NCCL_ALGO": "bogus"})
    assert env_check.returncode == 2
    rules = {f["rule"] for f in json.loads(env_check.stdout)["findings"] if f["variable"] == "NCCL_ALGO"}
    assert len(rules) == 1
    (rule,) = rules
    out = run_cli("--dry-run", "k8s", "--image", "i", "--nodes", "2", "--preset", "mi300x", "--name", "a",
                  "--env", "NCCL_ALGO=bogus", "--", "--", "train")
    assert out.returncode == 2
    assert f"rule {rule}" in out.stderr
    assert "apiVersion" not in out.stdout


def test_secret_is_a_secret_ref_never_the_value() -> None:
    value = "hf_s3cr3t-value-xyz"
    out = run_cli("k8s", "--dry-run", "--image", "i", "--nodes", "2", "--preset", "trn1", "--name", "a",
                  "--env", f"HF_TOKEN={value}", "--as", "trainjob", "--", "direct", "--env",
                  "WANDB_API_KEY", "--", "train", env={"WANDB_API_KEY": "wandb-k3y-value"})
    assert out.returncode == 0, out.stderr
    assert value not in out.stdout + out.stderr and "wandb-k3y-value" not in out.stdout + out.stderr
    docs = list(yaml.safe_load_all(out.stdout))
    env = {e["name"]: e for e in docs[1]["spec"]["trainer"]["env"]}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "a-secrets", "key": "HF_TOKEN"}
    assert env["WANDB_API_KEY"]["valueFrom"]["secretKeyRef"]["key"] == "WANDB_API_KEY"
    assert "--env" not in docs[1]["spec"]["trainer"]["command"]


def test_help_lists_the_presets_from_the_data() -> None:
    out = run_cli("k8s", "--help")
    assert out.returncode == 0
    for name in presets.load():
        assert f"  {name}  " in out.stdout or f"  {name} " in out.stdout


def test_container_mode_and_unknown_options_are_refused() -> None:
    out = run_cli("k8s", "--dry-run", "--image", "i", "--nodes", "2", "--preset", "mi300x", "--name", "a",
                  "--", "container", "--", "train")
    assert out.returncode == 2 and "the pod is the container" in out.stderr
    out = run_cli("k8s", "--dry-run", "--image", "i", "--nodes", "2", "--preset", "mi301x", "--name", "a")
    assert out.returncode == 2 and "mi300x" in out.stderr
    out = run_cli("k8s", "--dry-run", "--nodes", "2", "--preset", "mi300x", "--name", "a")
    assert out.returncode == 2 and "--image" in out.stderr


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", ["mi300x-multus", "trn1-16"])
def test_acceptance_shapes_pass_the_strict_schemas(case: str, target: str) -> None:
    if case == "mi300x-multus":
        docs = rendered("mi300x", target, 2, "--network", "multus", "--multus", "rdma-0")
    else:
        docs = rendered("trn1", target, 16)
    assert verify(docs) == []
    assert all(p.get("hostNetwork") is not True for p in pods(docs))


def test_env_file_and_config_direct_env_reach_the_pod(tmp_path: Path) -> None:
    env_file = tmp_path / "run.env"
    env_file.write_text("NCCL_DEBUG=WARN\nWANDB_API_KEY=wandb-file-secret\n")
    config = tmp_path / "exp.yaml"
    config.write_text("direct:\n  env:\n    - NCCL_DEBUG=INFO\n    - PRIMUS_HANG_TIMEOUT=900\n")
    out = run_cli("k8s", "--dry-run", "--config", str(config), "--image", "i", "--nodes", "2", "--preset",
                  "mi300x", "--name", "a", "--env", str(env_file), "--", "--", "train")
    assert out.returncode == 0, out.stderr
    assert "wandb-file-secret" not in out.stdout
    (js,) = yaml.safe_load_all(out.stdout)
    env = {e["name"]: e for e in js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
           ["containers"][0]["env"]}
    assert env["NCCL_DEBUG"]["value"] == "WARN"  # --env after config direct.env: the later wins
    assert env["PRIMUS_HANG_TIMEOUT"]["value"] == "900"
    assert env["WANDB_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "a-secrets", "key": "WANDB_API_KEY"}
