"""A small stand-in for ``dataclasses`` on the launch path.

``import dataclasses`` pulls in ``inspect`` and costs 10-20 ms per Python
start; the launch path starts Python twice per launch with a 0.15 s budget
(SPEC section 10). This module covers what the launch-path modules use:
``@dataclass`` (generated ``__init__`` from the class annotations, defaults and
``field(default_factory=...)``; ``__repr__``; ``__eq__``) and ``asdict``
(recursive over records, lists, tuples and dicts). Nothing else.
"""
from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs ~8 ms of every launch
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
else:  # the decorator only tells the type checker that @dataclass below works like the stdlib's

    def dataclass_transform(**_kwargs: object) -> Callable[[T], T]:
        return lambda function: function


_MISSING = object()


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


@dataclass_transform(field_specifiers=(field,))
def dataclass(cls: type[T]) -> type[T]:
    fields = _fields_of(cls)
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

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{cls.__name__}({inner})"

    def __eq__(self: Any, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in names)

    for name, default in fields:
        if isinstance(default, _Field):
            delattr(cls, name)
    cls.__init__ = __init__  # type: ignore[method-assign]
    cls.__repr__ = __repr__  # type: ignore[method-assign]
    cls.__eq__ = __eq__  # type: ignore[method-assign]
    cls.__hash__ = None  # type: ignore[assignment]
    cls.__record_fields__ = tuple(names)  # type: ignore[attr-defined]
    return cls


def asdict(obj: Any) -> Any:
    names = getattr(type(obj), "__record_fields__", None)
    if names is not None:
        return {n: asdict(getattr(obj, n)) for n in names}
    if isinstance(obj, (list, tuple)):
        return type(obj)(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return {k: asdict(v) for k, v in obj.items()}
    return obj
