"""The one rule for which variables are secrets (SPEC section 3).

The shell twin is ``primus_is_secret_name`` in runner/lib/common.sh; a test keeps
the two in agreement.
"""
from __future__ import annotations

MASK = "****"
SECRET_SUFFIXES = ("_TOKEN", "_API_KEY", "_SECRET", "_PASSWORD")
SECRET_NAMES = frozenset({"HF_TOKEN", "WANDB_API_KEY", "DATABRICKS_TOKEN"})


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
