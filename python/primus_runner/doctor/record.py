"""The doctor's one row type (``Check``) and the exit code a list of rows means.

Owns: the status words (pass, warn, fail), the row fields (name, status, value
seen, wanted, fix) and the node exit code. Must not decide any check itself.
"""
from __future__ import annotations

from primus_runner.facts import EXIT_OK, EXIT_RUNTIME
from primus_runner.records import asdict, dataclass

PASS, WARN, FAIL = "pass", "warn", "fail"
STATUS_ORDER = {FAIL: 0, WARN: 1, PASS: 2}
# at least one check failed: the runtime-failure code (documented in --help and docs/exit-codes.md)
EXIT_HEALTHY, EXIT_UNFIT = EXIT_OK, EXIT_RUNTIME


@dataclass
class Check:
    name: str
    status: str
    value: str
    wanted: str
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        out: dict[str, str] = asdict(self)
        return out


def exit_code(checks: list[Check]) -> int:
    return EXIT_UNFIT if any(c.status == FAIL for c in checks) else EXIT_HEALTHY


def worst(checks: list[Check]) -> str:
    return min((c.status for c in checks), key=STATUS_ORDER.__getitem__, default=PASS)
