"""``GET /api/providers``: the providers this gateway has adapters for, as the web views offer them;
``PUT /api/providers/{provider}/client-version``: the admin's pin of a provider's client version.

The views take the provider choices, their labels, which can be signed in to and which credential
file an import takes from here, so a provider added to the gateway needs no change to them; an
API-key provider (``billing`` ``metered``) also says what its import asks (``api_key``: the base URL
a key without one is served at, whether a base URL is required, whether models may be named). Each
provider with a client identity also shows its client versions (CLIENT-2): the effective one, the
one built in, the newest seen from a native client in the last 30 days and the pin.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter, Request

from sublane_core import SubLaneError
from sublane_gateway._sessions import AdminUser, CurrentUser, DbSession
from sublane_gateway.management._audit import audit
from sublane_gateway.management._models import ClientVersionBody
from sublane_gateway.pipeline import client_runtime
from sublane_providers import ProviderAdapter, SignsIn, TakesApiKeys, parse_version, provider_billing

router = APIRouter(tags=["accounts"])


@router.get("/api/providers")
def list_providers(request: Request, _user: CurrentUser) -> dict[str, Any]:
    """``{"items":[{"name","label","billing","credential_file","sign_in","subject_label","api_key",
    "client_version"}]}`` in the gateway's order; ``client_version`` is ``{"effective","built_in",
    "seen","pinned"}``, or ``null`` for a provider without a client identity; ``api_key`` (PAID-1)
    is ``{"default_base_url","base_url_required","models"}`` for an API-key provider, else ``null``."""
    runtime = client_runtime(request)
    versions = runtime.client_versions
    return {
        "items": [
            {
                "name": name,
                "label": adapter.label or name,
                "billing": provider_billing(name).value,  # PAID-2: subscription or metered
                "credential_file": adapter.credential_file,
                "sign_in": isinstance(adapter, SignsIn),
                "subject_label": adapter.subject_label,
                "api_key": _api_key_import(adapter),
                "client_version": (
                    versions.view(name) if versions is not None and name in versions.identities else None
                ),
            }
            for name, adapter in runtime.adapters.items()
        ]
    }


def _api_key_import(adapter: ProviderAdapter) -> dict[str, Any] | None:
    """PAID-1: what an API-key provider's import takes beyond the key, for the web's add form."""
    if not isinstance(adapter, TakesApiKeys):
        return None
    default = _without_user_info(adapter.default_base_url) if adapter.default_base_url else None
    return {"default_base_url": default, "base_url_required": default is None, "models": adapter.names_models}


def _without_user_info(url: str) -> str:
    """A configured base URL as members may see it: never a user or password (it is a setting)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@router.put("/api/providers/{provider}/client-version")
def pin_client_version(
    provider: str, body: ClientVersionBody, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Pin the client version SubLane presents to ``provider`` (``{"version": null}``: unpin).

    The effective version is the highest of the built-in, the seen and the pinned one (CLIENT-2).
    400 ``invalid_request`` for a version that is not ``MAJOR.MINOR.PATCH``; 404 for a provider
    without a client identity. Audited (``provider.client_version``); every replica applies it.
    """
    versions = client_runtime(request).client_versions
    if versions is None or provider not in versions.identities:
        raise SubLaneError("not_found", "No such provider.")
    if body.version is not None and parse_version(body.version) is None:
        raise SubLaneError("invalid_request", "version must be MAJOR.MINOR.PATCH, e.g. 0.172.0.")
    previous = versions.stage_pin(db, provider, body.version)
    audit(
        db,
        request,
        admin,
        "provider.client_version",
        provider=provider,
        pinned=body.version,
        previous=previous,
    )
    db.commit()
    versions.pinned(provider, body.version)
    return {"name": provider, "client_version": versions.view(provider)}
