"""Output formats that the bash side reads without ever evaluating them.

- ``export_lines``: ``export NAME=VALUE`` lines quoted for bash, for users who
  ``source <(python3 -m primus_runner ... --format shell)``.
- ``nul_records``: the one NUL record encoder. Every field of every record is
  ended by a NUL byte (pairs ``NAME\\0VALUE\\0`` for detection, triples
  ``kind\\0key\\0value\\0`` for the launch helper and the config, single items
  for ``--env`` files); the bash side reads a fixed number of fields per record
  with ``read -r -d ''`` (or ``mapfile -d ''``) and assigns with ``printf -v``,
  so no value is ever executed.
- ``report_parser``, ``report_notes``, ``report_table`` and ``print_report``: what the
  detection commands (``devices``, ``nics``) share: their options, notes and output.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from primus_runner.errors import UsageError

# typing's import costs ~2.6 ms on every launch (this module is on the launch
# helper's path); mypy reads a module-level TYPE_CHECKING as true all the same.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_valid_name(name: str) -> bool:
    return bool(NAME_RE.match(name))


def bash_quote(value: str) -> str:
    """Quote for bash; newlines survive (single quotes keep them literal)."""
    import shlex  # here, not at the top: the launch path imports this module and never quotes

    return shlex.quote(value)


def export_lines(values: Mapping[str, str]) -> str:
    out = []
    for name, value in values.items():
        if not is_valid_name(name):
            raise ValueError(f"not a shell variable name: {name!r}")
        out.append(f"export {name}={bash_quote(str(value))}")
    return "\n".join(out) + ("\n" if out else "")


def nul_records(records: Iterable[Sequence[str]]) -> bytes:
    """Each field of each record followed by NUL, UTF-8 (undecodable bytes kept).

    A field that holds a NUL byte cannot be carried: UsageError naming the
    record's key (the field before the value; an item's text before '=').
    """
    chunks = []
    for record in records:
        for part in record:
            if "\0" in part:
                key = record[-2] if len(record) > 1 else record[0].partition("=")[0]
                raise UsageError(f"the value for '{key}' holds a NUL byte, which no environment "
                                 "variable can carry; remove it.")
            chunks.append(part)
            chunks.append("\0")
    return "".join(chunks).encode("utf-8", "surrogateescape")


def print_report(fmt: str, document: object, env: Mapping[str, str], table: Callable[[], str]) -> None:
    """A detection command's answer on stdout, the one writer of its four formats:
    ``json`` (DOCUMENT), ``shell`` (export lines of ENV), ``nul`` (NUL records of ENV),
    else the TABLE text (called only then)."""
    import sys

    if fmt == "json":
        import json

        print(json.dumps(document, indent=2))
    elif fmt == "shell":
        sys.stdout.write(export_lines(env))
    elif fmt == "nul":
        sys.stdout.flush()
        sys.stdout.buffer.write(nul_records(env.items()))
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(table())


def report_parser(command: str, description: str, sysfs_help: str) -> argparse.ArgumentParser:
    """A detection command's parser, with the options every one has: ``--sysfs-root``
    (default ``$PRIMUS_SYSFS_ROOT``, else /; SYSFS_HELP says what it holds) and
    ``--format`` (print_report's four, default table)."""
    import argparse
    import os

    parser = argparse.ArgumentParser(prog=f"python3 -m primus_runner {command}", description=description)
    parser.add_argument("--sysfs-root", default=os.environ.get("PRIMUS_SYSFS_ROOT") or "/",
                        help=f"root holding {sysfs_help} (default: $PRIMUS_SYSFS_ROOT or /)")
    parser.add_argument("--format", choices=("shell", "json", "table", "nul"), default="table")
    return parser


def report_notes(command: str, notes: Iterable[str]) -> None:
    """A detection's notes on stderr, one ``primus-runner: COMMAND: NOTE`` line each."""
    import sys

    for note in notes:
        print(f"primus-runner: {command}: {note}", file=sys.stderr)


def report_table(lines: list[str], kept_label: str, kept: Mapping[str, str], env: Mapping[str, str]) -> str:
    """A detection table's text: LINES, then a ``KEPT_LABEL NAME=VALUE`` line for each value
    kept as given (the user's) and an ``export NAME=VALUE`` line for each exported one."""
    lines = [*lines, *(f"{kept_label} {name}={value}" for name, value in kept.items()),
             *(f"export {name}={value}" for name, value in env.items())]
    return "\n".join(lines) + "\n"
