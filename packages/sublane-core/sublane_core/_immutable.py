"""Frozen dataclasses for the values a model request makes by the dozen (issue #19).

``@dataclass(frozen=True)`` stores each field with ``object.__setattr__`` from its ``__init__``:
a call per field, 4.9 µs for the 19 fields of a :class:`~sublane_core.signals.RequestFinished`
against 1.3 µs for a plain slotted dataclass on the bench machine, and a request builds ten such
values. :func:`immutable` makes the plain one and tells the type checker it is frozen
(``dataclass_transform(frozen_default=True)``): ``mypy --strict`` refuses any assignment to a
field, as it does for a frozen dataclass; equality, hashing (by the fields), ``repr`` and
``dataclasses.replace`` are a frozen dataclass's. Only Python's own run-time refusal is gone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, overload

from typing_extensions import dataclass_transform

_T = TypeVar("_T")


@overload
def immutable(cls: type[_T], /) -> type[_T]: ...


@overload
def immutable(*, kw_only: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def immutable(cls: type[_T] | None = None, /, *, kw_only: bool = False) -> Any:
    """``@dataclass(frozen=True, slots=True)`` to the type checker, without its per-field cost."""

    def make(target: type[_T]) -> type[_T]:
        return dataclasses.dataclass(target, slots=True, kw_only=kw_only, unsafe_hash=True)

    return make if cls is None else make(cls)
