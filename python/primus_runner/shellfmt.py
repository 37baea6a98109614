"""Output formats that the bash side reads without ever evaluating them.

- ``export_lines``: ``export NAME=VALUE`` lines quoted for bash, for users who
  ``source <(python3 -m primus_runner ... --format shell)``.
- ``nul_records``: NAME\\0VALUE\\0 pairs; the launcher reads them with
  ``read -r -d ''`` and assigns with ``printf -v``, so no value is ever executed.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_valid_name(name: str) -> bool:
    return bool(NAME_RE.match(name))


def bash_quote(value: str) -> str:
    """Quote for bash; newlines survive (single quotes keep them literal)."""
    return shlex.quote(value)


def export_lines(values: Mapping[str, str]) -> str:
    out = []
    for name, value in values.items():
        if not is_valid_name(name):
            raise ValueError(f"not a shell variable name: {name!r}")
        out.append(f"export {name}={bash_quote(str(value))}")
    return "\n".join(out) + ("\n" if out else "")


def nul_records(pairs: Iterable[tuple[str, str]]) -> bytes:
    chunks = []
    for key, value in pairs:
        if "\0" in key or "\0" in value:
            raise ValueError(f"NUL byte in {key!r}")
        chunks.append(f"{key}\0{value}\0")
    return "".join(chunks).encode("utf-8", "surrogateescape")
