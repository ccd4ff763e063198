"""``immutable``: a frozen dataclass to the type checker and in behaviour, without its per-field cost."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest
from mypy import api as mypy_api

from sublane_core import _immutable, immutable


@immutable(kw_only=True)
class Window:
    name: str
    limits: tuple[int, ...] = dataclasses.field(default_factory=tuple)


@immutable
class Pair:
    left: int
    right: str = "r"


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenPair:
    left: int
    right: str = "r"


def test_immutable_compares_hashes_and_prints_like_a_frozen_dataclass() -> None:
    assert Pair(1) == Pair(1, "r") and Pair(1) != Pair(2)
    assert hash(Pair(1, "x")) == hash(FrozenPair(1, "x"))  # by the fields, as frozen=True hashes
    assert {Pair(1), Pair(1)} == {Pair(1)}
    assert repr(Pair(1)) == "Pair(left=1, right='r')"
    assert Window(name="a") == Window(name="a", limits=())
    assert dataclasses.replace(Window(name="a"), limits=(1,)) == Window(name="a", limits=(1,))
    assert dataclasses.is_dataclass(Window) and not hasattr(Pair(1), "__dict__")  # slotted


def test_immutable_keyword_only_when_asked() -> None:
    with pytest.raises(TypeError):
        Window("a")  # type: ignore[misc]
    assert Pair(1, "x").right == "x"


def test_immutable_fields_are_read_only_for_the_type_checker(tmp_path: Path) -> None:
    # The decorator's own source beside the snippet: mypy then reads it alone, in seconds, instead of
    # all of sublane_core and what it imports.
    (tmp_path / "immutable_source.py").write_text(Path(_immutable.__file__).read_text())
    source = tmp_path / "uses_immutable.py"
    source.write_text(
        textwrap.dedent(
            """
            from immutable_source import immutable

            @immutable
            class Pair:
                left: int

            @immutable(kw_only=True)
            class Named:
                name: str

            Pair(1).left = 2
            Named(name="a").name = "b"
            Named("a")
            """
        )
    )
    out, _, status = mypy_api.run(["--strict", "--no-incremental", str(source)])
    assert status == 1
    assert 'Property "left" defined in "Pair" is read-only' in out
    assert 'Property "name" defined in "Named" is read-only' in out
    assert 'Too many positional arguments for "Named"' in out
