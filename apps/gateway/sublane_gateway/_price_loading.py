"""When the price book's built-in data is read (issue #49: about 6 MB resident once loaded).

Most priced calls are priced by the history writer thread, off the request's path (COST-2): there
the first record pays for reading the data, and a default start does not hold it. Two things price
a call on the request path, from memory: PAID-3's spend check when a metered account would serve
it (``SpendLedger.blocked``, the 400 ``unpriced_model``) and COST-5's dollar budgets as a member's
call ends. A deployment with either has the data read before it needs it: at start when the
database already holds a metered account or a dollar rule, else in a background thread as soon as
one is added through this replica's API (an account changed, a member's budget rules set). A call
that comes first anyway (or on another replica, which is told of the change but does not check it
here) waits for that one load: the book's source loads once, whichever thread asks first.
"""

from __future__ import annotations

import logging
import threading

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from sublane_core import Billing
from sublane_pricing import PriceBook
from sublane_providers import provider_plugins

_log = logging.getLogger("sublane.pricing")


def priced_on_the_request_path(engine: Engine) -> bool:
    """Whether the database holds an account of a metered provider or a dollar budget rule."""
    tables = SQLModel.metadata.tables
    accounts, budgets = tables["accounts"], tables["token_budgets"]
    metered = [plugin.name for plugin in provider_plugins() if plugin.billing is Billing.METERED]
    with engine.connect() as connection:
        if metered:
            found = sa.select(accounts.c.id).where(accounts.c.provider.in_(metered)).limit(1)
            if connection.execute(found).first() is not None:
                return True
        dollars = sa.select(budgets.c.id).where(budgets.c.unit == "usd").limit(1)
        return connection.execute(dollars).first() is not None


class PriceLoading:
    """Reads the book's data when the request path may need it (see the module's docstring)."""

    def __init__(self, book: PriceBook, engine: Engine) -> None:
        self._book = book
        self._engine = engine
        self._lock = threading.Lock()
        self._loaded = False
        self._checking = False
        self._again = False

    def at_start(self) -> bool:
        """Read the admins' prices, and the built-in data if the request path may need it now
        (blocking: before the first call); whether the data was read."""
        self._book.keep_fresh()
        if priced_on_the_request_path(self._engine):
            self._book.warm()
            self._loaded = True
        return self._loaded

    def changed(self, _payload: object = None) -> None:
        """Something that may price calls on the request path was added (an account, budget
        rules): check, and read the data if so, in a background thread (never blocking)."""
        if self._loaded:
            return
        with self._lock:
            if self._checking:  # the running check reads the database again once it is done
                self._again = True
                return
            self._checking = True
        threading.Thread(target=self._check, name="sublane-price-data", daemon=True).start()

    def _check(self) -> None:
        again = True
        while again:
            try:
                if priced_on_the_request_path(self._engine):
                    self._book.warm()
                    self._loaded = True
            except sa.exc.SQLAlchemyError as exc:  # the first priced call reads the data instead
                _log.warning("could not check whether prices are needed: %s", type(exc).__name__)
            with self._lock:  # a change told while this one ran is checked again
                again, self._again = self._again and not self._loaded, False
                if not again:
                    self._checking = False
