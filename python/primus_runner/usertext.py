"""Text a user reads, one implementation each: help texts built from module
docstrings without their reStructuredText markup (``plain``), and the "did you
mean" hint for a mistyped mode, option or subcommand (``did_you_mean``, also
run by runner/lib/usage.sh for the shell entry points). Pure functions; this
package decides nothing about a launch and prints nothing itself.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence

_LITERAL = re.compile(r"``(.+?)``")


def plain(doc: str | None) -> str:
    """DOC as a terminal shows it: ``name`` becomes name."""
    return _LITERAL.sub(r"\1", doc or "")


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """'; did you mean 'X'?' for the candidate closest to WORD, else ''.

    Close means difflib's ratio >= 0.6 (errors.closest, the one rule of it),
    or WORD being a prefix of exactly one candidate (``--modul`` for
    ``--module``)."""
    from primus_runner.errors import closest

    names = [c for c in candidates if c and c != word]
    if not word or not names:
        return ""
    prefixed = [c for c in names if c.startswith(word)]
    found = prefixed[0] if len(prefixed) == 1 else closest(word, names)
    return f"; did you mean '{found}'?" if found else ""


def main(argv: Sequence[str] | None = None) -> int:
    """``python3 -m primus_runner.usertext suggest WORD CANDIDATE...``: print the hint."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] != "suggest":
        print("usage: python3 -m primus_runner.usertext suggest WORD CANDIDATE...", file=sys.stderr)
        return 2
    sys.stdout.write(did_you_mean(args[1], args[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
