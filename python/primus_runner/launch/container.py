"""``container plan``: everything ``primus-cli container`` decides, in one Python start.

The shell entry (runner/primus-cli-container.sh) hands over its arguments; this
module loads the config, parses the container options (ours, and every other
runtime option, which passes through), maps the scheduler ranks on the host
(the same ranks.py as direct), picks the runtime, checks the devices, decides
which host variables are forwarded, runs the registry's checks in container
context, and prints NUL-delimited ``kind\\0key\\0value\\0`` records on stdout:

- ``log LEVEL MESSAGE``   a line for the shell to log (it masks secrets)
- ``env NAME VALUE``      a value the runtime client gets in its environment;
                          the runtime's argv names it only (``--env NAME``)
- ``fwd "" NAME``         a name forwarded from the host (for the summary)
- ``arg "" WORD``         the runtime command, word by word
- ``set KEY VALUE``       runtime, image, name, label, clean, run, dry_run, grace

Values never reach an argv: ``--env NAME=VALUE`` items (the container's, the
inner direct's, ``container.options.env``) become runtime environment and the
inner direct gets ``--env NAME``. The option and config mapping is in
container_opts.py; words and values that are not UTF-8 travel as in container_bytes.py.
"""
from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Mapping

from primus_runner.config import files as cfgmod
from primus_runner.env.refusals import raise_early_value_problem
from primus_runner.errors import UsageError
from primus_runner.facts import CHECKED_BEFORE_VERDICT
from primus_runner.launch import container_bytes
from primus_runner.launch import container_opts as copts
from primus_runner.launch.container_runtime import runtime_for
from primus_runner.shellfmt import nul_records

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from primus_runner.launch.verdict import Verdict

