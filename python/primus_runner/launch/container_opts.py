"""Options of ``primus-cli container``: ours, the runtime's (passed through), the
config's ``container.options`` mapping, and the inner direct arguments.

Ours: ``--image --runtime --name --clean --env/-e --config --dry-run --debug``.
A first word that is not an option starts the inner direct arguments as ``--``
does (upstream Primus's container mode reads them so). Every other option
before ``--`` is a ``docker run``/``podman run`` option and passes through:
``--key=value`` as written; ``--key value`` when the next word does not start
with ``-``; else a bare flag.

``container.options.<key>`` (the reference launcher's .primus.yaml layout) maps
to ``--key value``: a list repeats the flag, ``true`` (or ``"true"``, as
upstream Primus's file writes it) gives the bare flag, ``false``/null/""/[]
removes it (so every default can be removed); ``_`` and ``-`` in keys are the
same. A ``--volume /abs/path`` without ``:`` mounts at the same path (as
upstream Primus; docker would make an anonymous volume). A flag on the command
line replaces a single value and adds to a list (``--ulimit host`` replaces
every ulimit). A value the launcher or the config already gives (``--cap-add
SYS_PTRACE``, ``CAP_SYS_PTRACE`` too, ``--group-add video``, a mount of the
repository) is not given twice. ``--shm-size`` is dropped while ``--ipc`` is ``host``: podman
refuses the two together ("cannot set shmsize when running in the host IPC
Namespace") and the host's /dev/shm is used anyway.
"""
from __future__ import annotations

import os

from primus_runner.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

OURS_VALUE = {"--image", "--runtime", "--name", "--env", "-e", "--config"}
OURS_FLAG = {"--clean", "--dry-run", "--debug"}
# Short runtime options spelled long, so config and command line meet.
SHORT = {"-v": "--volume", "-w": "--workdir", "-u": "--user", "-l": "--label", "-p": "--publish",
         "-m": "--memory", "-h": "--hostname"}
# Options that may be given several times (docker/podman run reference).
REPEATABLE = {"--device", "--volume", "--mount", "--cap-add", "--cap-drop", "--security-opt",
              "--group-add", "--ulimit", "--label", "--add-host", "--tmpfs", "--dns",
              "--publish", "--expose", "--sysctl", "--annotation", "--device-cgroup-rule",
              "--env-file", "--label-file", "--dns-search", "--dns-option", "--attach"}
# Options of the inner `primus-cli direct` that take a value (its --help).
DIRECT_VALUE = {"--config", "--script", "--module", "--python", "--env", "--patch", "--log_file",
                "--accelerator", "--neuron-cores-per-proc"}
# Config keys that are ours, not runtime flags.
CONFIG_OURS = {"env", "image", "name"}


class Args:
    def __init__(self) -> None:
        self.image = self.runtime = self.name = self.config = ""
        self.dry_run = self.debug = self.clean = False
        self.clean_only = False
        self.env_items: list[str] = []
        self.passthrough: list[tuple[str, str | None, bool]] = []  # (flag, value, joined)
        self.inner: list[str] = []
        self.inner_accelerator = ""


def _warn_if_mistyped(key: str) -> None:
    """A runtime option that looks like a mistyped one of ours (--imag): said,
    and still passed on (it may be the runtime's own)."""
    from primus_runner.usertext import did_you_mean

    hint = did_you_mean(key, sorted(o for o in OURS_VALUE | OURS_FLAG if o.startswith("--")), strict=True)
    if hint:
        from primus_runner import log

        log.warn(f"'{key}' is not an option of primus-cli container: it is passed to the container "
                 f"runtime as its own{hint}")


def parse_args(argv: list[str]) -> Args:
    a = Args()
    i = 0
    seen_dashdash = False
    while i < len(argv):
        word = argv[i]
        if word == "--":
            a.inner = argv[i + 1:]
            seen_dashdash = True
            break
        if not word.startswith("-") or word == "-":
            # A word that is no option starts the direct arguments, as in
            # upstream Primus's container mode (`container train pretrain`).
            a.inner = argv[i:]
            seen_dashdash = True
            break
        key, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if key in OURS_VALUE:
            if not eq:
                if i + 1 >= len(argv) or argv[i + 1] == "--":
                    raise UsageError(f"option {key} needs a value.")
                value = argv[i + 1]
                i += 1
            if key in ("--env", "-e"):
                a.env_items.append(value)
            else:
                setattr(a, key[2:], value)
        elif key in OURS_FLAG:
            setattr(a, key[2:].replace("-", "_"), True)
        else:
            flag = SHORT.get(key, key)
            _warn_if_mistyped(key)
            if eq:
                a.passthrough.append((flag, value, True))
            elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                a.passthrough.append((flag, argv[i + 1], False))
                i += 1
            else:
                a.passthrough.append((flag, None, False))
        i += 1
    a.clean_only = a.clean and not seen_dashdash
    inner = a.inner
    for j, word in enumerate(inner[:-1]):
        if word == "--":
            break
        if word == "--accelerator":
            a.inner_accelerator = inner[j + 1]
    return a


