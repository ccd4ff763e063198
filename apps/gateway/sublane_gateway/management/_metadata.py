"""Verification reads made for the management API count against workspace capacity (ADM-2).

Importing an account and completing an OAuth sign-in read the provider (the profile,
Antigravity's ``loadCodeAssist``/``onboardUser``): shared metadata reads, like model
discovery and quota reads. Each holds one place of the workspace while it runs and never a model
slot (ADM-10); over capacity the admin gets 429 ``workspace_busy`` with ``Retry-After``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import anyio.from_thread
from starlette.requests import Request

from sublane_gateway.pipeline import client_runtime, default_egress
from sublane_providers import use_egress

T = TypeVar("T")


@contextmanager
def metadata_read(request: Request) -> Iterator[None]:
    """Hold a workspace place for the block (from a route's worker thread)."""
    admission = client_runtime(request).scheduler.admission
    ticket = anyio.from_thread.run_sync(admission.enter_metadata)  # admission lives on the loop
    try:
        yield
    finally:
        anyio.from_thread.run_sync(ticket.close)


def through_workspace_egress(request: Request, call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call`` on the event loop (from a route's worker thread) through the workspace's egress
    (``SUBLANE_EGRESS_PROXY``, EGRESS-1): the reads made for an account that has no proxy of its
    own yet — an import's profile, a sign-in's code exchange."""
    egress = default_egress(client_runtime(request).settings)

    async def run() -> T:
        with use_egress(egress):
            return await call()

    return anyio.from_thread.run(run)
