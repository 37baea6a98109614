"""``launch prepare``: the one Python step before the shell layers of a launch.

The direct launcher calls this once per launch (the launch-overhead budget
allows two Python starts before the workload: this one and ``env check``). It

1. loads and merges the configuration files (runner/.primus.yaml,
   ~/.primus.yaml, --config FILE);
2. maps the scheduler environment to MASTER_ADDR, MASTER_PORT, NNODES,
   NODE_RANK and GPUS_PER_NODE (user exports > scheduler > config > reference
   defaults; a contradiction is exit 2);
3. detects the accelerator and, where the user did not set them, the NIC/HCA
   variables (steps 2 and 3 are ``detect.detected_env``, the code behind
   ``python3 -m primus_runner detect`` and base_env.sh's detection);

and prints NUL-delimited ``kind\\0key\\0value\\0`` records on stdout: ``cfg``,
``list`` and ``item`` for configuration values (runner/lib/config.sh), ``env``
for variables to export. The shell stores them; nothing is evaluated.

``launch serve`` does the same and then stays alive as the launcher's
coprocess: it ends its records with ``end\\0\\0\\0``; then, while the shell
sources the layers and runs the global hooks, it reads the experiment config
(the records the workload's hooks need, ended by ``hooks\\0\\0\\0``, read by the
hook runner just before them: PyYAML's import stays off the critical path),
loads the variable registry while the shell runs the hooks, answers the
shell's ``layer\\0WHICH\\0`` requests (the Neuron layer's values,
launch/neuron_layer.py; the JAX coordinator, launch/jax_layer.py, also after the
hooks; ``env -0`` output, one empty entry; records ended by ``layer-end``),
and then reads the final launch environment from stdin (``check\\0`` or
``skip\\0``, then ``env -0`` output, then one empty entry) and runs ``env check`` on it,
writing findings to ``--console-fd`` / stderr and ``rc\\0N\\0\\0`` on stdout.
One Python start serves both steps, and the registry loads in parallel with
the shell's work.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping

from primus_runner import log
from primus_runner.cluster import rendezvous
from primus_runner.config import files as cfgmod
from primus_runner.config.files import config_records
from primus_runner.errors import PrimusError
from primus_runner.facts import ACCELERATORS
from primus_runner.launch.detect import detected_env
from primus_runner.shellfmt import nul_records

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any

    from primus_runner.launch.verdict import Verdict

def prepare_records(env: Mapping[str, str], config_file: str | None, accelerator: str | None,
                    sysfs_root: str, dev_root: str, cli_env: tuple[str, ...] = (),
                    host_probes: bool = True, numa_flag: str = "") -> Iterator[tuple[str, str, str]]:
    cfg = cfgmod.load(config_file)
    for warning in cfg.warnings:
        log.warn(warning)
    # config direct.env, then --env (env/inputs.py): they enter the
    # precedence step as the highest source, never applied after it. The
    # shell exports them (`cli` records) and keeps them above layers and hooks.
    from primus_runner.env import inputs

    listed = cfg.get("direct.env")
    items = inputs.config_items(listed if isinstance(listed, list) else ())
    items += inputs.cli_items(cli_env, env)
    for name, value in items:
        yield "cli", name, value
    env = inputs.merged(env, items)
    # The values the shell uses before the verdict (stop grace, hook limit,
    # cores per process): checked now, by their registered bounds.
    from primus_runner.env.refusals import raise_early_value_problem

    raise_early_value_problem(env)
    # The direct launcher reads only these sections; container.* (a 47-name
    # allowlist) and slurm.* would only cost record parsing in bash.
    view = {k: v for k, v in cfg.values.items() if k in ("main", "direct")}
    slurm = cfg.values.get("slurm")
    if env.get("PRIMUS_VIA_SLURM_ENTRY") == "1" and isinstance(slurm, dict):
        # slurm.dry_run / slurm.debug reach a launch the entry started (mode_config.sh).
        view["slurm"] = {k: v for k, v in slurm.items() if k in ("dry_run", "debug")}
    direct_view = cfgmod.Config(view, cfg.sources, cfg.warnings)
    yield from config_records(direct_view)
    # NUMA binding (launch/numa.py): the value, then the note saying why.
    from primus_runner.launch import numa

    bind, why = numa.decide(numa_flag, cfgmod.scalar_text(cfg.get("direct.numa")), env)
    yield "env", "PRIMUS_NUMA_BIND", bind
    yield "note", "PRIMUS_NUMA_BIND", why
    # Under the Slurm entry: the stop grace from the cluster's KillWait (scheduler/stop_grace.py).
    from primus_runner.scheduler import stop_grace

    grace = stop_grace.launch_grace(env)
    if grace is not None:
        if not env.get("PRIMUS_KILL_GRACE"):
            yield "env", "PRIMUS_KILL_GRACE", grace[0]
        yield "note", "PRIMUS_KILL_GRACE", grace[1]
    # MASTER_PORT=auto: a free port, on a single node only (rendezvous.py).
    # No MASTER_PORT on a single node: a free port too (rendezvous.wants_free_port).
    picked = rendezvous.auto_port(env, sysfs_root)
    origins: dict[str, str] = {}
    found = detected_env(picked if picked is not None else env, cfg, accelerator, sysfs_root, dev_root,
                         origins, probes=host_probes, pick_port=True, wait_peers=True)
    if picked is not None and "MASTER_PORT" in picked:  # a free port (not Slurm's job port)
        rendezvous.check_auto_single_node(int(found.get("NNODES", "1") or "1"))
        found.setdefault("MASTER_PORT", picked["MASTER_PORT"])
    for name, value in found.items():
        yield "env", name, value
    if origins.get("MASTER_PORT") == "picked":
        log.info(f"MASTER_PORT={found['MASTER_PORT']}: {rendezvous.PICKED_NOTE}")
    # Where the process count came from, for the launch summary.
    from primus_runner.launch.detect import count_source

    yield "note", "GPUS_PER_NODE", count_source(origins.get("GPUS_PER_NODE"), env, found, cfg)


def experiment_records(config: str) -> Iterator[tuple[str, str, str]]:
    """`train pretrain --config FILE` (PRIMUS_EXPERIMENT_CONFIG, set by the
    launcher for this process only): when FILE names no framework whatever the
    environment (experiment_config.static_framework), the framework hook ends
    without a Python start if the variables FILE requires are set by then.
    A FILE that does not exist ended the launch with the first records
    (check_experiment_exists, in ``main`` before these)."""
    if not config:
        return
    from primus_runner.config.experiment_config import static_framework

    path = os.path.abspath(config)
    found = static_framework(path)
    if found is not None and found[0] == "":
        yield "env", "PRIMUS_EXPERIMENT_NO_FRAMEWORK", path
        yield "env", "PRIMUS_EXPERIMENT_REQUIRED", " ".join(found[1])


def check_experiment_exists(config: str) -> None:
    """A `train pretrain --config FILE` that does not exist is exit 1 with the
    first records, before the layers and any hook."""
    if not config:
        return
    from primus_runner.config.experiment_config import missing_config

    missing = missing_config(config)
    if missing:
        from primus_runner.errors import MissingError

        raise MissingError(missing)


def secret_names_record(env: Mapping[str, str]) -> tuple[str, str, str]:
    """``secret-names``: the names in ENV the rule calls secret (masking.is_secret,
    with ENV's PRIMUS_SECRET_NAMES, which the record's value repeats), for the
    launcher's masking: it then needs no listing of its variables in bash."""
    from primus_runner import masking
    from primus_runner.shellfmt import is_valid_name

    user = env.get(masking.USER_VARIABLE, "")
    names = sorted(n for n in env if is_valid_name(n) and masking.is_secret(n, user))
    return ("secret-names", " ".join(names), user)


