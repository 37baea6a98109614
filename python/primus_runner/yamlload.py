"""PyYAML for the package: one import, one loader, and the import made cheap.

Importing PyYAML compiles ten regular expressions at module level (about half
of its import time: ~14 of ~29 ms on the development machine, `make bench`'s
dry run pays it on every launch). With the LibYAML loader
(``CSafeLoader``) most of them are never used: the reader's ``NON_PRINTABLE``
(alone ~10 ms, a class of every printable Unicode range) checks the text only
in the pure-Python reader, and the dumper's are for writing. So the import
below hands PyYAML patterns that compile on first use; a typical config then
compiles the three resolver patterns its scalars need (~2 ms).

Only PyYAML's own module-level ``re.compile`` calls get lazy patterns: the
substitution lasts for the ``import yaml`` statement and is undone in
``finally``, and within it a call from any other module (a standard-library
module PyYAML loads for the first time) gets a real pattern. This package's
processes run no thread while they import it.
"""

from __future__ import annotations

import re
import sys

_REAL_COMPILE = re.compile

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ms of every launch
    from typing import Any


class _LazyPattern:
    """A compiled pattern made on first use: every attribute (``match``,
    ``search``, ``sub``, ``pattern``...) comes from it."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, args: tuple[Any, ...]) -> None:
        self._args = args
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)
        return getattr(compiled, name)


def _lazy_compile(pattern: Any, flags: int = 0) -> Any:
    # Only a call from one of PyYAML's modules: a standard-library module that
    # the import loads for the first time keeps real patterns.
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if caller == "yaml" or caller.startswith("yaml."):
        return _LazyPattern((pattern, flags))
    return _REAL_COMPILE(pattern, flags)


def import_yaml() -> Any:
    """The ``yaml`` module, imported (once) with lazily compiled patterns."""
    module = sys.modules.get("yaml")
    if module is not None:
        return module
    from primus_runner.sitepaths import ensure_site

    ensure_site()  # the launch helper starts without site-packages (sitepaths.py)
    real = re.compile
    re.compile = _lazy_compile
    try:
        import yaml
    finally:
        re.compile = real
    return yaml


def safe_loader(yaml: Any) -> Any:
    """The LibYAML safe loader when PyYAML was built with it, else the Python one."""
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)
