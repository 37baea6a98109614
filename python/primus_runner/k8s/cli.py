"""``python3 -m primus_runner k8s``: what `primus-cli k8s` (runner/primus-cli-k8s.sh) asks.

usage: python3 -m primus_runner k8s render|check|presets|kubectl ...
  k8s render [OPTIONS] -- [direct] [LAUNCH ARGS] [-- WORKLOAD ARGS]
      the manifest on stdout, after the user's variables passed the env check
      rules (exit 2 with the rule id otherwise) and the manifest passed the strict
      schemas and the renderer's checks (k8s/checks.py; exit 2 with the reason)
  k8s check FILE       the same schema and rule checks on a manifest file
  k8s presets          the presets, one line each (for --help)
  k8s kubectl logs|stop|pods NAME [--namespace NS] [--as KIND] [ARGS...]
      the kubectl argv (NUL-separated) that acts on a job by its label
"""
from __future__ import annotations

import os
import sys
from typing import Any

from primus_runner.errors import MissingError, UsageError
from primus_runner.k8s import render as r

USAGE = ("usage: primus-cli k8s --image IMAGE --nodes N --preset NAME --name NAME [--as jobset|trainjob|pytorchjob] "
         "[--namespace NS] [--restarts N] [--env K=V|FILE|NAME] [--dry-run] -- [direct] [LAUNCH ARGS] "
         "[-- WORKLOAD ARGS]")
_VALUE_OPTIONS = ("--image", "--nodes", "--preset", "--name", "--as", "--namespace", "--restarts", "--env",
                  "--network", "--multus", "--nic-resource", "--efa", "--devices", "--nproc", "--shm-size",
                  "--port", "--entry", "--secret-name", "--config")
_FLAGS = ("--privileged",)


def _int(option: str, text: str, low: int, high: int | None = None) -> int:
    if not text.isdigit() or int(text) < low or (high is not None and int(text) > high):
        accepted = f"an integer {low}..{high}" if high is not None else f"an integer >= {low}"
        raise UsageError(f"{option} '{text}' is not valid; accepted: {accepted}.")
    return int(text)


def parse(argv: list[str]) -> tuple[dict[str, list[str]], set[str], list[str]]:
    """(option -> values, flags, words after the first `--`)."""
    values: dict[str, list[str]] = {}
    flags: set[str] = set()
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return values, flags, argv[i + 1:]
        option, eq, value = word.partition("=")
        if word in _FLAGS:
            flags.add(word)
        elif option in _VALUE_OPTIONS:
            if not eq:
                if i + 1 >= len(argv):
                    raise UsageError(f"option {option} needs a value. {USAGE}")
                i += 1
                value = argv[i]
            values.setdefault(option, []).append(value)
        else:
            from primus_runner.errors import closest

            hint = closest(option, [*_VALUE_OPTIONS, *_FLAGS])
            raise UsageError(f"unknown option '{word}' for primus-cli k8s" + (f"; did you mean {hint}?" if hint else "")
                             + f" {USAGE}")
        i += 1
    return values, flags, []


def split_after(words: list[str]) -> tuple[list[str], list[str], list[str]]:
    """[direct] [LAUNCH ARGS] [-- WORKLOAD] -> (launch args without --env, their --env items, workload)."""
    if words and words[0] == "container":
        raise UsageError("'-- container' is not for Kubernetes: the pod is the container (its image is --image). "
                         "Fix: '-- direct [LAUNCH ARGS]', or give nothing after '--' but the launch args.")
    if words and words[0] == "direct":
        words = words[1:]
    launch: list[str] = []
    env: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            return launch, env, words[i + 1:]
        if word == "--env":
            if i + 1 >= len(words):
                raise UsageError("direct's --env needs KEY=VALUE, a file or a NAME.")
            env.append(words[i + 1])
            i += 2
            continue
        if word.startswith("--env="):
            env.append(word[len("--env="):])
        else:
            launch.append(word)
        i += 1
    return launch, env, []