def _parser() -> Any:
    import argparse

    from primus_runner.usertext import plain

    p = argparse.ArgumentParser(prog="python3 -m primus_runner launch", description=plain(__doc__),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True)
    prep = sub.add_parser("prepare", help="config + ranks + detection as NUL records")
    prep.add_argument("--config", help="config file (above ~/.primus.yaml and runner/.primus.yaml)")
    prep.add_argument("--accelerator", choices=ACCELERATORS)
    prep.add_argument("--numa", choices=("", "0", "1"), default="",
                      help="1: --numa, 0: --no-numa, '' (default): config direct.numa, then ENABLE_NUMA_BINDING")
    prep.add_argument("--sysfs-root", default=os.environ.get("PRIMUS_SYSFS_ROOT", "/"))
    prep.add_argument("--dev-root", default=os.environ.get("PRIMUS_DEV_ROOT", "/"))
    serve = sub.add_parser("serve", help="prepare, then env check of the final launch environment")
    for action in prep._actions[1:]:
        serve._add_action(action)
    serve.add_argument("--console-fd", help="file descriptor for env check's findings")
    for parser in (prep, serve):
        parser.add_argument("--cli-env-count", default="0",
                            help="read this many --env arguments (NUL-terminated) from stdin first")
    serve.add_argument("--verdict", default="",
                       help="env check mode (comma list: strict, json, container, no-host-probes, say-ok)")
    return p


