"""What the pipeline asks of the translation matrix: bodies per upstream protocol, and which
providers of the key's group list the model at all (so a body is translated only for providers
that could serve it, and a refusal only stands when no provider is left, XLAT-3)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from sublane_core import Dialect, SubLaneError, UpstreamOperation, WireProtocol, immutable
from sublane_gateway.pipeline._keys import Principal
from sublane_gateway.pipeline._runtime import ClientRuntime
from sublane_protocols import HubTranslator
from sublane_providers import ProviderAdapter

#: What a translated body depends on: the upstream's protocol and its dialect.
UpstreamShape = tuple[WireProtocol, Dialect]


def upstream_shape(adapter: ProviderAdapter) -> UpstreamShape:
    """The shape bodies for ``adapter`` take: equal shapes share one translated body."""
    return adapter.protocol, adapter.dialect


@immutable
class UpstreamBody:
    """The body for one upstream protocol, and ``hub``: the client's body in the hub's form when it
    was translated (the relay translates the answer with it). ``body is None``: a token count this
    upstream cannot do, answered with an estimate from ``hub``."""

    body: dict[str, Any] | None
    hub: dict[str, Any] | None = None


def upstream_body(
    translator: HubTranslator | None, body: dict[str, Any], operation: UpstreamOperation, dialect: Dialect
) -> UpstreamBody:
    """The client's ``body`` for an upstream of ``dialect`` (``translator is None``: the same
    protocol, which the adapter prepares itself)."""
    if translator is None:
        return UpstreamBody(body)
    if operation is UpstreamOperation.COUNT_TOKENS:
        hub, counted = translator.count_request(body, dialect)
        return UpstreamBody(None if counted is None else dict(counted, model=body["model"]), hub)
    hub, upstream = translator.translate(body, dialect)
    return UpstreamBody(dict(upstream, model=body["model"]), hub)


@dataclass(frozen=True, slots=True)
class ListingFailure:
    """No account is known to list the model because catalogues could not be read: ``error`` is the
    answer; ``account_id``/``provider`` name the account whose own trouble it is, when one is."""

    error: SubLaneError
    account_id: int | None = None
    provider: str | None = None


async def providers_listing(
    runtime: ClientRuntime, principal: Principal, model: str, providers: tuple[str, ...]
) -> tuple[str, ...] | ListingFailure:
    """The ``providers`` that have an account in the key's group listing ``model`` (CAT-3/4).

    Order is kept. Only the group's enabled, authorized accounts count; the scheduler checks the
    rest of eligibility (AFF-8) afterwards.
    """
    await runtime.directory.refresh()
    accounts = [
        account
        for account in runtime.directory.of_group(principal.group_id)
        if account.provider in providers and account.enabled and account.auth_ok
    ]
    catalog = runtime.catalog
    lists = [catalog.ready(account.id, account.provider) for account in accounts]  # warm: no task
    if None in lists:  # unknown or over-age catalogues: discovered now, concurrently (CAT-4)
        missing = [index for index, found in enumerate(lists) if found is None]
        found = await asyncio.gather(
            *(catalog.lookup(accounts[index].id, accounts[index].provider) for index in missing)
        )
        for index, entry in zip(missing, found, strict=True):
            lists[index] = entry
    listed: set[str] = set()
    unknown = False
    failure: ListingFailure | None = None
    for account, entry in zip(accounts, lists, strict=True):
        if entry is None:
            unknown = True
            error = runtime.catalog.failure(account.id)
            if failure is None and error is not None:
                failure = ListingFailure(error, account.id, account.provider)
        elif model in entry:
            listed.add(account.provider)
    if not listed and unknown:
        if failure is not None:  # e.g. the credentials could not be refreshed: that is the answer
            return failure
        return ListingFailure(
            SubLaneError(
                "model_catalog_unavailable",
                "The model catalogue of the group's accounts could not be read; try again shortly.",
                retry_after=runtime.catalog.retry_after_s,
            )
        )
    if len(listed) == 1:  # the usual case: one provider lists it, and no order to keep
        return tuple(listed)
    return tuple(name for name in providers if name in listed)