def options(argv: list[str], environ: dict[str, str] | None = None) -> r.Options:
    from primus_runner.env import inputs
    from primus_runner.masking import is_secret

    environ = dict(os.environ) if environ is None else environ
    values, flags, after = parse(argv)

    def one(option: str) -> str | None:
        given = values.get(option)
        return given[-1] if given else None

    missing = [o for o in ("--image", "--nodes", "--preset", "--name") if one(o) is None]
    if missing:
        raise UsageError(f"missing {', '.join(missing)}. {USAGE}")
    target = one("--as") or "jobset"
    if target not in r.TARGETS:
        raise UsageError(f"--as '{target}' is not a target; accepted: {', '.join(r.TARGETS)}.")
    launch, launch_env, workload = split_after(after)
    items: list[tuple[str, str]] = []
    # config direct.env (runner/.primus.yaml, ~/.primus.yaml, --config FILE: read
    # here, the pod gets the values), then --env in order: env/inputs.py's meaning.
    from primus_runner.config import files as cfgmod

    listed = cfgmod.load(one("--config")).get("direct.env")
    items += inputs.config_items(listed if isinstance(listed, list) else ())
    items += inputs.cli_items([*values.get("--env", []), *launch_env], environ)
    nic: list[tuple[str, int]] = []
    for item in values.get("--nic-resource", []):
        name, sep, count = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--nic-resource '{item}' is not NAME=COUNT; e.g. --nic-resource amd.com/nic=8.")
        nic.append((name, _int("--nic-resource", count, 1)))
    multus = tuple(n for v in values.get("--multus", []) for n in v.split(",") if n)
    number = {o: _int(o, v, 1) for o in ("--efa", "--devices", "--nproc") if (v := one(o)) is not None}
    return r.Options(
        name=one("--name") or "", image=one("--image") or "", nodes=_int("--nodes", one("--nodes") or "", 1),
        preset=(one("--preset") or "").lower(), target=target, namespace=one("--namespace"),
        restarts=_int("--restarts", one("--restarts") or "0", 0), network=one("--network"), multus=multus,
        nic_resources=tuple(nic), efa=number.get("--efa"), devices=number.get("--devices"),
        nproc=number.get("--nproc"), shm_size=one("--shm-size"), privileged="--privileged" in flags,
        port=_int("--port", one("--port") or "29500", 1024, 65535), entry=one("--entry") or "primus-cli",
        launch_args=tuple(launch), workload=tuple(workload), env=tuple(items),
        secret_name=one("--secret-name"),
        secret_names=frozenset(n for n, _ in items if is_secret(n)))


def env_verdict(opts: r.Options, plan: r.Plan) -> int:
    """The env check verdict on the user's variables as the pod gets them (the
    rules engine env check uses, with the render's own MASTER_ADDR/NNODES... beside
    them); findings go to stderr in env check's format; 2 when an error blocks.
    Only findings about a variable the user gave are reported: the rest (what the
    launch layers derive in the pod, this host's limits) is judged again by the
    launch in the pod, on the pod's host."""
    from primus_runner.env.commands import write_report
    from primus_runner.env.rules import CheckContext, check, exit_code

    env = r.checked_env(opts, plan)
    context = CheckContext.from_env(env).replace(host_probes=False, container=True)
    given = set(r.user_env(opts))
    findings = [f for f in check(env, accelerator=plan.accelerator, context=context) if f.variable in given]
    code = exit_code(findings)
    saved, sys.stdout = sys.stdout, sys.stderr
    try:
        write_report(findings, code, strict=False, fmt="text")
    finally:
        sys.stdout = saved
    for f in findings:
        if code and f.severity == "error":
            print(f"[k8s] refused: {f.variable} (rule {f.rule}; 'primus-cli env explain {f.rule}'); "
                  "nothing rendered", file=sys.stderr)
    return code


def refused(reasons: list[str], what: str) -> int:
    for reason in reasons:
        print(f"[k8s] refused: {reason}", file=sys.stderr)
    print(f"[k8s] {len(reasons)} problem(s) in {what}; nothing applied (exit 2)", file=sys.stderr)
    return 2


def verify(docs: list[dict[str, Any]]) -> list[str]:
    from primus_runner.k8s import checks, schema

    return checks.problems(docs) + schema.errors(docs)


