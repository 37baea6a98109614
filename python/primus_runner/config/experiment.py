"""Framework preparation for ``train pretrain`` / ``train posttrain`` (as upstream
AMD-AGI/Primus@fd1eeabb runner/helpers/hooks/train/).

Run by the hooks ``runner/helpers/hooks/train/pretrain/prepare_experiment.sh`` and
``runner/helpers/hooks/train/posttrain/dispatch_framework.sh`` as one Python
process (``python3 -m primus_runner.config.experiment pretrain|posttrain ARGS...``); its
stdout is the hook protocol (``env.NAME=VALUE`` / ``extra.name=value``), logs go
to stderr.

Experiment config (Primus YAML, ``${VAR}`` rendered): the trainer section is
``modules.<section>`` or a top-level ``<section>`` (``pre_trainer`` /
``post_trainer``); a key is looked up in the section's ``overrides`` first, then in
the section itself.

pretrain: framework = ``--backend``, else ``pre_trainer.framework`` (both and
different: exit 78); none -> nothing runs. Then every
``hooks/train/pretrain/<framework>/*.sh`` (sorted) runs with ``--config <abs>
--data_path D --primus_path R --patch_args F`` [``--backend_path P``]
[``--backend B``] and the remaining arguments, its stdout going straight to the
protocol; a non-zero exit stops with that code. Then ``prepare.py`` of that folder
(if any) runs in this process with the same arguments. Fail fast: the ``check``
of ``prepare.py`` (what a dry run can know: config keys, backend paths, files;
no side effect) runs first, before any step installs, builds or downloads.

posttrain: framework = ``post_trainer.framework``; every
``hooks/train/posttrain/<framework>/*.sh|*.py`` (sorted) runs with the unchanged
arguments and its protocol lines are forwarded once.

Exit codes follow the hooks' (runner/helpers/hooks/_lib.sh): 78 configuration
error (launch exit 2), 66 missing file or dependency (launch exit 1), other
failures 1 (launch exit 3).
"""
from __future__ import annotations

import os
import runpy
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from primus_runner.config.experiment_config import section

# The hook protocol's codes (registry shared_facts; the hook runner maps them to 1 and 2).
from primus_runner.facts import HOOK_EXIT_CONFIG, HOOK_EXIT_MISSING

HOOKS = Path(__file__).resolve().parents[3] / "runner" / "helpers" / "hooks"
STEP_OPTIONS = ("--config", "--data_path", "--patch_args", "--backend_path", "--backend", "--primus_path")
TRUE_WORDS = ("1", "true", "yes", "on")


class HookExit(Exception):
    """Stop with ``code`` after logging ``message`` (when not empty) on stderr."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def say(message: str) -> None:
    """An info line for the user (stderr: stdout is the protocol)."""
    print(f"[prepare] {message}", file=sys.stderr, flush=True)


def warn(message: str) -> None:
    print(f"[prepare] WARN: {message}", file=sys.stderr, flush=True)


def emit_env(name: str, value: str) -> None:
    print(f"env.{name}={value}", flush=True)


def emit_extra(name: str, value: str) -> None:
    print(f"extra.{name}={value}", flush=True)


def dry_run(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("PRIMUS_DRY_RUN") == "1"


def truthy(value: Any) -> bool:
    return str(value).strip().lower() in TRUE_WORDS if value is not None else False


def split_options(argv: Sequence[str], names: Sequence[str] = STEP_OPTIONS) -> tuple[dict[str, str], list[str]]:
    """``--name value`` / ``--name=value`` for ``names``; everything else kept in order."""
    found: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        if key in names and eq:
            found[key[2:]] = value
        elif arg in names:
            if i + 1 >= len(argv):
                raise HookExit(HOOK_EXIT_CONFIG, f"{arg} needs a value")
            found[arg[2:]] = argv[i + 1]
            i += 1
        else:
            rest.append(arg)
        i += 1
    return found, rest


# --------------------------------------------------------------------------- config

def load_config(path: str, env: Mapping[str, str] = os.environ) -> dict[str, Any]:
    from primus_runner.config.experiment_config import missing_config

    missing = missing_config(path)
    if missing:
        raise HookExit(HOOK_EXIT_MISSING, missing)
    from primus_runner.config.files import load_rendered_yaml

    loaded = load_rendered_yaml(path, env)
    if not isinstance(loaded, dict):
        raise HookExit(HOOK_EXIT_CONFIG, f"experiment config '{path}' is not a YAML mapping.")
    return loaded


def lookup(sec: Mapping[str, Any], dotted: str) -> Any:
    """A dotted key in the section's ``overrides``, else in the section."""
    for base in (sec.get("overrides"), sec):
        node: Any = base
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                node = None
                break
            node = node[part]
        if node is not None:
            return node
    return None


