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
    from primus_runner.env import envfile

    items: list[tuple[str, str]] = []
    for arg in args:
        if "=" in arg:
            items.append(_item(arg, "--env"))
        elif os.path.isfile(arg):
            items.extend(envfile.read(arg, "--env file"))
        elif _NAME.match(arg) and arg in environ:
            items.append((arg, environ[arg]))
        else:
            raise UsageError(f"--env '{arg}' is neither KEY=VALUE, an existing file, nor a variable "
                             "set in the environment; write --env KEY=VALUE or --env path/to/file.env.")
    return items


def merged(environ: Mapping[str, str], items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``environ`` with the items on top (later items win): the input of the precedence step."""
    out = dict(environ)
    for name, value in items:
        out[name] = value
    return out
