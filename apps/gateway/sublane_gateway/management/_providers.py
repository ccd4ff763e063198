"""``GET /api/providers``: the providers this gateway has adapters for, as the web views offer them.

The views take the provider choices, their labels, which can be signed in to and which credential
file an import takes from here, so a provider added to the gateway needs no change to them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from sublane_gateway._sessions import CurrentUser
from sublane_gateway.pipeline import client_runtime
from sublane_providers import SignsIn

router = APIRouter(tags=["accounts"])


@router.get("/api/providers")
def list_providers(request: Request, _user: CurrentUser) -> dict[str, Any]:
    """``{"items":[{"name","label","credential_file","sign_in","subject_label"}]}`` in the gateway's order."""
    adapters = client_runtime(request).adapters
    return {
        "items": [
            {
                "name": name,
                "label": adapter.label or name,
                "credential_file": adapter.credential_file,
                "sign_in": isinstance(adapter, SignsIn),
                "subject_label": adapter.subject_label,
            }
            for name, adapter in adapters.items()
        ]
    }
