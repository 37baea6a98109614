"""The one parser of ``--env FILE`` / ``--env-file FILE``: every mode asks it.

It owns reading an env file as shell-style assignments, without ever running
anything (the upstream Primus runner sources the file, so its
users write shell syntax; sourcing would run commands). It must not export,
log or print values: callers decide what happens to the items.

Format, one assignment per line (blank lines and ``#`` lines skipped):
- ``KEY=VALUE`` or ``export KEY=VALUE``; the key is a shell variable name.
- VALUE is read as the shell reads one word: unquoted text (``\\`` escapes the
  next character), ``"double quotes"`` (quotes stripped; ``\\"``, ``\\\\``,
  ``\\$`` and ``\\``` escapes), ``'single quotes'`` (everything literal), or
  any concatenation of these. `` # comment`` after unquoted whitespace ends
  the line; other unquoted spaces are kept (``A=x y`` is ``x y``, as docker's
  ``--env-file`` reads it, where a shell would run ``y``).
- ``$VAR``, ``${VAR}``, ``${VAR:-default}`` and ``${VAR-default}`` expand,
  unquoted and in double quotes, from the file's earlier lines, then the
  environment the caller passes (the launcher's, when it reads the file);
  an unset name expands to "" as in the shell. ``$`` before anything else
  stays literal. Other ``${...}`` forms are refused.
- ``$(...)`` and backticks are never executed: unquoted or in double quotes
  they are refused (exit 2, naming the file and line); write the value itself,
  or single-quote it to pass the text literally (``A='$(date)'``).

Run by ``runner/primus-cli-direct.sh`` for ``--env FILE``::

    python3 -m primus_runner.env.envfile FILE

prints ``KEY=VALUE`` items, each NUL-terminated, in file order, exit 0. A bad
file prints the one item ``!<exit code> <message>`` instead (no key starts
with ``!``): the launcher shows the message as its own error and exits with
that code (2 a malformed line, 1 a missing file).
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence

from primus_runner.errors import MissingError, PrimusError, UsageError
from primus_runner.shellfmt import nul_records

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ASSIGN = re.compile(r"^(?:export\s+)?([^=\s]*)=")
_LEAD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)(.*))?$", re.S)
_DQ_ESCAPES = '"\\$`'


class _Bad(Exception):
    """A malformed value; the message says what and how to fix it."""


def _expand(text: str, i: int, known: Mapping[str, str]) -> tuple[str, int]:
    """The expansion of the ``$`` at ``text[i]``; (value, index after it)."""
    rest = text[i + 1:]
    if rest.startswith("("):
        raise _Bad("'$(...)' is command substitution, never executed here; write the value "
                   "itself, or single-quote it to keep the text: KEY='$(...)'")
    if rest.startswith("{"):
        end = text.find("}", i + 2)
        if end < 0:
            raise _Bad("'${' has no closing '}'")
        match = _BRACED.match(text[i + 2:end])
        if not match:
            raise _Bad(f"'${{{text[i + 2:end]}}}' is not supported; accepted: $VAR, ${{VAR}}, "
                       "${VAR:-default}, ${VAR-default}")
        name, op, default = match.groups()
        value = known.get(name)
        if op and (value is None or (op == ":-" and value == "")):
            value = _word(default, known, in_default=True)
        return value or "", end + 1
    match = _LEAD_NAME.match(rest)
    if not match:
        return "$", i + 1
    return known.get(match.group(0), ""), i + 1 + match.end()


def _word(text: str, known: Mapping[str, str], in_default: bool = False) -> str:
    """One shell word (the value), quotes removed and $ expansions done."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in " \t" and not in_default and text[i:].strip().startswith("#"):
            break                                   # a trailing # comment
        if char == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise _Bad("a single quote is not closed on this line")
            out.append(text[i + 1:end])
            i = end + 1
        elif char == '"':
            i = _double_quoted(text, i + 1, known, out)
        else:
            i = _unquoted_char(text, i, known, out)
    return "".join(out)


def _unquoted_char(text: str, i: int, known: Mapping[str, str], out: list[str]) -> int:
    """The character at I read as it reads both bare and inside double quotes: a
    backtick refused, ``$`` expanded, any other as itself; the index after it."""
    char = text[i]
    if char == "`":
        raise _Bad("backticks are command substitution, never executed here; write the "
                   "value itself, or single-quote it to keep the text: KEY='`...`'")
    if char == "$":
        value, i = _expand(text, i, known)
        out.append(value)
        return i
    out.append(char)
    return i + 1


def _double_quoted(text: str, i: int, known: Mapping[str, str], out: list[str]) -> int:
    """Read a double-quoted part starting after its quote; the index after it."""
    while i < len(text):
        char = text[i]
        if char == '"':
            return i + 1
        if char == "\\" and i + 1 < len(text) and text[i + 1] in _DQ_ESCAPES:
            out.append(text[i + 1])
            i += 2
        else:
            i = _unquoted_char(text, i, known, out)
    raise _Bad("a double quote is not closed on this line")


def parse(text: str, path: str, what: str = "--env file",
          env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """The (KEY, VALUE) items of an env file's TEXT, in order (pure: ENV, not
    os.environ, is the environment ``$VAR`` reads after the file's own lines)."""
    items: list[tuple[str, str]] = []
    known: dict[str, str] = dict(env or {})
    for number, line in enumerate(text.splitlines(), 1):
        body = line.strip()
        if not body or body.startswith("#"):
            continue
        match = _ASSIGN.match(body)
        if not match or not _NAME.match(match.group(1)):
            shown = (match.group(1) if match else body)[:60]
            raise UsageError(f"{what} {path} line {number} is not KEY=VALUE with a valid name: "
                             f"'{shown}'; write KEY=VALUE (letters, digits, '_', not starting "
                             "with a digit; an 'export ' in front is allowed).")
        key = match.group(1)
        try:
            value = _word(body[match.end():], known)
        except _Bad as exc:
            raise UsageError(f"{what} {path} line {number} ({key}): {exc}. The file is read as "
                             "shell assignments and nothing in it is ever run.") from None
        known[key] = value
        items.append((key, value))
    return items


def read(path: str, what: str = "--env file",
         env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """The items of the env file at PATH (``$VAR`` from ENV, else os.environ)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise MissingError(f"{what} '{path}' not found; give a file of KEY=VALUE lines.") from None
    except OSError as exc:
        raise MissingError(f"{what} '{path}' cannot be read: {exc.strerror}.") from None
    return parse(text, path, what, os.environ if env is None else env)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["-h"], ["--help"]):
        print((__doc__ or "").strip())
        return 0
    if len(args) != 1:
        print("usage: python3 -m primus_runner.env.envfile FILE (see --help)", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    try:
        items = read(args[0])
    except PrimusError as exc:
        out.write(nul_records([(f"!{exc.exit_code} {exc}",)]))
        return 0
    out.write(nul_records((f"{key}={value}",) for key, value in items))
    return 0


if __name__ == "__main__":
    sys.exit(main())
