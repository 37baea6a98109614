"""Text a user reads, one implementation each: help texts built from module
docstrings without their reStructuredText markup (``plain``), and the "did you
mean" hint for a mistyped mode, option or subcommand (``did_you_mean``, also
run by runner/lib/usage.sh for the shell entry points). Pure functions; this
package decides nothing about a launch and prints nothing itself.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from typing import NoReturn

_LITERAL = re.compile(r"``(.+?)``")


def plain(doc: str | None) -> str:
    """DOC as a terminal shows it: ``name`` becomes name."""
    return _LITERAL.sub(r"\1", doc or "")


def did_you_mean(word: str, candidates: Iterable[str], strict: bool = False) -> str:
    """'; did you mean 'X'?' for the candidate closest to WORD, else ''.

    Close means difflib's ratio >= 0.6 (errors.closest, the one rule of it;
    0.85 when STRICT: WORD may well be right, e.g. a runtime's own option),
    or WORD being a prefix of exactly one candidate (``--modul`` for
    ``--module``)."""
    import difflib

    from primus_runner.errors import closest

    names = [c for c in candidates if c and c != word]
    if not word or not names:
        return ""
    prefixed = [c for c in names if c.startswith(word)]
    if len(prefixed) == 1:
        found: str | None = prefixed[0]
    elif strict:
        near = difflib.get_close_matches(word, names, n=1, cutoff=0.85)
        found = near[0] if near else None
    else:
        found = closest(word, names)
    return f"; did you mean '{found}'?" if found else ""


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (\S+)")


class SuggestingParser(argparse.ArgumentParser):
    """argparse with "did you mean" on a mistyped subcommand or option
    (``env chek``, ``config show --formt``); its subparsers are the same kind."""

    def error(self, message: str) -> NoReturn:
        hint = ""
        choice = _INVALID_CHOICE.search(message)
        unknown = _UNRECOGNIZED.search(message)
        if choice:
            listed = choice.group(2)  # quoted up to Python 3.11, bare since
            names = re.findall(r"'([^']*)'", listed) or [c.strip() for c in listed.split(",")]
            hint = did_you_mean(choice.group(1), names)
        elif unknown:
            options = [o for action in self._actions for o in action.option_strings]
            for action in self._actions:  # the chosen subcommand's own options
                if isinstance(action, argparse._SubParsersAction):
                    for sub in action.choices.values():
                        options += [o for a in sub._actions for o in a.option_strings]
            hint = did_you_mean(unknown.group(1).split("=", 1)[0], options)
        super().error(message + hint)


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
