"""Exceptions that carry the exit codes of SPEC section 3."""
from __future__ import annotations

# The values live once in the registry's shared_facts (generated facts.py):
# EXIT_MISSING 1 missing library, dependency or file; EXIT_INVALID 2 invalid
# arguments or configuration; EXIT_RUNTIME 3 hook, patch or launched program failed.
from primus_runner.facts import EXIT_INVALID, EXIT_MISSING, EXIT_OK, EXIT_RUNTIME

__all__ = ["EXIT_INVALID", "EXIT_MISSING", "EXIT_OK", "EXIT_RUNTIME", "MissingError", "PrimusError",
           "RuntimeFailure", "UsageError", "closest"]


class PrimusError(Exception):
    """Base class; ``exit_code`` is what the process should exit with."""

    exit_code = EXIT_INVALID


class UsageError(PrimusError):
    """Bad arguments, bad configuration or a bad variable value (exit 2)."""

    exit_code = EXIT_INVALID


class MissingError(PrimusError):
    """A required file, library or tool is missing (exit 1)."""

    exit_code = EXIT_MISSING


class RuntimeFailure(PrimusError):
    """Something that was started failed (exit 3)."""

    exit_code = EXIT_RUNTIME


def closest(name: str, candidates: list[str] | tuple[str, ...] | set[str]) -> str | None:
    """The candidate most like ``name`` (for 'did you mean' hints), or None."""
    import difflib

    found = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None
