"""The price book (COST-1): the built-in prices with the admins' overrides on top.

Overrides live in ``model_prices`` and are held in memory, read again at most every
:data:`RELOAD_S` seconds when asked (so a price set on another replica takes effect there within
that time) and at once on the replica that set it. The history writer thread asks it for every
record's cost; the management API lists and changes it. Swapping whole dictionaries keeps a reader
on another thread safe without a lock.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from sublane_core import Clock
from sublane_pricing._builtin import PriceSource, plain
from sublane_pricing._prices import PER_MILLION, CallTokens, ModelPrices, call_cost

_log = logging.getLogger("sublane.pricing")

RELOAD_S: Final = 5.0
PRICE_FIELDS: Final = ("input", "cached_input", "cache_write_5m", "cache_write_1h", "output")
REQUIRED_FIELDS: Final = ("input", "output")
#: No model costs more than this per million tokens: a larger number is a typing mistake.
MAX_PRICE: Final = Decimal(100_000)
MAX_MODEL_LENGTH: Final = 128
_PRICES: Final = SQLModel.metadata.tables["model_prices"]


_UNSEEN: Final = (-1.0, -1.0, -1.0, -1.0, -1.0)


def _per_token(prices: ModelPrices | None) -> tuple[float, float, float, float, float] | None:
    """A model's prices in dollars per token, each missing cache price replaced by the input's."""
    if prices is None:
        return None
    base = prices.input

    def rate(value: Decimal | None) -> float:
        return float((value if value is not None else base) / PER_MILLION)

    return (
        rate(base),
        rate(prices.cached_input),
        rate(prices.cache_write_5m),
        rate(prices.cache_write_1h),
        rate(prices.output),
    )


class InvalidPrice(ValueError):
    """A price an admin gave that cannot be used (the API answers 400 with its message)."""


def _date(moment: float) -> str:
    return dt.datetime.fromtimestamp(moment, dt.UTC).date().isoformat()


def _stored(value: object) -> Decimal | None:
    """A stored price (a float column) as the decimal it was given as."""
    return None if value is None else plain(Decimal(str(value)))


def _decimal(value: object, name: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidPrice(f"{name} must be a number of US dollars per million tokens")
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise InvalidPrice(f"{name} must be a number of US dollars per million tokens") from None
    if not number.is_finite() or number < 0 or number > MAX_PRICE:
        raise InvalidPrice(f"{name} must be between 0 and {MAX_PRICE}")
    return plain(number)


class PriceBook:
    """Prices by model: an admin's override, else the built-in source's, else none (unpriced)."""

    def __init__(
        self, engine: Engine, clock: Clock, source: PriceSource, *, reload_s: float = RELOAD_S
    ) -> None:
        self._engine = engine
        self._clock = clock
        self.source = source
        self._reload_s = reload_s
        self._overrides: dict[str, ModelPrices] = {}
        self._loaded_at: float | None = None
        #: Per model, its prices as floats per token (or ``None``: unpriced), for :meth:`cost_usd`;
        #: replaced whole when the overrides are read again.
        self._rates: dict[str, tuple[float, float, float, float, float] | None] = {}

    # -- reading ---------------------------------------------------------------------------------

    def prices(self, model: str, *, reload: bool = True) -> ModelPrices | None:
        """The prices of ``model`` now, or ``None`` when it is unpriced. ``reload=False``: from
        memory only (never a database read), as the overrides were last read."""
        if reload:
            self._fresh()
        found = self._overrides.get(model)
        return found if found is not None else self.source.prices(model)

    def cost(self, model: str, tokens: CallTokens, *, reload: bool = True) -> Decimal | None:
        """The API-equivalent cost of a call, or ``None`` when ``model`` is unpriced."""
        prices = self.prices(model, reload=reload)
        return None if prices is None else call_cost(prices, tokens)

    def cost_usd(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached: int = 0,
        written: int = 0,
        written_1h: int = 0,
        *,
        reload: bool = True,
    ) -> float | None:
        """:meth:`cost` in floats, to a billionth of a dollar: what records and budgets use, once per
        call (a few float operations after the first call of a model)."""
        if reload:
            self._fresh()
        rates = self._rates
        rate = rates.get(model, _UNSEEN)
        if rate is _UNSEEN:
            rate = rates[model] = _per_token(self.prices(model, reload=False))
        if rate is None:
            return None
        fresh_in, cached_in, write_5m, write_1h, out = rate
        if not (cached or written) and input_tokens >= 0 and output_tokens >= 0:  # the usual call
            return round(input_tokens * fresh_in + output_tokens * out, 9)
        total = max(input_tokens, 0)
        cached = min(max(cached, 0), total)
        written = min(max(written, 0), total - cached)
        hour = min(max(written_1h, 0), written)
        return round(
            (total - cached - written) * fresh_in
            + cached * cached_in
            + (written - hour) * write_5m
            + hour * write_1h
            + max(output_tokens, 0) * out,
            9,
        )

    def keep_fresh(self) -> None:
        """Read the overrides again if they are older than ``reload_s`` (blocking): a background
        reader's call, so a price set on another replica reaches this one's memory-only answers."""
        self._fresh()

    def warm(self) -> None:
        """Read the overrides and load the built-in price data now (blocking), so the first priced
        call pays for neither. Without it the data is read by the first price asked of the source:
        the gateway warms the book only where calls are priced on the request path (issue #49)."""
        self._fresh()
        self.source.prices("gpt-5")

    def listing(self, models: Iterable[str]) -> list[ModelPrices]:
        """Every overridden model and each of ``models`` that has a price, by model name."""
        self._fresh()
        found: dict[str, ModelPrices] = dict(self._overrides)
        for model in models:
            if model not in found:
                prices = self.source.prices(model)
                if prices is not None:
                    found[model] = prices
        return [found[name] for name in sorted(found)]

    # -- changing --------------------------------------------------------------------------------

    def validate(self, model: str, body: Mapping[str, object]) -> dict[str, Decimal | None]:
        """The prices of a ``PUT`` body, checked; raises :class:`InvalidPrice`."""
        if not model or len(model) > MAX_MODEL_LENGTH or model != model.strip():
            raise InvalidPrice(f"model must be a name of 1 to {MAX_MODEL_LENGTH} characters")
        unknown = sorted(set(body) - set(PRICE_FIELDS))
        if unknown:
            raise InvalidPrice(f"unknown field: {unknown[0]}")
        values: dict[str, Decimal | None] = {}
        for name in PRICE_FIELDS:
            value = body.get(name)
            if value is None:
                if name in REQUIRED_FIELDS:
                    raise InvalidPrice(f"{name} is required")
                values[name] = None
            else:
                values[name] = _decimal(value, name)
        return values

    def set(self, model: str, values: Mapping[str, Decimal | None]) -> ModelPrices:
        """Store an override (from :meth:`validate`) and use it at once."""
        now = self._clock.time()
        row = {name: (None if values[name] is None else float(values[name])) for name in PRICE_FIELDS}  # type: ignore[arg-type]
        with self._engine.begin() as connection:
            connection.execute(sa.delete(_PRICES).where(_PRICES.c.model == model))
            connection.execute(sa.insert(_PRICES).values(model=model, updated_at=now, **row))
        self.reload()
        return self._overrides[model]

    def delete(self, model: str) -> bool:
        """Drop an override (the built-in price, if any, applies again); whether there was one."""
        with self._engine.begin() as connection:
            gone = connection.execute(sa.delete(_PRICES).where(_PRICES.c.model == model)).rowcount
        self.reload()
        return bool(gone)

    def reload(self) -> None:
        """Read the overrides from the database now."""
        with self._engine.connect() as connection:
            rows = connection.execute(sa.select(_PRICES)).mappings().all()
        overrides: dict[str, ModelPrices] = {}
        for row in rows:
            found = {name: _stored(row[name]) for name in PRICE_FIELDS}
            overrides[str(row["model"])] = ModelPrices(
                model=str(row["model"]),
                input=found["input"] or Decimal(0),
                output=found["output"] or Decimal(0),
                cached_input=found["cached_input"],
                cache_write_5m=found["cache_write_5m"],
                cache_write_1h=found["cache_write_1h"],
                source="admin",
                as_of=_date(float(row["updated_at"])),
            )
        self._overrides = overrides
        self._rates = {}
        self._loaded_at = self._clock.monotonic()

    def _fresh(self) -> None:
        loaded = self._loaded_at
        if loaded is None or self._clock.monotonic() - loaded >= self._reload_s:
            try:
                self.reload()
            except sa.exc.SQLAlchemyError as exc:  # keep the prices known so far; try again later
                self._loaded_at = self._clock.monotonic()
                _log.warning("could not read the model prices: %s", type(exc).__name__)
