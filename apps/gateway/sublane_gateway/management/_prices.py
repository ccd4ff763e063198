"""Model prices (COST-1): the built-in prices with the admins' overrides, listed and changed.

``PUT /api/prices/{model}`` sets an override (US dollars per million tokens), ``DELETE`` drops it so
the built-in price (if any) applies again; both are audited. A price change applies to calls
recorded from then on: a record keeps the cost it was written with (COST-2).
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request, Response
from sqlmodel import Session, select

from sublane_core import Account, SubLaneError, UsageDay
from sublane_gateway._sessions import AdminUser, CurrentUser, DbSession
from sublane_gateway._state import gateway_state
from sublane_gateway.management._audit import audit
from sublane_gateway.pipeline import client_runtime
from sublane_pricing import InvalidPrice, PriceBook

router = APIRouter(tags=["cost"])
MAX_BODY_FIELDS = 16


def price_book(request: Request) -> PriceBook:
    """The app's price book (made when it starts serving)."""
    book: PriceBook = request.app.state["prices"]
    return book


def _known_models(request: Request) -> set[str]:
    """The models SubLane knows of: every account's catalogue and every model in the summaries."""
    runtime = client_runtime(request)
    with Session(gateway_state(request).engine) as db:
        ids = [account_id for account_id in db.exec(select(Account.id)) if account_id is not None]
        used = set(db.exec(select(UsageDay.model).distinct()))
    models = {model for model in used if model and model != "other"}
    for account_id in ids:
        models.update(runtime.catalog.cached(account_id) or ())
    return models


@router.get("/api/prices")
async def list_prices(request: Request, _user: CurrentUser) -> dict[str, Any]:
    """Every model's prices in US dollars per million tokens: the admins' (``source: "admin"``) and
    the built-in ones of the models SubLane serves, with the price library's name, version and date."""
    book = price_book(request)
    models = await anyio.to_thread.run_sync(_known_models, request)
    items = await anyio.to_thread.run_sync(book.listing, sorted(models))
    source = book.source
    return {
        "items": [prices.view() for prices in items],
        "built_in": {"library": source.name, "version": source.version, "as_of": source.released},
    }


@router.put("/api/prices/{model:path}")
def set_price(
    model: str, body: dict[str, Any], request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Set ``model``'s prices (``input`` and ``output`` required; ``cached_input``,
    ``cache_write_5m``, ``cache_write_1h`` optional: the input price stands in for a missing one)."""
    if len(body) > MAX_BODY_FIELDS:
        raise SubLaneError("invalid_request", "The body must be a JSON object of prices.")
    book = price_book(request)
    try:
        values = book.validate(model, body)
    except InvalidPrice as exc:
        raise SubLaneError("invalid_request", str(exc)) from None
    prices = book.set(model, values)
    view = prices.view()
    audit(db, request, admin, "price.set", None, **{name: view[name] for name in ("model", *values)})
    db.commit()
    return view


@router.delete("/api/prices/{model:path}", status_code=204)
def delete_price(model: str, request: Request, admin: AdminUser, db: DbSession) -> Response:
    """Drop the admins' prices of ``model``: its built-in price, if any, applies again."""
    if not price_book(request).delete(model):
        raise SubLaneError("not_found", f"No admin price for {model!r}.")
    audit(db, request, admin, "price.delete", None, model=model)
    db.commit()
    return Response(status_code=204)
