"""primus_runner.records, the package's one record type, against the standard
library's dataclasses: the same class bodies and calls, the same verdicts."""
from __future__ import annotations

import dataclasses
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pytest

from primus_runner import records

PACKAGE = pathlib.Path(records.__file__).parent


def both(body: Callable[[Callable[..., Any], Callable[..., Any]], Any]) -> list[Any]:
    """Run BODY(dataclass, field) with each implementation; outcome per implementation."""
    out = []
    for impl in (dataclasses, records):
        try:
            out.append(("ok", body(impl.dataclass, impl.field)))
        except Exception as exc:  # noqa: BLE001 - the verdict is what is compared
            out.append((type(exc).__mro__[1] if type(exc).__name__ == "FrozenInstanceError" else type(exc),))
    return out


def plain(dataclass: Callable[..., Any], field: Callable[..., Any], **opts: Any) -> Any:
    @dataclass(**opts) if opts else dataclass
    class Point:
        x: int
        y: int = 2
        tags: list[str] = field(default_factory=list)

    return Point


CASES: dict[str, Callable[[Callable[..., Any], Callable[..., Any]], Any]] = {
    "positional and keyword": lambda d, f: repr(plain(d, f)(1, y=3)).split("(", 1)[1],
    "defaults and factory": lambda d, f: (plain(d, f)(1).y, plain(d, f)(1).tags),
    "factory gives a new list each time": lambda d, f: plain(d, f)(1).tags is not plain(d, f)(1).tags,
    "equality": lambda d, f: (plain(d, f)(1) == plain(d, f)(1), plain(d, f)(1) == plain(d, f)(2)),
    "missing argument": lambda d, f: plain(d, f)(),
    "too many positional": lambda d, f: plain(d, f)(1, 2, [], 4),
    "unknown keyword": lambda d, f: plain(d, f)(1, z=3),
    "repeated argument": lambda d, f: plain(d, f)(1, x=2),
    "mutable records are unhashable": lambda d, f: hash(plain(d, f)(1)),
    "frozen refuses assignment": lambda d, f: setattr(plain(d, f, frozen=True)(1), "x", 5),
    "frozen refuses deletion": lambda d, f: delattr(plain(d, f, frozen=True)(1), "x"),
    "frozen equal records hash alike": lambda d, f: (
        hash(plain(d, f, frozen=True)(1, 2, ())) == hash(plain(d, f, frozen=True)(1, 2, ()))),
}


def non_default_after_default(dataclass: Callable[..., Any], _f: Callable[..., Any]) -> Any:
    @dataclass
    class Bad:
        a: int = 1
        b: int  # type: ignore[misc]

    return Bad


def mutable_default(dataclass: Callable[..., Any], _f: Callable[..., Any]) -> Any:
    @dataclass
    class Bad:
        a: list[int] = []  # noqa: RUF012

    return Bad


CASES["non-default after default"] = non_default_after_default
CASES["mutable default"] = mutable_default


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_verdict_as_dataclasses(name: str) -> None:
    stdlib, ours = both(CASES[name])
    assert ours == stdlib


def test_the_refusals_are_refusals() -> None:
    # Guard against a comparison of two passes: these must fail in both.
    for name in ("missing argument", "unknown keyword", "non-default after default",
                 "mutable default", "frozen refuses assignment"):
        assert both(CASES[name])[1][0] != "ok", name


def test_asdict_and_fields_agree_with_dataclasses() -> None:
    std = plain(dataclasses.dataclass, dataclasses.field)
    own = plain(records.dataclass, records.field)
    assert records.asdict(own(1, tags=["a"])) == dataclasses.asdict(std(1, tags=["a"]))
    assert records.fields(own) == tuple(f.name for f in dataclasses.fields(std))
    with pytest.raises(TypeError, match="not a record"):
        records.fields(int)


def test_the_package_has_one_record_type() -> None:
    stdlib_users = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                    if p.name != "records.py"
                    and re.search(r"^\s*(from dataclasses import|import dataclasses)", p.read_text(), re.M)]
    assert stdlib_users == []