DEFAULT_NAME = "primus-training"  # reference .primus.yaml name (upstream AMD-AGI/Primus@fd1eeabb runner/.primus.yaml)
LABEL = "io.primus-runner.managed"
LABEL_NAME = "io.primus-runner.name"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Devices the accelerator needs, passed when present (docs/run-on-one-node.md "Entry points"; the reference
# .primus.yaml device list: /dev/kfd, /dev/dri, /dev/infiniband).
ACCEL_DEVICES = {"rocm": ("/dev/kfd", "/dev/dri")}
RDMA_DEVICE = "/dev/infiniband"


class Plan:
    """What the launch will do (filled step by step, then printed as records)."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, str]] = []
        self.env: dict[str, str] = {}        # runtime client environment additions
        self.forwarded: list[str] = []       # host names forwarded as they are
        self.explicit: list[str] = []        # names passed by --env (any source)

    def log(self, level: str, message: str) -> None:
        self.records.append(("log", level, message))

    def set(self, key: str, value: str) -> None:
        self.records.append(("set", key, value))

    def pass_env(self, name: str, value: str) -> None:
        self.env[name] = value
        if name not in self.explicit:
            self.explicit.append(name)


# --------------------------------------------------------------------------- devices
def device_list(accel: str, detected: list[str], configured: list[tuple[str, str]],
                dev_root: str, plan: Plan) -> list[str]:
    """Devices to pass: the accelerator's and /dev/infiniband when present; every
    configured one, which must exist (else exit 2 naming it)."""
    def exists(path: str) -> bool:
        return os.path.exists(os.path.join(dev_root, path.lstrip("/")))

    out: list[str] = []
    for path in (*ACCEL_DEVICES.get(accel, ()), *detected, RDMA_DEVICE):
        if exists(path):
            out.append(path)
        else:
            plan.log("DEBUG", f"device {path} not present on this host: not passed")
    for origin, spec in configured:
        host = spec.split(":", 1)[0]
        if not exists(host):
            where = f" (looked at {os.path.join(dev_root, host.lstrip('/'))})" if dev_root != "/" else ""
            raise UsageError(f"device '{host}' given by {origin} does not exist on this host"
                             f"{where}; accepted: an existing device path. Fix: remove it from "
                             f"{origin}, or load the driver that creates it.")
        if spec not in out:
            out.append(spec)
    return out


# --------------------------------------------------------------------------- env items
def env_item(item: str, what: str, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """``--env`` ITEM: KEY=VALUE, a file of such lines, or a NAME set on the host."""
    name, sep, value = item.partition("=")
    if sep:
        if not _VAR_RE.match(name):
            raise UsageError(f"{what} '{name}' is not a valid variable name; accepted: letters, "
                             "digits and '_', not starting with a digit.")
        return [(name, value)]
    if os.path.isfile(item):
        from primus_runner.env import envfile

        return envfile.read(item, f"{what} file", env)
    if _VAR_RE.match(item) and item in env:
        return [(item, env[item])]
    raise UsageError(f"{what} '{item}' is neither KEY=VALUE, an existing file, nor a variable set "
                     f"on the host; write {what} KEY=VALUE, {what} path/to/file.env or export "
                     f"{item} first.")


# --------------------------------------------------------------------------- plan
def _container_name(base: str, env: Mapping[str, str], node_rank: str) -> str:
    job = env.get("SLURM_JOB_ID", "")
    if job and env.get("SLURM_STEP_ID"):
        job = f"{job}.{env['SLURM_STEP_ID']}"
    if not job:
        job = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getppid()}"
    return f"{base}-{job}-{node_rank}"


def _scheduler_ranks(env: Mapping[str, str], cfg: cfgmod.Config, plan: Plan) -> dict[str, str]:
    from primus_runner.cluster import ranks
    from primus_runner.scheduler.variables import detect_source

    # One owner for "which scheduler is this" (scheduler/variables.py detect_source,
    # docs/configuration.md "Detection and rank mapping").
    if detect_source(env) is None:
        return {}
    from primus_runner.launch import detect
    from primus_runner.launch.container_env import ranks_view

    mapping = ranks.resolve(ranks_view(env), detect.config_defaults(cfg))
    values = {k: v for k, v in mapping.as_env().items()
              if k in ("MASTER_ADDR", "MASTER_PORT", "NNODES", "NODE_RANK", "GPUS_PER_NODE")}
    plan.log("INFO", f"scheduler ranks mapped on the host ({mapping.source}): "
                     + " ".join(f"{k}={v}" for k, v in values.items()))
    for note in mapping.notes:
        plan.log("WARN", note)
    return values


def build(argv: list[str], env: Mapping[str, str], cwd: str,
          verdict: Verdict | None = None) -> tuple[Plan, int]:
    """The plan for ``primus-cli container ARGV``; (plan, env check exit code).
    ``verdict`` (``env check --container``): the same plan and check, with no
    image and no runtime needed (nothing starts)."""
    plan = Plan()
    opts = copts.parse_args(argv)
    cfg = cfgmod.load(opts.config or None)
    for warning in cfg.warnings:
        plan.log("WARN", warning)
    root = env.get("PRIMUS_ROOT") or cfgmod.DEFAULT_ROOT
    dev_root = env.get("PRIMUS_DEV_ROOT") or "/"
    sysfs_root = env.get("PRIMUS_SYSFS_ROOT") or "/"

    raise_early_value_problem(env)
    # Under the Slurm entry the cluster's KillWait decides (scheduler/stop_grace.py).
    from primus_runner.scheduler.stop_grace import launch_grace

    slurm_grace = launch_grace(env)
    grace = (env.get("PRIMUS_KILL_GRACE") or (slurm_grace[0] if slurm_grace else "")
             or CHECKED_BEFORE_VERDICT["PRIMUS_KILL_GRACE"][0] or "")

    def conf(key: str) -> str:
        return cfgmod.scalar_text(cfg.get(key))

    image = (opts.image or env.get("DOCKER_IMAGE") or conf("container.image")
             or conf("container.options.image"))
    if not image and verdict is not None:
        image = "(image)"
    if not image:
        raise UsageError("no container image: pass --image IMAGE, export DOCKER_IMAGE, or set "
                         "container.image (or container.options.image) in the config.")
    wanted, origin = (opts.runtime, "--runtime") if opts.runtime else (conf("container.runtime"),
                                                                       "config container.runtime")
    runtime, runtime_path = runtime_for(wanted, origin, env, plan.log, verdict is not None)
    base = opts.name or conf("container.name") or conf("container.options.name") or DEFAULT_NAME
    if not _NAME_RE.match(base):
        raise UsageError(f"container name '{base}' is not accepted; accepted: letters, digits, "
                         "'_', '.', '-', starting with a letter or digit.")

    ranks_env = _scheduler_ranks(env, cfg, plan)
    for name, value in ranks_env.items():
        plan.pass_env(name, value)
    node_rank = ranks_env.get("NODE_RANK") or env.get("NODE_RANK") or "0"
    name = _container_name(base, env, node_rank)

    # Accelerator and its devices (the same detection as direct).
    from primus_runner.hardware import devices as devmod

    view = dict(env)
    accel_wanted = (opts.inner_accelerator or env.get("PRIMUS_ACCELERATOR")
                    or conf("direct.accelerator"))
    if accel_wanted and accel_wanted != "auto":
        view["PRIMUS_ACCELERATOR"] = accel_wanted
    found = devmod.detect_devices(sysfs_root, dev_root, view)
    accel = found.accelerator
    detected = [f"/dev/{d.name}" for d in found.devices if d.kind == "neuron"]
    options = copts.merge_options(cfg, opts.passthrough, plan)
    configured = [(origin, spec) for origin, spec in options.pop_devices()]
    devs = device_list(accel, detected, configured, dev_root, plan)
    plan.log("INFO", f"accelerator {accel}: devices {', '.join(devs) or 'none'}")

    # Variables: allowlist + prefixes by name; --env items as values by name.
    from primus_runner.env import registry

    reg = registry.load()
    inner_env: list[str] = []    # names the inner direct gets as --env NAME (top precedence)
    for entry in copts.as_list(cfg.get("container.options.env")):
        key, sep, value = entry.partition("=")
        if sep:
            plan.pass_env(key, value)          # reference: KEY=VALUE entries verbatim
            inner_env.append(key)
        elif key and key not in reg.container_own and env.get(key):
            plan.forwarded.append(key)
    for key in sorted(env):
        if env[key] and key not in plan.forwarded and reg.container_forwards(key):
            plan.forwarded.append(key)
    for item in opts.env_items:
        for key, value in env_item(item, "--env", env):
            plan.pass_env(key, value)
            inner_env.append(key)
    inner, inner_mounts = copts.rewrite_inner(opts.inner, cwd, env, plan, env_item)
    plan.forwarded = [n for n in plan.forwarded if n not in plan.env]
    from primus_runner.launch import container_env

    for level, line in container_env.notes(env, plan.forwarded, set(plan.env), reg):
        plan.log(level, line)

    mounts = [f"{root}:{root}"]
    if cwd != root and not cwd.startswith(root + os.sep):
        mounts.append(f"{cwd}:{cwd}")
    config_args: list[str] = []
    if opts.config:
        path = os.path.abspath(os.path.join(cwd, opts.config))
        mounts.append(f"{path}:{path}:ro")
        config_args = ["--config", path]
    user_cfg = cfgmod.user_config_path()
    if env.get("PRIMUS_NO_USER_CONFIG") != "1" and os.path.isfile(user_cfg):
        user_cfg = os.path.abspath(user_cfg)
        mounts.append(f"{user_cfg}:{user_cfg}:ro")
        plan.pass_env("PRIMUS_USER_CONFIG", user_cfg)
        plan.log("INFO", f"user config {user_cfg} mounted read-only for the inner direct")
    mounts.extend(inner_mounts)
    # main./container.dry_run, and slurm.dry_run under the slurm entry (the
    # keys upstream Primus reads; runner/lib/mode_config.sh for bash).
    sections = ["main", "container"] + (["slurm"] if env.get("PRIMUS_VIA_SLURM_ENTRY") == "1" else [])
    dry = opts.dry_run or verdict is not None
    for section in sections:
        if not dry and cfg.get(f"{section}.dry_run") is True:
            dry = True
            plan.log("INFO", f"dry run: config {section}.dry_run is true (nothing will start)")
        if not opts.debug and cfg.get(f"{section}.debug") is True:
            opts.debug = True
            plan.log("INFO", f"debug logging: config {section}.debug is true (inner direct --debug)")
    # An absolute workspace outside those mounts (logs, checkpoints) is mounted
    # too, or the job's output would stay in the container (created unless dry-run).
    workspace = env.get("PRIMUS_WORKSPACE", "")
    if workspace.startswith("/") and not any(
            workspace == m.split(":")[0] or workspace.startswith(m.split(":")[0] + os.sep)
            for m in mounts):
        if not dry:
            os.makedirs(workspace, exist_ok=True)
        mounts.append(f"{workspace}:{workspace}")
    if "PRIMUS_PYTHON" not in plan.env:
        plan.pass_env("PRIMUS_PYTHON", "python3")   # the image's interpreter, not the host's

    direct = [*config_args, *[w for key in dict.fromkeys(inner_env) for w in ("--env", key)], *inner]
    carried, what = container_bytes.carrier(direct, {**{n: env[n] for n in plan.forwarded}, **plan.env})
    if carried:                  # bytes the runtime's JSON would replace (container_bytes.py)
        plan.env[container_bytes.CARRIER] = carried
        plan.log("INFO", container_bytes.note(what))
    words = [runtime_path, "run"]
    words += options.render(always=[("--rm", None), ("--name", name),
                                    ("--label", f"{LABEL}=1"), ("--label", f"{LABEL_NAME}={base}")])
    for dev in devs:
        words += ["--device", dev]
    for mount in dict.fromkeys(mounts):          # the user's identical --volume stays once
        if not options.has_value("--volume", mount):
            words += ["--volume", mount]
    if not options.has("--workdir"):
        words += ["--workdir", cwd]
    for key in plan.forwarded + list(plan.env):
        words += ["--env", key]
    words += [image, os.path.join(root, "runner", "primus-cli"), *(["--debug"] if opts.debug else []),
              "direct", *direct]

    code = 0
    if env.get("PRIMUS_SKIP_VALIDATION") == "1" and verdict is None:
        plan.log("WARN", "PRIMUS_SKIP_VALIDATION=1: environment checks skipped.")
    else:
        view = {**env, **plan.env}
        # MASTER_PORT=auto goes in as auto: the inner direct picks the port (container_env).
        view = container_env.master_port_view(view, view.get("NNODES", "1")) or view
        code = _check(view, accel, tuple(plan.explicit), verdict)

    for key, value in (("runtime", runtime), ("runtime_path", runtime_path), ("image", image),
                       ("name", name), ("label", f"{LABEL}=1"), ("label_name", f"{LABEL_NAME}={base}"),
                       ("clean", "1" if opts.clean else "0"), ("run", "0" if opts.clean_only else "1"),
                       ("dry_run", "1" if dry else "0"), ("grace", grace)):
        plan.set(key, value)
    plan.records += [("fwd", "", n) for n in plan.forwarded]
    plan.records += [("env", k, v) for k, v in plan.env.items()]
    plan.records += [("arg", "", w) for w in words]
    return plan, code


def _check(env: dict[str, str], accel: str, explicit: tuple[str, ...], verdict: Verdict | None) -> int:
    """The registry's checks in container context (findings to the console), the
    same for a launch and ``env check --container`` (``verdict``: --strict,
    --format). The host probes (does MASTER_ADDR resolve, ...) are left to the
    direct launch inside the container, which runs the full verdict where the ranks run."""
    from types import SimpleNamespace

    from primus_runner.env import commands as env_cmd

    args = SimpleNamespace(env_file=[], container=True, strict=bool(verdict and verdict.strict),
                           format=verdict.format if verdict else "text", accelerator=accel)
    code = env_cmd.cmd_check(args, env, forwarded=explicit, host_probes=False)
    if verdict is not None:
        verdict.closing(args, code)
    return code


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "plan":
        print("usage: python3 -m primus_runner container plan [--console-fd N] [--verdict WORDS] "
              "ARGS...\ninternal: the plan of `primus-cli container ARGS` as NUL records "
              "(--verdict: env check --container's words, launch/verdict.py)",
              file=sys.stderr if argv[:1] not in (["-h"], ["--help"]) else sys.stdout)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    rest = argv[1:]
    console: Any = sys.stderr
    if rest[:1] == ["--console-fd"] and len(rest) >= 2 and rest[1].isdigit():
        console = os.fdopen(int(rest[1]), "w", closefd=False)
        rest = rest[2:]
    verdict = None
    if rest[:1] == ["--verdict"] and len(rest) >= 2:
        from primus_runner.launch.verdict import Verdict

        verdict, rest = Verdict.parse(rest[1]), rest[2:]
    saved = sys.stdout
    sys.stdout = console          # the check's findings go to the console, records to stdout
    try:
        plan, code = build(rest, os.environ, os.getcwd(), verdict)
    finally:
        console.flush()
        sys.stdout = saved
    out = sys.stdout.buffer
    if code:
        out.write(nul_records([r for r in plan.records if r[0] == "log"]))
        out.flush()
        return code
    out.write(nul_records(plan.records))
    out.flush()
    return 0
