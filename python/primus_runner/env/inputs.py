"""The launch's explicit inputs: config ``direct.env`` items and ``--env`` arguments.

Owns the meaning of ``--env KEY=VALUE|FILE|NAME`` for the direct launcher and
``primus-cli env check`` (one reader, so both spell it the same) and the order
in which they beat the exported environment: config ``direct.env`` first, then
``--env`` in command-line order, later items winning. The launch helper merges
them into the environment *before* the precedence step (ranks, detection), so
nothing is applied after the verdict. Must not export, print, or check values
(the rules engine judges them).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from primus_runner.errors import UsageError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _item(text: str, where: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    if not _NAME.match(name):
        raise UsageError(f"{where} '{name}' is not a valid variable name; accepted: letters, digits "
                         "and '_', not starting with a digit. Fix: write KEY=VALUE.")
    return name, value


def config_items(values: Iterable[object]) -> list[tuple[str, str]]:
    """The KEY=VALUE items of config ``direct.env`` (a list of strings)."""
    items = []
    for raw in values:
        text = str(raw)
        if "=" not in text:
            raise UsageError(f"config direct.env item '{text}' has no '='; accepted: KEY=VALUE. "
                             "Fix: write KEY=VALUE.")
        items.append(_item(text, "config direct.env"))
    return items


def cli_items(args: Iterable[str], environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """``--env ITEM`` arguments: KEY=VALUE, a file of KEY=VALUE lines (envfile.py),
    or NAME (the value NAME has in ``environ``: how a secret or a container
    launch hands a value in without putting it on an argv)."""
    items: list[tuple[str, str]] = []
    for arg in args:
        if "=" in arg:
            items.append(_item(arg, "--env"))
        elif os.path.isfile(arg):
            from primus_runner.env import envfile  # only for a file: its import costs ms of every launch

            items.extend(envfile.read(arg, "--env file"))
        elif _NAME.match(arg) and arg in environ:
            items.append((arg, environ[arg]))
        else:
            raise UsageError(f"--env '{arg}' is neither KEY=VALUE, an existing file, nor a variable "
                             "set in the environment; write --env KEY=VALUE or --env path/to/file.env.")
    return items


# Linux refuses an execve whose environment holds one string ("NAME=VALUE" and its
# NUL) longer than MAX_ARG_STRLEN = 32 pages = 131072 bytes (execve(2), "Limits
# on size of arguments and environment"): every process the launch starts would
# fail with "Argument list too long".
MAX_ENV_STRING = 131072


def check_size(name: str, value: str, where: str) -> None:
    """A value the kernel would refuse to pass on: exit 2 naming it and the limit."""
    size = len(name.encode("utf-8", "surrogateescape")) + 1 + len(value.encode("utf-8", "surrogateescape")) + 1
    if size > MAX_ENV_STRING:
        raise UsageError(f"{where} {name} is {size} bytes as NAME=VALUE; the kernel passes at most "
                         f"{MAX_ENV_STRING} bytes per environment string (MAX_ARG_STRLEN, 128 KiB), so "
                         "no process of the launch could start. Fix: put the data in a file and pass "
                         "its path in the variable.")


def merged(environ: Mapping[str, str], items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``environ`` with the items on top (later items win): the input of the precedence step."""
    out = dict(environ)
    for name, value in items:
        check_size(name, value, "--env / direct.env value")
        out[name] = value
    return out