def cmd_render(argv: list[str]) -> int:
    from primus_runner.k8s import checks, presets

    opts = options(argv)
    bad = checks.name_problem("--name", opts.name)
    if bad:
        raise UsageError(bad + ".")
    preset = presets.get(opts.preset)
    plan = r.plan(opts, preset)
    code = env_verdict(opts, plan)
    if code:
        return code
    docs = r.render(opts, preset)
    reasons = verify(docs)
    if reasons:
        return refused(reasons, "the rendered manifest")
    if opts.secret_names:
        names = sorted(opts.secret_names)
        literal = " ".join(f"--from-literal={n}=..." for n in names)
        print(f"[k8s] note: {', '.join(names)} come(s) from Secret '{r.secret_name(opts)}' (key = the name), "
              f"never from the manifest; create it once: kubectl create secret generic "
              f"{r.secret_name(opts)} {literal}", file=sys.stderr)
    sys.stdout.write(r.to_yaml(docs))
    return 0


def load_file(path: str) -> list[dict[str, Any]]:
    from primus_runner.yamlload import import_yaml, safe_loader

    yaml = import_yaml()
    try:
        with open(path, encoding="utf-8") as handle:
            docs = [d for d in yaml.load_all(handle, Loader=safe_loader(yaml)) if d is not None]
    except OSError as exc:
        raise MissingError(f"manifest '{path}' cannot be read ({exc.strerror}).") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"manifest '{path}' is not YAML: {exc}") from None
    return docs


def cmd_check(argv: list[str]) -> int:
    from primus_runner.k8s import schema

    if len(argv) != 1 or argv[0].startswith("-"):
        raise UsageError("usage: primus-cli k8s check FILE (a manifest, '-' not accepted)")
    docs = load_file(argv[0])
    if not docs:
        raise UsageError(f"manifest '{argv[0]}' holds no document.")
    reasons = verify(docs)
    if reasons:
        return refused(reasons, argv[0])
    core = "" if schema.core_available() else " (core Pod/Job schemas skipped: pip install kubernetes-validate)"
    print(f"[k8s] {argv[0]}: {len(docs)} document(s) pass the strict schemas and the checks{core}")
    return 0


DELETE_KINDS = {"jobset": "jobset", "trainjob": "trainjob,clustertrainingruntime", "pytorchjob": "pytorchjob"}


def kubectl_argv(argv: list[str]) -> list[str]:
    """The kubectl words for `k8s logs|stop|pods NAME` (by the label the render sets)."""
    from primus_runner.k8s import checks

    if len(argv) < 2 or argv[0] not in ("logs", "stop", "pods"):
        raise UsageError("usage: primus-cli k8s logs|stop|stacks NAME [--namespace NS] [--as KIND]")
    action, name, rest = argv[0], argv[1], argv[2:]
    bad = checks.name_problem("NAME", name)
    if bad:
        raise UsageError(bad + ".")
    namespace: list[str] = []
    kind = "jobset"
    extra: list[str] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("--namespace", "-n", "--as") and i + 1 < len(rest):
            if word == "--as":
                kind = rest[i + 1]
            else:
                namespace = ["--namespace", rest[i + 1]]
            i += 2
            continue
        extra.append(word)
        i += 1
    if kind not in DELETE_KINDS:
        raise UsageError(f"--as '{kind}' is not a target; accepted: {', '.join(DELETE_KINDS)}.")
    selector = ["-l", f"{r.LABEL}={name}"]
    if action == "logs":
        return ["logs", *namespace, *selector, "--prefix", "--tail=-1", "--max-log-requests=1000", *extra]
    if action == "pods":
        return ["get", "pods", *namespace, *selector, "-o", "name"]
    return ["delete", DELETE_KINDS[kind], *namespace, *selector, *extra]


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        from primus_runner.usertext import plain

        print(plain(__doc__ or ""))
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "render":
        return cmd_render(rest)
    if command == "check":
        return cmd_check(rest)
    if command == "presets":
        from primus_runner.k8s import presets

        print("\n".join(presets.help_lines()))
        return 0
    if command == "kubectl":
        words = kubectl_argv(rest)
        sys.stdout.buffer.write(b"".join(w.encode() + b"\0" for w in words))
        return 0
    raise UsageError(f"unknown k8s command '{command}'; accepted: render, check, presets, kubectl.")