def as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def _removed(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or (
        isinstance(value, str) and value.lower() == "false")


def same_value(flag: str, a: str | None, b: str | None) -> bool:
    """Two values of a repeatable flag that mean the same: equal, or for
    ``--cap-add``/``--cap-drop`` the same capability (``SYS_PTRACE``,
    ``CAP_SYS_PTRACE``, any case)."""
    if a is None or b is None:
        return a is b
    if flag in ("--cap-add", "--cap-drop"):
        return a.upper().removeprefix("CAP_") == b.upper().removeprefix("CAP_")
    return a == b


def _same_path(value: str | None) -> str | None:
    """``--volume /data`` as upstream Primus reads it: ``/data:/data``."""
    if value and value.startswith("/") and ":" not in value:
        return f"{value}:{value}"
    return value


class Options:
    """Runtime flags in order: flag -> [(value or None, joined)]."""

    def __init__(self) -> None:
        self.items: dict[str, list[tuple[str | None, bool]]] = {}
        self.listy: set[str] = set()
        self.origin: dict[str, str] = {}

    def has(self, flag: str) -> bool:
        return flag in self.items

    def has_value(self, flag: str, value: str) -> bool:
        return any(same_value(flag, v, value) for v, _ in self.items.get(flag, []))

    def add(self, flag: str, entry: tuple[str | None, bool]) -> None:
        """Append to a repeatable flag, unless that value is there already."""
        values = self.items.setdefault(flag, [])
        if not any(same_value(flag, v, entry[0]) for v, _ in values):
            values.append(entry)

    def pop_devices(self) -> list[tuple[str, str]]:
        values = self.items.pop("--device", [])
        where = self.origin.get("--device", "config")
        return [(where, v) for v, _ in values if v]

    def render(self, always: list[tuple[str, str | None]]) -> list[str]:
        words: list[str] = []
        for flag, value in always:
            if flag == "--rm" and "--rm" in self.items:
                continue
            words += [flag] if value is None else [flag, value]
        for flag, values in self.items.items():
            for value, joined in values:
                if value is None:
                    words.append(flag)
                elif joined:
                    words.append(f"{flag}={value}")
                else:
                    words += [flag, value]
        return words


def merge_options(cfg: Any, passthrough: list[tuple[str, str | None, bool]], plan: Any) -> Options:
    opts = Options()
    raw = cfg.get("container.options") or {}
    if not isinstance(raw, dict):
        raise UsageError("config container.options must be a mapping of runtime flags "
                         f"(key: value), not {type(raw).__name__}.")
    for key, value in raw.items():
        if key in CONFIG_OURS:
            continue
        flag = "--" + str(key).replace("_", "-")
        opts.items.pop(flag, None)             # a later file's spelling replaces
        if _removed(value):
            continue
        if value is True or (isinstance(value, str) and value.strip().lower() == "true"):
            opts.items[flag] = [(None, False)]   # upstream writes privileged: "true"
        elif isinstance(value, list):
            opts.items[flag] = []
            for v in value:
                if not _removed(v):
                    opts.add(flag, (str(v), False))
            opts.listy.add(flag)
        elif isinstance(value, dict):
            raise UsageError(f"config container.options.{key} is a mapping; accepted: a value, "
                             "a list of values, true (bare flag) or false (removed).")
        else:
            opts.items[flag] = [(str(value), False)]
        opts.origin[flag] = f"config container.options.{key}"
    for key in ("--volume",):                   # upstream: a HOST-only volume mounts at
        if key in opts.items:                    # the same path (container --help)
            opts.items[key] = [(_same_path(v), j) for v, j in opts.items[key]]
    for flag, value, joined in passthrough:
        if flag == "--volume":
            value = _same_path(value)
        entry = (value, joined)
        if flag == "--ulimit" and value is not None:
            kind = value.split("=", 1)[0]
            kept = [] if kind == "host" else [
                e for e in opts.items.get(flag, []) if e[0] and e[0].split("=", 1)[0] not in (kind, "host")]
            opts.items[flag] = [*kept, entry]
        elif flag in REPEATABLE or flag in opts.listy:
            opts.add(flag, entry)
        else:
            opts.items[flag] = [entry]
        opts.origin[flag] = f"option {flag}"
    ipc = opts.items.get("--ipc", [])
    if "--shm-size" in opts.items and ipc and ipc[-1][0] == "host":
        level = "WARN" if opts.origin["--shm-size"].startswith("option") else "DEBUG"
        plan.log(level, "--shm-size dropped: --ipc host shares the host's /dev/shm, and podman "
                        "refuses the two together; set --ipc private (or container.options.ipc) "
                        "to size /dev/shm")
        del opts.items["--shm-size"]
    return opts


def rewrite_inner(inner: list[str], cwd: str, env: Mapping[str, str], plan: Any,
                  env_item: Callable[[str, str, Mapping[str, str]], list[tuple[str, str]]]
                  ) -> tuple[list[str], list[str]]:
    """Inner direct arguments with every ``--env`` value moved to the runtime
    environment (``--env NAME`` left in their place) and ``--config FILE`` made
    absolute and mounted read-only. Returns (arguments, extra mounts)."""
    out: list[str] = []
    mounts: list[str] = []
    i = 0
    while i < len(inner):
        word = inner[i]
        if word == "--" or not word.startswith("-"):
            out += inner[i:]
            break
        if word in DIRECT_VALUE and i + 1 < len(inner):
            value = inner[i + 1]
            if word == "--env":
                for key, val in env_item(value, "inner --env", env):
                    plan.pass_env(key, val)
                    out += ["--env", key]
            elif word == "--config":
                path = os.path.abspath(os.path.join(cwd, value))
                mounts.append(f"{path}:{path}:ro")
                out += [word, path]
            else:
                out += [word, value]
            i += 2
            continue
        out.append(word)
        i += 1
    return out, mounts
