"""Verification reads made for the management API count against workspace capacity (ADM-2).

Importing an account and completing an OAuth sign-in read the provider (the profile,
Antigravity's ``loadCodeAssist``/``onboardUser``): shared metadata reads, like model
discovery and quota reads. Each holds one place of the workspace while it runs and never a model
slot (ADM-10); over capacity the admin gets 429 ``workspace_busy`` with ``Retry-After``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio.from_thread
from starlette.requests import Request

from sublane_gateway.pipeline import client_runtime


@contextmanager
def metadata_read(request: Request) -> Iterator[None]:
    """Hold a workspace place for the block (from a route's worker thread)."""
    admission = client_runtime(request).scheduler.admission
    ticket = anyio.from_thread.run_sync(admission.enter_metadata)  # admission lives on the loop
    try:
        yield
    finally:
        anyio.from_thread.run_sync(ticket.close)
