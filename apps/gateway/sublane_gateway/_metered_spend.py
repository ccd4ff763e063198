"""The metered spend ledger wired to the history writer and to selection (PAID-3).

Which accounts are metered is the providers' knowledge (``sublane_providers.provider_billing``); the
ledger (``sublane_pricing.SpendLedger``) knows only a predicate, so it stays a package of its own
that knows ``sublane-core`` only.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Engine

from sublane_core import Billing, Clock, signals
from sublane_pricing import PriceBook, SpendLedger
from sublane_providers import provider_billing, provider_plugins


def metered_provider(provider: str) -> bool:
    """Whether ``provider``'s accounts are paid per token (PAID-2)."""
    return provider_billing(provider) is Billing.METERED


def any_metered_provider() -> bool:
    """Whether an installed provider bills per token: only then is metered spend recorded and kept
    fresh from other replicas (without one, nothing is ever metered)."""
    return any(plugin.billing is Billing.METERED for plugin in provider_plugins())


def spend_ledger(engine: Engine, clock: Clock, prices: PriceBook) -> SpendLedger:
    """The app's ledger: metered calls' cost per UTC month, group and member, and the caps."""
    return SpendLedger(engine, clock, prices, metered_provider)


def metered_only(
    record: Callable[[signals.RequestFinished], None],
) -> Callable[[signals.RequestFinished], None]:
    """``record`` for metered attempts only: with request records and usage summaries both off, the
    history writer still adds metered spend, and subscription calls cost nothing more than this test."""

    def receive(payload: signals.RequestFinished) -> None:
        provider = payload.provider
        if provider is not None and metered_provider(provider):
            record(payload)

    return receive
