"""Exceptions that carry the exit codes of docs/exit-codes.md "The exit-code table"."""
from __future__ import annotations

# The values live once in the registry's shared_facts (generated facts.py):
# EXIT_MISSING 1 missing library, dependency or file; EXIT_INVALID 2 invalid
# arguments or configuration; EXIT_RUNTIME 3 hook, patch or launched program failed.
from primus_runner.facts import EXIT_INVALID, EXIT_MISSING, EXIT_OK, EXIT_RUNTIME

__all__ = ["EXIT_INVALID", "EXIT_MISSING", "EXIT_OK", "EXIT_RUNTIME", "MissingError", "PrimusError",
           "Problem", "RuleRefusal", "RuntimeFailure", "UsageError", "closest"]

Problem = tuple[str, str, str, str]  # variable, value, message, fix


class PrimusError(Exception):
    """Base class; ``exit_code`` is what the process should exit with."""

    exit_code = EXIT_INVALID


class UsageError(PrimusError):
    """Bad arguments, bad configuration or a bad variable value (exit 2)."""

    exit_code = EXIT_INVALID


class RuleRefusal(UsageError):
    """A refusal that is a registered rule: exit 2, carrying the rule
    id and the finding's parts, so the launcher prints it as ``env check`` prints
    that rule and ``env explain`` names it. ``text`` keeps a refusal's own
    wording where callers read it; by default ``NAME='value': message. Fix: fix``."""

    def __init__(self, rule: str, problem: Problem, suffix: str = "", text: str | None = None) -> None:
        variable, value, message, fix = problem
        super().__init__(text if text is not None else f"{variable}='{value}': {message}. Fix: {fix}{suffix}")
        self.rule, self.variable, self.value, self.reason = rule, variable, value, message
        self.fix = fix + suffix  # the finding reads as the message does


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