# --------------------------------------------------------------------------- step context

class Context:
    """What a framework step (prepare.py) receives: the parsed step arguments."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] = os.environ) -> None:
        opts, self.rest = split_options(argv)
        self.env = env
        self.config = opts.get("config", "")
        self.data_path = opts.get("data_path", "")
        self.primus_path = opts.get("primus_path", "")
        self.patch_args = opts.get("patch_args", "")
        self.backend_path_arg = opts.get("backend_path", "")
        self.backend = opts.get("backend", "")
        self.cfg = load_config(self.config, env) if self.config else {}

    def section(self, name: str = "pre_trainer") -> dict[str, Any]:
        return section(self.cfg, name)

    def node_rank(self) -> int:
        try:
            return int(self.env.get("NODE_RANK", "0") or "0")
        except ValueError:
            raise HookExit(HOOK_EXIT_CONFIG, f"NODE_RANK={self.env.get('NODE_RANK')!r} is not an integer.") from None

    def backend_path(self, env_names: Sequence[str], dirname: str) -> str:
        """--backend_path > the named variables (any case) > <repo>/third_party/<dir>
        if present > $PRIMUS_THIRDPARTY_DIR (default ~/.cache/Primus/third_party)/<dir>."""
        if self.backend_path_arg:
            return os.path.abspath(self.backend_path_arg)
        lowered = {k.lower(): v for k, v in self.env.items()}
        for name in env_names:
            value = self.env.get(name) or lowered.get(name.lower())
            if value:
                return os.path.abspath(value)
        local = os.path.join(self.primus_path, "third_party", dirname)
        if os.path.isdir(local):
            return local
        base = self.env.get("PRIMUS_THIRDPARTY_DIR") or os.path.expanduser("~/.cache/Primus/third_party")
        return os.path.join(base, dirname)

    def pip(self, *args: str) -> None:
        """``python -m pip ARGS`` with PIP_CACHE_DIR (default <data_path>/pip_cache);
        only shown under dry run; a failure stops with exit 66."""
        cmd = [self.env.get("PRIMUS_PYTHON") or sys.executable, "-m", "pip", *args]
        run_env = dict(self.env)
        run_env.setdefault("PIP_CACHE_DIR", os.path.join(self.data_path, "pip_cache"))
        shown = shlex.join(cmd)
        if dry_run(self.env):
            say(f"dry run: would run: {shown} (PIP_CACHE_DIR={run_env['PIP_CACHE_DIR']})")
            return
        say(f"running: {shown}")
        rc = subprocess.run(cmd, check=False, env=run_env, stdout=sys.stderr, stdin=subprocess.DEVNULL).returncode
        if rc != 0:
            raise HookExit(HOOK_EXIT_MISSING, f"'{shown}' failed with exit code {rc}; fix the install (or set "
                           "PRIMUS_SKIP_PIP=1 when the image already has the packages).")

    def skip_pip(self) -> bool:
        return self.env.get("PRIMUS_SKIP_PIP", "0") not in ("", "0", "false", "False")


def require_dataset_type(ctx: Context, framework: str) -> str:
    value = lookup(ctx.section(), "dataset_type")
    if not value:
        raise HookExit(HOOK_EXIT_CONFIG, f"{framework}: the experiment config {ctx.config} sets no "
                       "pre_trainer dataset_type; set it (for example dataset_type: synthetic).")
    return str(value)


# --------------------------------------------------------------------------- dispatch

def _run_steps(folder: Path, step_argv: list[str], env: Mapping[str, str], python_too: bool) -> int:
    patterns = ("*.sh", "*.py") if python_too else ("*.sh",)
    steps = sorted((p for pat in patterns for p in folder.glob(pat) if p.name != "prepare.py"),
                   key=lambda p: p.name)
    for step in steps:
        cmd = ["bash", str(step)] if step.suffix == ".sh" else [env.get("PRIMUS_PYTHON") or sys.executable,
                                                                 str(step)]
        sys.stdout.flush()
        rc = subprocess.run(check=False, args=[*cmd, *step_argv], stdin=subprocess.DEVNULL, env=dict(env)).returncode
        if rc != 0:
            warn(f"{step} failed with exit code {rc}")
            return rc
    return 0


def _load_step(script: Path) -> dict[str, Any]:
    """The functions of a framework's ``prepare.py`` (``check``, ``main``): its
    module body runs, its ``if __name__ == "__main__"`` part does not."""
    return runpy.run_path(str(script), run_name="primus_prepare_step")


def pretrain(argv: list[str], env: Mapping[str, str] = os.environ, hooks: Path = HOOKS) -> int:
    opts, rest = split_options(argv, ("--config", "--data_path", "--patch_args", "--backend_path", "--backend"))
    if not opts.get("config"):
        warn("train pretrain without --config: no framework preparation.")
        return 0
    config = os.path.abspath(opts["config"])
    sec = section(load_config(config, env), "pre_trainer")
    configured = str(sec.get("framework") or "")
    backend = opts.get("backend", "")
    if backend and configured and backend != configured:
        raise HookExit(HOOK_EXIT_CONFIG, f"--backend {backend} contradicts pre_trainer.framework: {configured} in "
                       f"{config}; drop --backend or make them the same.")
    framework = backend or configured
    if not framework:
        say(f"{config} names no pre_trainer framework: no framework preparation.")
        return 0
    folder = hooks / "train" / "pretrain" / framework
    if not folder.is_dir():
        say(f"no preparation steps for framework '{framework}' ({folder} does not exist).")
        return 0
    repo = env.get("PRIMUS_PATH") or env.get("PRIMUS_ROOT") or str(HOOKS.parents[2])
    data_path = opts.get("data_path") or env.get("DATA_PATH") or os.path.join(repo, "data")
    patch_args = opts.get("patch_args") or os.path.join(env.get("TMPDIR") or "/tmp", "primus_patch_args.txt")
    if not dry_run(env) and not os.path.exists(patch_args):
        Path(patch_args).touch()
    step_argv = ["--config", config, "--data_path", os.path.abspath(data_path), "--primus_path", repo,
                 "--patch_args", patch_args]
    if opts.get("backend_path"):
        step_argv += ["--backend_path", opts["backend_path"]]
    if backend:
        step_argv += ["--backend", backend]
    step_argv += rest
    prepare = folder / "prepare.py"
    step = _load_step(prepare) if prepare.is_file() else {}
    ctx = Context(step_argv, env) if step else None
    if ctx is not None and callable(step.get("check")):
        step["check"](ctx)  # before any step installs, builds or downloads
    say(f"framework {framework}: preparing with {folder}")
    rc = _run_steps(folder, step_argv, env, python_too=False)
    if rc != 0:
        return rc
    if ctx is not None and callable(step.get("main")):
        step["main"](ctx)
    return 0


def posttrain(argv: list[str], env: Mapping[str, str] = os.environ, hooks: Path = HOOKS) -> int:
    opts, _ = split_options(argv, ("--config",))
    if not opts.get("config"):
        return 0
    framework = str(section(load_config(os.path.abspath(opts["config"]), env), "post_trainer").get("framework") or "")
    folder = hooks / "train" / "posttrain" / framework
    if not framework or not folder.is_dir():
        say(f"no post-training preparation ({'framework ' + framework if framework else 'no post_trainer framework'}).")
        return 0
    return _run_steps(folder, list(argv), env, python_too=True)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("pretrain", "posttrain"):
        print("usage: python3 -m primus_runner.config.experiment pretrain|posttrain [--hooks-dir DIR] [--config FILE] "
              "[ARGS...]",
              file=sys.stderr)
        return HOOK_EXIT_CONFIG
    hooks = HOOKS
    rest = args[1:]
    if rest[:1] == ["--hooks-dir"] and len(rest) >= 2:
        hooks, rest = Path(rest[1]), rest[2:]
    try:
        return (pretrain if args[0] == "pretrain" else posttrain)(rest, os.environ, hooks)
    except HookExit as exc:
        if exc.message:
            print(f"[prepare] ERROR: {exc.message}", file=sys.stderr, flush=True)
        return exc.code
    except Exception as exc:  # a YAML or I/O problem: name it, exit as a config error
        from primus_runner.errors import UsageError

        if isinstance(exc, UsageError):
            print(f"[prepare] ERROR: {exc}", file=sys.stderr, flush=True)
            return HOOK_EXIT_CONFIG
        raise


def step_main(body: Any, check: Any = None) -> None:
    """A framework's prepare.py run by hand: ``step_main(main, check)`` (its
    check, then its body; the dispatch above runs the check before the steps)."""
    try:
        ctx = Context(sys.argv[1:])
        if check is not None:
            check(ctx)
        body(ctx)
    except HookExit as exc:
        if exc.message:
            print(f"[prepare] ERROR: {exc.message}", file=sys.stderr, flush=True)
        sys.exit(exc.code)
    sys.exit(0)


if __name__ == "__main__":
    # The package's copy, the one prepare.py imports: one HookExit class for both.
    from primus_runner.config import experiment as _package_copy

    sys.exit(_package_copy.main())
