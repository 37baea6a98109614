"""The one parser of ``--env FILE`` / ``--env-file FILE``: every mode asks it.

Format (as docker's ``--env-file``, plus an optional ``export`` as in shell
files): one ``KEY=VALUE`` per line; blank lines and lines starting with ``#``
(after spaces) are skipped; ``export KEY=VALUE`` is the same as ``KEY=VALUE``;
the value is literal (everything after the first ``=``, quotes and spaces
kept), the key is a shell variable name.

Run by ``runner/primus-cli-direct.sh`` for ``--env FILE``::

    python3 -m primus_runner.env.envfile FILE

prints ``KEY=VALUE`` items, each NUL-terminated, in file order, exit 0. A bad
file prints the one item ``!<exit code> <message>`` instead (no key starts
with ``!``): the launcher shows the message as its own error and exits with
that code (2 a malformed line, 1 a missing file).
"""
from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from primus_runner.errors import MissingError, PrimusError, UsageError
from primus_runner.shellfmt import nul_records

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse(text: str, path: str, what: str = "--env file") -> list[tuple[str, str]]:
    """The (KEY, VALUE) items of an env file's TEXT, in order (pure)."""
    items: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        body = line.lstrip()
        if body.startswith("export "):
            body = body[len("export "):].lstrip()
        key, sep, value = body.partition("=")
        if not sep or not _NAME.match(key):
            shown = (key if sep else body)[:60]
            raise UsageError(f"{what} {path} line {number} is not KEY=VALUE with a valid name: "
                             f"'{shown}'; write KEY=VALUE (letters, digits, '_', not starting "
                             "with a digit; an 'export ' in front is allowed).")
        items.append((key, value))
    return items


def read(path: str, what: str = "--env file") -> list[tuple[str, str]]:
    """The items of the env file at PATH."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise MissingError(f"{what} '{path}' not found; give a file of KEY=VALUE lines.") from None
    except OSError as exc:
        raise MissingError(f"{what} '{path}' cannot be read: {exc.strerror}.") from None
    return parse(text, path, what)


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
