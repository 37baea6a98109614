"""How the launch helper reports its verdict.

Owns the verdict options ``primus-cli env check`` hands to the launch helper
(``launch serve --verdict strict,json,container,no-host-probes,say-ok``) and
the reporting of a precedence-step or detection refusal that is a registered
rule (errors.RuleRefusal) in env check's own format, so ``direct`` and ``env
check`` print the same finding for it. Must not decide anything: the rules
engine and the rank mapping do.
"""
from __future__ import annotations

import os
import sys

_WORDS = ("text", "strict", "json", "container", "no-host-probes", "say-ok")


class Verdict:
    """The options of one verdict (all off for a plain launch)."""

    def __init__(self, words: set[str]) -> None:
        self.strict = "strict" in words
        self.format = "json" if "json" in words else "text"
        self.container = "container" in words
        self.host_probes = "no-host-probes" not in words
        self.say_ok = "say-ok" in words

    @classmethod
    def parse(cls, text: str) -> Verdict:
        words = {w for w in text.split(",") if w}
        unknown = sorted(words - set(_WORDS))
        if unknown:
            from primus_runner.errors import UsageError

            raise UsageError(f"--verdict '{text}': unknown word(s) {', '.join(unknown)}; accepted: "
                             f"{', '.join(_WORDS)}")
        return cls(words)

    def refusal(self, exc: BaseException, console_fd: int | None) -> bool:
        """Report a RuleRefusal as a finding (True), or leave it to the caller (False)."""
        from primus_runner.errors import RuleRefusal

        if not isinstance(exc, RuleRefusal):
            return False
        from primus_runner.env.commands import write_report
        from primus_runner.env.rules.types import Finding
        from primus_runner.masking import mask

        finding = Finding("error", exc.variable, mask(exc.variable, exc.value), exc.reason, exc.fix, exc.rule)
        saved = sys.stdout
        if console_fd is not None:
            sys.stdout = os.fdopen(console_fd, "w", closefd=False)
        try:
            write_report([finding], exc.exit_code, strict=self.strict, fmt=self.format)
            self.probes_note()
        finally:
            sys.stdout.flush()
            sys.stdout = saved
        return True

    def probes_note(self) -> None:
        if not self.host_probes and self.format == "text":
            sys.stdout.write("[env check] host probes skipped (--no-host-probes): whether MASTER_ADDR "
                             "resolves on this node was not checked\n")

    def closing(self, args: object, code: int) -> None:
        """After the rules: the skipped probes, and one line when there was nothing to say."""
        self.probes_note()
        if code == 0 and self.say_ok and self.format == "text" and not getattr(args, "_findings", 0):
            sys.stdout.write("[env check] no problems found\n")
