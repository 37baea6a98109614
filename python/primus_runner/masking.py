"""The one rule for which variables are secrets (SPEC section 3).

The names and suffixes are registry data (variables.yaml shared_facts), read here
through the generated facts.py and by bash (``primus_is_secret_name`` in
runner/lib/common.sh) through the generated runner/lib/facts.sh.
"""
from __future__ import annotations

from primus_runner.facts import SECRET_NAMES, SECRET_SUFFIXES

MASK = "****"


def is_secret(name: str) -> bool:
    upper = name.upper()
    return upper in SECRET_NAMES or upper.endswith(SECRET_SUFFIXES)


def mask(name: str, value: str) -> str:
    """The value as it may be printed: ``****`` for secrets (even when empty-looking)."""
    return MASK if is_secret(name) and value != "" else value


def mask_text(text: str, env: dict[str, str] | None = None) -> str:
    """Replace every secret value found in ``env`` inside free text by ``****``."""
    import os

    source = os.environ if env is None else env
    for name, value in source.items():
        if value and len(value) >= 3 and is_secret(name):
            text = text.replace(value, MASK)
    return text
