"""The one rule for which variables are secrets (docs/security.md "Secrets").

The names, suffixes, infixes, words and exemptions are registry data (variables.yaml
shared_facts), read here through the generated facts.py and by bash
(``primus_is_secret_name`` in runner/lib/secrets.sh) through the generated
runner/lib/facts.sh; the user adds names or ``*`` globs with PRIMUS_SECRET_NAMES.
This module decides and masks; it never prints and never holds a copy of the rule.
"""
from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase

from primus_runner.facts import SECRET_EXEMPT, SECRET_INFIXES, SECRET_NAMES, SECRET_SUFFIXES, SECRET_WORDS

MASK = "****"
USER_VARIABLE = "PRIMUS_SECRET_NAMES"
_USER_WORD = re.compile(r"^[A-Za-z0-9_*]+$")


def user_patterns(value: str | None) -> tuple[str, ...]:
    """PRIMUS_SECRET_NAMES as upper-case globs: names or ``*`` globs separated by
    commas or whitespace; a word with any other character is ignored."""
    words = (value or "").replace(",", " ").split()
    return tuple(w.upper() for w in words if _USER_WORD.match(w))


def is_secret(name: str, user: str | None = None) -> bool:
    """True when NAME's value must never be shown. ``user`` is the
    PRIMUS_SECRET_NAMES value to apply (default: this process's)."""
    upper = name.upper()
    if any(fnmatchcase(upper, pattern) for pattern in SECRET_EXEMPT):
        return False
    if (upper in SECRET_NAMES or upper.endswith(SECRET_SUFFIXES)
            or any(infix in upper for infix in SECRET_INFIXES)
            or not SECRET_WORDS.isdisjoint(upper.split("_"))):
        return True
    if user is None:
        user = os.environ.get(USER_VARIABLE)
    return any(fnmatchcase(upper, pattern) for pattern in user_patterns(user))


def mask(name: str, value: str) -> str:
    """The value as it may be printed: ``****`` for secrets (even when empty-looking)."""
    return MASK if is_secret(name) and value != "" else value


# The secret names of os.environ, found once per (size, PRIMUS_SECRET_NAMES):
# masking a log line then costs the secrets' count, not the environment's
# (10,000 exported variables).
_cache: dict[tuple[int, str], tuple[str, ...]] = {}


def _environ_secret_names() -> tuple[str, ...]:
    user = os.environ.get(USER_VARIABLE, "")
    key = (len(os.environ), user)
    names = _cache.get(key)
    if names is None:
        names = tuple(n for n in os.environ if is_secret(n, user))
        _cache.clear()
        _cache[key] = names
    return names


def mask_text(text: str, env: dict[str, str] | None = None) -> str:
    """Replace every secret value found in ``env`` (default: os.environ) inside free
    text by ``****``."""
    if env is None:
        values = [os.environ.get(n, "") for n in _environ_secret_names()]
    else:
        user = env.get(USER_VARIABLE, os.environ.get(USER_VARIABLE, ""))
        values = [v for n, v in env.items() if is_secret(n, user)]
    for value in values:
        if value and len(value) >= 3:
            text = text.replace(value, MASK)
    return text