def fast_parse(argv: list[str]) -> dict[str, str] | None:
    """``prepare``/``serve`` options without argparse (~10 ms per launch); None
    when the arguments need argparse's help or error messages."""
    if not argv or argv[0] not in ("prepare", "serve"):
        return None
    opts = {"action": argv[0], "config": "", "accelerator": "", "console_fd": "",
            "cli_env_count": "0", "verdict": "", "numa": "",
            "sysfs_root": os.environ.get("PRIMUS_SYSFS_ROOT", "/"),
            "dev_root": os.environ.get("PRIMUS_DEV_ROOT", "/")}
    rest = argv[1:]
    while rest:
        flag = rest[0]
        key = flag[2:].replace("-", "_")
        if not flag.startswith("--") or key not in opts or len(rest) < 2:
            return None
        opts[key] = rest[1]
        rest = rest[2:]
    if opts["accelerator"] and opts["accelerator"] not in ACCELERATORS:
        return None
    if opts["console_fd"] and not opts["console_fd"].isdigit():
        return None
    if opts["numa"] not in ("", "0", "1"):
        return None
    if not opts["cli_env_count"].isdigit():
        return None
    return opts


class Entries:
    """NUL-terminated entries from a binary stream (the launcher's requests on
    stdin); bytes read past one request are kept for the next."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.pending = b""
        self.ready: list[bytes] = []

    def next(self) -> str | None:
        """The next entry ('' for the empty entry that ends a request), None at EOF."""
        while not self.ready:
            chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else self.stream.read(65536)
            if not chunk:
                return None
            *done, self.pending = (self.pending + chunk).split(b"\0")
            self.ready = done
        return self.ready.pop(0).decode("utf-8", "surrogateescape")

    def until_empty(self) -> Iterator[str]:
        """Entries up to the empty one (or EOF)."""
        while True:
            entry = self.next()
            if not entry:
                return
            yield entry

    def environ(self) -> dict[str, str]:
        """``env -0`` output up to the empty entry, as a mapping."""
        out = {}
        for entry in self.until_empty():
            name, sep, value = entry.partition("=")
            if sep:
                out[name] = value
        return out


def serve_layers(entries: Entries) -> str:
    """Answer ``layer\0WHICH\0`` + ``env -0`` + ``\0`` requests (the shell
    layers ask for their values: launch/layers.py sends WHICH to
    launch/neuron_layer.py or launch/jax_layer.py) with records ended by
    ``layer-end``, as many as come (the JAX layer's while the layers are
    sourced, ``jax-workload`` after the hooks); returns the first other header
    ('skip' at EOF)."""
    out = sys.stdout.buffer
    while True:
        header = entries.next() or "skip"
        if header != "layer":
            return header
        which = entries.next() or ""
        environ = entries.environ()
        from primus_runner.launch import layers  # jax_layer or neuron_layer by WHICH

        out.write(nul_records([*layers.records(which, environ), ("layer-end", "", "")]))
        out.flush()


def serve_check(console_fd: int | None, verdict: Verdict, entries: Entries) -> int:
    """Answer the layers' requests, then wait for the final launch environment
    on stdin and check it."""
    if os.environ.get("PRIMUS_DRY_RUN") != "1":  # a dry run checks no rendezvous host
        import socket  # noqa: F401 - rendezvous.check needs it; loaded while the shell works
    import difflib  # noqa: F401 - the unknown-name rule's; loaded while the shell works
    from types import SimpleNamespace

    from primus_runner.env import commands as env_cmd
    from primus_runner.env import registry

    registry.load()
    # The rule modules register on first use (env/rules/__init__.py): here, while
    # the shell runs the hooks, not while it waits for the verdict (~8 ms).
    from primus_runner.env import rules

    rules.check  # noqa: B018 - the attribute access imports them
    if serve_layers(entries) != "check":
        return 0
    accelerator = entries.next() or ""
    environ = entries.environ()
    args = SimpleNamespace(env_file=[], container=verdict.container, strict=verdict.strict,
                           format=verdict.format, accelerator=accelerator or None)
    saved = sys.stdout
    console = os.fdopen(console_fd, "w", closefd=False) if console_fd is not None else sys.stderr
    sys.stdout = console
    try:
        code = env_cmd.cmd_check(args, environ, host_probes=verdict.host_probes)
        verdict.closing(args, code)
        if code == 0 and environ.get("PRIMUS_DRY_RUN") != "1":
            # Before torchrun starts: the rendezvous host's address and port.
            for message in rendezvous.check(environ):
                log.emit("ERROR", message)
                code = 2
        several = environ.get("NNODES", "1") not in ("", "1") or environ.get("PRIMUS_SRUN_NATIVE") == "1"
        if code == 0 and several:
            from primus_runner.cluster import clustercheck  # multi-node launches only
        if code == 0 and several and clustercheck.wanted(environ):
            # One exchange through node 0 before anything starts (see clustercheck).
            code = clustercheck.run(environ, console)
        return code
    finally:
        console.flush()
        sys.stdout = saved


def main(argv: list[str]) -> int:
    if "--accelerator" in argv[:-1]:
        wanted = argv[argv.index("--accelerator") + 1]
        if wanted not in ACCELERATORS:
            from primus_runner.errors import UsageError

            raise UsageError(f"--accelerator '{wanted}' is not supported; accepted: "
                             f"{', '.join(ACCELERATORS)}. Fix: --accelerator auto (detect), or one of those.")
    opts = fast_parse(argv)
    if opts is None:
        args = _parser().parse_args(argv)
        opts = {"action": args.action, "config": args.config or "",
                "accelerator": args.accelerator or "", "sysfs_root": args.sysfs_root,
                "dev_root": args.dev_root, "console_fd": getattr(args, "console_fd", None) or "",
                "cli_env_count": args.cli_env_count, "verdict": getattr(args, "verdict", ""),
                "numa": args.numa}
    accelerator = None if opts["accelerator"] in ("", "auto") else opts["accelerator"]
    from primus_runner.launch.verdict import Verdict

    verdict = Verdict.parse(opts["verdict"])
    count = int(opts["cli_env_count"]) if opts["cli_env_count"].isdigit() else 0
    cli_env: tuple[str, ...] = ()
    entries = Entries(sys.stdin.buffer)
    if count:  # the shell wrote them, then one empty entry (an empty --env reads as '')
        got = list(entries.until_empty())
        cli_env = tuple(got + [""] * (count - len(got)))
    console_fd = int(opts["console_fd"]) if opts["console_fd"] else None
    experiment = os.environ.get("PRIMUS_EXPERIMENT_CONFIG", "")
    try:
        records = list(prepare_records(os.environ, opts["config"] or None, accelerator,
                                       opts["sysfs_root"], opts["dev_root"], cli_env,
                                       verdict.host_probes, opts["numa"]))
        check_experiment_exists(experiment)
    except PrimusError as exc:
        # A refusal of the precedence step that is a registered rule is
        # reported as a finding, the way env check reports every rule.
        if not verdict.refusal(exc, console_fd):
            raise
        return exc.exit_code
    out = sys.stdout.buffer
    if opts["action"] == "prepare":
        out.write(nul_records(records + list(experiment_records(experiment))))
        return 0
    records.append(secret_names_record(os.environ))
    records.append(("end", "", ""))
    out.write(nul_records(records))
    out.flush()
    # The shell reads these just before the hooks (direct's primus_helper_hook_inputs, runner/lib/launch_helper.sh).
    out.write(nul_records([*experiment_records(experiment), ("hooks", "", "")]))
    out.flush()
    code = serve_check(console_fd, verdict, entries)
    out.write(nul_records([("rc", str(code), "")]))
    out.flush()
    sys.stderr.flush()
    # The launcher waits for this process to end before going on: skip the
    # interpreter's teardown (~10 ms); everything was written and flushed.
    os._exit(0)
