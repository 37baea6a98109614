"""The package's one record type: a small stand-in for ``dataclasses``.

``import dataclasses`` pulls in ``inspect`` (with ``ast``, ``enum`` and
``tokenize``): 10-28 ms per Python start on this machine (``python3 -X
importtime -c 'import dataclasses'``), and the launch path starts Python twice
per launch within a 0.15 s budget (docs/run-on-one-node.md "Launch overhead"). So every record in the
package uses this module, on the launch path or not.

It covers what the package uses: ``@dataclass`` and ``@dataclass(frozen=True)``
(generated ``__init__`` from the class annotations, defaults and
``field(default_factory=...)``; ``__repr__``; ``__eq__``; for frozen records
``__hash__`` and no assignment), ``asdict`` (recursive over records, lists,
tuples and dicts) and ``fields`` (the names, in order). It rejects what the
standard library rejects, with the same exception types (a test feeds both the
same classes): a field without a default after one with a default, a mutable
default (list, dict, set), missing, unknown or repeated arguments, assignment
to a frozen record. Nothing else (no ``ClassVar``, ``InitVar``, ``__post_init__``,
ordering or slots): a class that needs them is not a record.
"""
from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any, TypeVar, overload

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
else:  # at run time both decorators are the identity; only the type checker reads them

    def overload(function: T) -> T:
        return function

    def dataclass_transform(**_kwargs: object) -> Callable[[T], T]:
        return lambda function: function

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record (as ``dataclasses`` raises)."""


class _Field:
    __slots__ = ("default_factory",)

    def __init__(self, default_factory: Callable[[], Any]) -> None:
        self.default_factory = default_factory


def field(*, default_factory: Callable[[], Any]) -> Any:
    return _Field(default_factory)


def _fields_of(cls: type) -> list[tuple[str, Any]]:
    """(name, default or _MISSING or _Field) in definition order, bases first."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        for name in klass.__dict__.get("__annotations__", {}):  # noqa: RUF063 (inspect costs ms)
            out[name] = klass.__dict__.get(name, _MISSING)
    return list(out.items())


def _check_defaults(cls: type, fields: list[tuple[str, Any]]) -> None:
    """The class-definition errors of ``dataclasses``, same types and sense."""
    seen_default = False
    for name, default in fields:
        if isinstance(default, (list, dict, set)):
            raise ValueError(f"mutable default {type(default)} for field {name} of {cls.__name__} "
                             "is not allowed: use default_factory")
        if default is _MISSING:
            if seen_default:
                raise TypeError(f"non-default argument {name!r} follows default argument")
        else:
            seen_default = True


def _make_init(cls: type, fields: list[tuple[str, Any]]) -> Callable[..., None]:
    names = [name for name, _ in fields]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} arguments, got {len(args)}")
        values = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in names or key in values:
                raise TypeError(f"{cls.__name__}() got an unexpected or repeated argument {key!r}")
            values[key] = value
        for name, default in fields:
            if name in values:
                value = values[name]
            elif isinstance(default, _Field):
                value = default.default_factory()
            elif default is _MISSING:
                raise TypeError(f"{cls.__name__}() missing required argument {name!r}")
            else:
                value = default
            object.__setattr__(self, name, value)

    return __init__


def _frozen_setattr(self: Any, name: str, _value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r} of frozen {type(self).__name__}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r} of frozen {type(self).__name__}")


def _build(cls: type[T], frozen: bool) -> type[T]:
    fields = _fields_of(cls)
    _check_defaults(cls, fields)
    names = tuple(name for name, _ in fields)

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{cls.__name__}({inner})"

    def __eq__(self: Any, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in names)

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in names))

    for name, default in fields:
        if isinstance(default, _Field):
            delattr(cls, name)
    cls.__init__ = _make_init(cls, fields)  # type: ignore[method-assign]
    cls.__repr__ = __repr__  # type: ignore[method-assign]
    cls.__eq__ = __eq__  # type: ignore[method-assign]
    if frozen:
        cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign]
        cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign]
        cls.__hash__ = __hash__  # type: ignore[method-assign]
    else:
        cls.__hash__ = None  # type: ignore[assignment]
    cls.__record_fields__ = names  # type: ignore[attr-defined]
    return cls


@overload
@dataclass_transform(field_specifiers=(field,))
def dataclass(cls: type[T], /) -> type[T]: ...


@overload
@dataclass_transform(field_specifiers=(field,))
def dataclass(*, frozen: bool = False) -> Callable[[type[T]], type[T]]: ...  # noqa: F811 (overload)


def dataclass(cls: type[T] | None = None, /, *, frozen: bool = False) -> Any:  # noqa: F811
    if cls is None:
        return lambda klass: _build(klass, frozen)
    return _build(cls, frozen)


def fields(record: Any) -> tuple[str, ...]:
    """The field names of a record class or instance, in definition order."""
    klass = record if isinstance(record, type) else type(record)
    names: tuple[str, ...] | None = getattr(klass, "__record_fields__", None)
    if names is None:
        raise TypeError(f"{klass.__name__} is not a record (primus_runner.records.dataclass)")
    return names


def asdict(obj: Any) -> Any:
    names = getattr(type(obj), "__record_fields__", None)
    if names is not None:
        return {n: asdict(getattr(obj, n)) for n in names}
    if isinstance(obj, (list, tuple)):
        return type(obj)(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return {k: asdict(v) for k, v in obj.items()}
    return obj
