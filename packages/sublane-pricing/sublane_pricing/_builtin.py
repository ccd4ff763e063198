"""Built-in prices from the `genai-prices` library (pydantic/genai-prices, MIT), read through its
public ``calc_price`` only: this module is the one place that knows the library, so it can change.

The library and its price data (1.6 MB of source, about 6 MB once loaded) are read at the first
price asked (:meth:`GenaiPrices.load`, once, whichever thread asks first; the others wait for it),
not at import: a gateway whose calls are never priced on the request path keeps them out of memory
until its history writer prices the first record (issue #49).

The library answers the price of a usage, not a price list, so a model's per-million prices are read
as the price of 1,000 tokens of each kind × 1,000: small enough to stay in the first tier where a
model's price rises with the prompt's length (the SPEC's formula has one price per kind).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from contextlib import suppress
from decimal import Decimal
from importlib.metadata import PackageNotFoundError, version
from typing import Final, Protocol

from sublane_pricing._prices import ModelPrices

_PROBE: Final = 1_000
_SCALE: Final = Decimal(1_000_000 // _PROBE)
#: When each release of the library was published (PyPI), shown as the built-in prices' date.
RELEASE_DATES: Final = {"0.2.3": "2026-11-10"}


#: Effort suffixes some upstreams put on a model's name (Antigravity's ``gemini-3-pro-high``); the
#: price list knows the model without them, often only as its ``-preview``.
_EFFORT_SUFFIXES: Final = ("-high", "-low", "-medium", "-minimal", "-thinking")


def model_names(model: str) -> list[str]:
    """The names to look ``model`` up by, in order: itself, then without an effort suffix, then
    either with ``-preview``."""
    names = [model]
    base = model
    for suffix in _EFFORT_SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            names.append(base)
            break
    if not base.endswith("-preview"):
        names.append(f"{base}-preview")
    return names


def plain(value: Decimal) -> Decimal:
    """``value`` without trailing zeros and without an exponent (``30``, not ``3E+1``)."""
    normal = value.normalize()
    return normal.quantize(Decimal(1)) if normal.as_tuple().exponent > 0 else normal  # type: ignore[operator]


class PriceSource(Protocol):
    """Where built-in prices come from: a name, its version and date, and a model's prices."""

    name: str
    version: str | None
    released: str | None

    def prices(self, model: str) -> ModelPrices | None:
        """The model's prices, or ``None`` when the source does not know it (unpriced)."""
        ...


class GenaiPrices:
    """:class:`PriceSource` over ``genai-prices``; remembers each model's answer (prices or none)."""

    name = "genai-prices"

    def __init__(self) -> None:
        try:
            self.version: str | None = version("genai-prices")
        except PackageNotFoundError:  # pragma: no cover - a declared dependency
            self.version = None
        self.released: str | None = RELEASE_DATES.get(self.version or "")
        self._known: dict[str, ModelPrices | None] = {}
        self._loading = threading.Lock()
        #: ``price(model, **usage)`` over the library once :meth:`load` has read it.
        self._price: Callable[..., Decimal] | None = None

    @property
    def loaded(self) -> bool:
        """Whether the library and its price data are in memory."""
        return self._price is not None

    def load(self) -> None:
        """Import the library and read its price data now (blocking), unless done already. Safe from
        any thread: one loads, a thread that asks meanwhile waits for that load and uses it."""
        if self._price is not None:
            return
        with self._loading:
            if self.loaded:  # another thread loaded it while this one waited
                return
            from genai_prices import Usage, calc_price

            def price(model: str, **usage: int) -> Decimal:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return calc_price(Usage(**usage), model).total_price * _SCALE

            with suppress(LookupError):  # the library reads its data at its first lookup: here, once
                price("gpt-5", input_tokens=_PROBE)
            self._price = price

    def prices(self, model: str) -> ModelPrices | None:
        if model in self._known:
            return self._known[model]
        found = self._read(model)
        if len(self._known) >= 4096:
            self._known.clear()
        self._known[model] = found
        return found

    def _read(self, model: str) -> ModelPrices | None:
        for name in model_names(model):
            found = self._read_one(name)
            if found is not None:
                return ModelPrices(
                    model=model,
                    input=found.input,
                    output=found.output,
                    cached_input=found.cached_input,
                    cache_write_5m=found.cache_write_5m,
                    cache_write_1h=found.cache_write_1h,
                    source="built-in",
                    as_of=self.released,
                )
        return None

    def _read_one(self, model: str) -> ModelPrices | None:
        self.load()
        read = self._price
        assert read is not None

        def price(**usage: int) -> Decimal:
            return read(model, **usage)

        try:
            base = price(input_tokens=_PROBE)
            output = price(output_tokens=_PROBE)
        except LookupError:
            return None
        try:
            cached = price(input_tokens=_PROBE, cache_read_tokens=_PROBE)
            write_5m = price(input_tokens=_PROBE, cache_write_tokens=_PROBE)
            write_1h = price(input_tokens=_PROBE, cache_write_tokens=_PROBE, cache_write_1h_tokens=_PROBE)
        except (LookupError, ValueError):
            cached = write_5m = write_1h = base
        if base <= 0 and output <= 0:
            return None  # a model listed without prices is unpriced, not free
        return ModelPrices(
            model=model,
            input=plain(base),
            output=plain(output),
            cached_input=plain(cached),
            cache_write_5m=plain(write_5m),
            cache_write_1h=plain(write_1h),
            source="built-in",
            as_of=self.released,
        )
