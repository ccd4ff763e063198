"""EGRESS-3: check one account's connectivity through its egress without spending a model call.

``POST /api/accounts/{id}/check`` gets the account's credentials (refreshing them when due: that is
what "the token is valid" means) and makes one bounded quota read through the account's egress —
every provider has one — under the metadata admission rules (ADM-2: a workspace place, never a
model slot). It clears nothing — not even an earlier egress error: only a served call does that — and
records nothing but an egress failure in the runtime view. A proxy's failure is told from the
provider's (EGRESS-2): an HTTP proxy answers a forwarded plain-http call itself, so a refusal or a
timeout through one is checked with a tunnel to the same host.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from sqlmodel import Session

from sublane_core import Account, SubLaneError
from sublane_gateway._sessions import AdminUser
from sublane_gateway._state import gateway_state
from sublane_gateway.management._models import PathId
from sublane_gateway.pipeline import ClientRuntime, client_runtime
from sublane_providers import EgressFailed, UpstreamConnectError, UpstreamTimeout, use_egress

router = APIRouter(tags=["scheduling"])


def _problem(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


async def _read(runtime: ClientRuntime, account: Account) -> tuple[str | None, dict[str, str] | None]:
    """The egress the check used and what went wrong (``None``: nothing)."""
    import httpx  # here, not at import: a default start checks no account (issue #49)

    assert account.id is not None
    timeout = float(runtime.settings.metadata_timeout_s)
    try:
        credentials = await runtime.vault.get(account.id, account.provider, margin=timeout)
    except SubLaneError as error:  # reauth_required, account_refresh_failed (CRED)
        return runtime.vault.egress_of(account.id), _problem(error.code, error.message)
    except (KeyError, TypeError, ValueError) as exc:  # a stored bundle of a shape the provider never made
        return runtime.vault.egress_of(account.id), _unusable(exc)
    egress = credentials.egress
    try:
        with use_egress(egress):
            async with asyncio.timeout(timeout + 1):  # httpx's own timeouts come first: they tell the URL
                await runtime.adapters[account.provider].read_quota(credentials.bundle, runtime.clock.time())
    except (EgressFailed, httpx.ProxyError) as exc:
        return egress, _egress_failed(runtime, account.id, exc)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        if egress is not None:  # with a proxy, the connection that failed is the one to the proxy
            return egress, _egress_failed(runtime, account.id, exc)
        return egress, _problem("upstream_error", "The provider could not be reached.")
    except httpx.HTTPStatusError as exc:
        status = exc.response.status_code
        if egress is not None and await _proxy_failed(runtime, str(exc.request.url), egress):
            # a plain-http call through an HTTP proxy is answered by the proxy itself when it
            # refuses the password (tinyproxy says 401): the tunnel tells whose answer it was
            return egress, _egress_failed(runtime, account.id, exc)
        if status in (401, 403):
            return egress, _problem(
                "upstream_unauthorized", f"The provider refused the account's token ({status})."
            )
        return egress, _problem("upstream_error", f"The provider answered {status}.")
    except (TimeoutError, httpx.TimeoutException) as exc:
        url = str(exc.request.url) if isinstance(exc, httpx.TimeoutException) else None
        if egress is not None and url is not None and await _proxy_failed(runtime, url, egress):
            return egress, _egress_failed(runtime, account.id, exc)
        return egress, _problem("upstream_timeout", "The provider did not answer in time.")
    except (httpx.InvalidURL, UnicodeError, OSError, httpx.TransportError) as exc:
        if egress is not None:  # a proxy address no client can use (a bad name, not an address)
            return egress, _egress_failed(runtime, account.id, exc)
        return egress, _problem(
            "upstream_error", f"The provider could not be reached ({type(exc).__name__})."
        )
    except (httpx.HTTPError, ValueError) as exc:
        return egress, _problem(
            "upstream_error", f"The provider's answer was not usable ({type(exc).__name__})."
        )
    except (KeyError, TypeError) as exc:  # the stored bundle lacks what the provider needs
        return egress, _unusable(exc)
    return egress, None  # EGRESS-3: clears nothing, the egress error included


def _unusable(exc: Exception) -> dict[str, str]:
    return _problem(
        "invalid_credentials",
        f"The account's stored credentials are not usable ({type(exc).__name__}); re-authorize it.",
    )


async def _proxy_failed(runtime: ClientRuntime, url: str, egress: str) -> bool:
    """Whether the proxy ``egress`` fails to open a tunnel to ``url``'s host (EGRESS-2)."""
    if egress.startswith("socks"):
        return False  # a SOCKS proxy never answers for the upstream: its refusals are errors already
    try:
        await runtime.http.probe_egress(url, egress)
    except EgressFailed:
        return True
    except (UpstreamConnectError, UpstreamTimeout):
        pass  # the proxy opened the way: what failed is beyond it
    return False


def _egress_failed(runtime: ClientRuntime, account_id: int, exc: Exception) -> dict[str, str]:
    runtime.egress_failed(account_id, type(exc).__name__)
    error = SubLaneError("egress_proxy_failed")
    return _problem(error.code, error.message)


@router.post("/api/accounts/{account_id}/check")
async def check_account(account_id: PathId, request: Request, _admin: AdminUser) -> dict[str, Any]:
    """One bounded metadata call through the account's egress →
    ``{"ok","latency_ms","egress","auth_state","error"}``."""
    runtime = client_runtime(request)
    engine = gateway_state(request).engine

    def load() -> Account | None:
        with Session(engine, expire_on_commit=False) as db:
            return db.get(Account, account_id)

    account = await anyio.to_thread.run_sync(load)
    if account is None:
        raise SubLaneError("not_found", f"No account with id {account_id}.")
    if account.provider not in runtime.adapters:
        raise SubLaneError("invalid_request", f"No adapter for {account.provider!r} is installed.")
    ticket = runtime.scheduler.admission.enter_metadata()  # ADM-2: 429 workspace_busy when full
    started = time.perf_counter()
    try:
        egress, error = await _read(runtime, account)
    finally:
        ticket.close()
    reauth = account.auth_state == "reauth_required" or runtime.vault.needs_reauth(account_id)
    return {
        "ok": error is None,
        "latency_ms": round((time.perf_counter() - started) * 1000),
        "egress": "proxy" if egress is not None else "direct",
        "auth_state": "reauth_required" if reauth else account.auth_state,
        "error": error,
    }
