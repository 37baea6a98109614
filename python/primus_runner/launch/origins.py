"""Who owns a value, as the shell layers' Python decisions read it
(launch/neuron_layer.py, launch/jax_layer.py): the layers' precedence rule of
runner/lib/env_origin.sh (primus_env_user_owns), read from what the shell
exports with the environment: PRIMUS_ENV_ORIGINS (origins it recorded) and
PRIMUS_DETECTED_VARS (values the launcher detected or defaulted).
"""
from __future__ import annotations

from collections.abc import Mapping

Record = tuple[str, str, str]   # (kind, name, value): default, set, unset, warn


def origins(env: Mapping[str, str]) -> dict[str, str]:
    """NAME -> origin from PRIMUS_ENV_ORIGINS ("NAME:origin ...")."""
    found = {}
    for entry in env.get("PRIMUS_ENV_ORIGINS", "").split():
        name, _, origin = entry.partition(":")
        found[name] = origin
    return found


def detected(env: Mapping[str, str]) -> set[str]:
    """The names the launcher detected or defaulted (PRIMUS_DETECTED_VARS)."""
    return set(env.get("PRIMUS_DETECTED_VARS", "").split())


def owns(name: str, env: Mapping[str, str], found: Mapping[str, str], launcher: set[str]) -> bool:
    """The user's value: recorded as the user's, or set before any layer and not
    detected by the launcher (primus_env_user_owns)."""
    if name in found:
        return found[name].startswith("user")
    return name in env and name not in launcher


def user_owns(env: Mapping[str, str], name: str) -> bool:
    """owns() with the origins and detected names ``env`` carries."""
    return owns(name, env, origins(env), detected(env))
