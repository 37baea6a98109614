"""Offline schema validation of rendered manifests.

* The custom resources (JobSet v0.9.1, Trainer v2.3.0 TrainJob and
  ClusterTrainingRuntime, PyTorchJob v1.9.4) against the CRDs vendored in
  data/k8s/ (data/k8s/README.md says where they come from), made strict: an
  object with ``properties`` rejects any other field unless the schema says
  ``x-kubernetes-preserve-unknown-fields`` (so a field of another Trainer release
  is refused instead of silently pruned by the API server). The subset of
  OpenAPI v3 that CRDs use is walked here (type, properties,
  additionalProperties, items, required, enum, int-or-string); CEL rules are
  k8s/checks.py's.
* The core types inside them (every pod template as a Pod, JobSet's job template
  as a batch/v1 Job) against the strict JSON schemas of the PyPI package
  ``kubernetes-validate`` when it is installed (a development dependency).
"""
from __future__ import annotations

import os
from functools import cache
from typing import Any

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "k8s")
CRD_FILES = {
    ("JobSet", "jobset.x-k8s.io/v1alpha2"): "jobset.x-k8s.io_jobsets.v0.9.1.yaml",
    ("TrainJob", "trainer.kubeflow.org/v1alpha1"): "trainer.kubeflow.org_trainjobs.v2.3.0.yaml",
    ("ClusterTrainingRuntime", "trainer.kubeflow.org/v1alpha1"):
        "trainer.kubeflow.org_clustertrainingruntimes.v2.3.0.yaml",
    ("PyTorchJob", "kubeflow.org/v1"): "kubeflow.org_pytorchjobs.v1.9.4.yaml",
}
K8S_VERSION = "1.33"  # the core schema version the pods are checked against
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                       "boolean": (bool,), "object": (dict,), "array": (list,)}


@cache
def crd_schema(kind: str, api_version: str) -> dict[str, Any] | None:
    """openAPIV3Schema of the vendored CRD's version for (kind, apiVersion), or None."""
    name = CRD_FILES.get((kind, api_version))
    if name is None:
        return None
    from primus_runner.yamlload import import_yaml, safe_loader

    yaml = import_yaml()
    with open(os.path.join(DATA_DIR, name), encoding="utf-8") as handle:
        crd = yaml.load(handle, Loader=safe_loader(yaml))
    version = api_version.rsplit("/", 1)[1]
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
            return schema
    return None


def _type_ok(value: object, wanted: str) -> bool:
    if wanted in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES.get(wanted, (object,)))


def strict_errors(value: object, schema: dict[str, Any], path: str = "") -> list[str]:
    """Every place ``value`` breaks ``schema`` made strict (path: error)."""
    where = path or "(root)"
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, (int, str)) and not isinstance(value, bool)
        return [] if ok else [f"{where}: {value!r} is neither an integer nor a string"]
    wanted = schema.get("type")
    if wanted and not _type_ok(value, wanted):
        return [f"{where}: {value!r} is a {type(value).__name__}; the schema wants {wanted}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']}"]
    errors: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key in schema.get("required") or []:
            if key not in value:
                errors.append(f"{where}: required field '{key}' is missing")
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if props is not None and key in props:
                errors += strict_errors(item, props[key], sub)
            elif isinstance(extra, dict):
                errors += strict_errors(item, extra, sub)
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields") and extra is not True:
                errors.append(f"{sub}: unknown field (not in the schema; a field of another release?)")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors += strict_errors(item, schema["items"], f"{path}[{i}]")
    return errors


def crd_errors(doc: dict[str, Any]) -> list[str]:
    schema = crd_schema(str(doc.get("kind")), str(doc.get("apiVersion")))
    if schema is None:
        return [f"no vendored schema for kind {doc.get('kind')} apiVersion {doc.get('apiVersion')}"]
    return [f"{doc.get('kind')} {e}" for e in strict_errors(doc, schema)]


def core_objects(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The core objects a custom resource carries, as whole core resources."""
    from primus_runner.k8s.checks import pod_templates

    out: list[tuple[str, dict[str, Any]]] = []
    name = (doc.get("metadata") or {}).get("name", "x")
    for where, pod in pod_templates(doc):
        if doc.get("kind") == "ClusterTrainingRuntime":
            # The trainer container's image comes from the TrainJob at admission.
            pod = {**pod, "containers": [{**c, "image": c.get("image") or "set-by-trainjob"}
                                         for c in pod.get("containers") or []]}
        out.append((f"{where} (as a v1 Pod)",
                    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod}))
    if doc.get("kind") == "JobSet":
        for rjob in (doc.get("spec") or {}).get("replicatedJobs") or []:
            job_spec = (rjob.get("template") or {}).get("spec")
            if isinstance(job_spec, dict):
                out.append((f"JobSet replicatedJobs[{rjob.get('name')}] (as a batch/v1 Job)",
                            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                             "spec": job_spec}))
    return out


def core_available() -> bool:
    try:
        import kubernetes_validate  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def core_errors(doc: dict[str, Any]) -> list[str]:
    """Core Pod/Job schema errors (strict); [] when kubernetes-validate is not installed."""
    if not core_available():
        return []
    import kubernetes_validate

    errors = []
    for where, obj in core_objects(doc):
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in getattr(exc, "path", []) or [])
            errors.append(f"{where}: {path}: {getattr(exc, 'message', exc)}")
    return errors


def errors(docs: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for doc in docs:
        if isinstance(doc, dict):
            found += crd_errors(doc)
            found += core_errors(doc)
    return found
