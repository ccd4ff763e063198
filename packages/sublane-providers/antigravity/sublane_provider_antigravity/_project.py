"""Finding (or provisioning) an account's Code Assist project (PROTOCOLS §3.5, GEM-1).

``:loadCodeAssist`` names the project when the account has one; otherwise ``:onboardUser`` with the
default tier provisions it, as a long-running operation polled until ``done``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from sublane_provider_antigravity._request import upstream_headers
from sublane_providers import MetadataHttp

ONBOARD_POLLS = 5
ONBOARD_POLL_S = 2.0
_METADATA = {"ideType": "ANTIGRAVITY", "platform": "PLATFORM_UNSPECIFIED", "pluginType": "GEMINI"}


class ProjectUnavailable(Exception):
    """The account has no project and none could be provisioned."""


def _project_id(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return value[:256]
    if isinstance(value, dict) and isinstance(value.get("id"), str) and value["id"]:
        return str(value["id"])[:256]
    return None


def _default_tier(payload: Mapping[str, Any]) -> str:
    tiers = payload.get("allowedTiers")
    for tier in tiers if isinstance(tiers, list) else ():
        if isinstance(tier, dict) and tier.get("isDefault") and isinstance(tier.get("id"), str):
            return str(tier["id"])
    current = payload.get("currentTier")
    if isinstance(current, dict) and isinstance(current.get("id"), str):
        return str(current["id"])
    return "free-tier"


async def _post(
    http: MetadataHttp,
    url: str,
    token: str,
    body: dict[str, Any],
    timeout_s: float,
    identity: Mapping[str, str] | None,
) -> Any:
    headers = upstream_headers(token, accept="application/json", identity=identity)
    response = await http.post(url, json=body, headers=headers, timeout=timeout_s)
    response.raise_for_status()
    return response.json()


async def discover_project(
    http: MetadataHttp,
    host: str,
    token: str,
    *,
    timeout_s: float,
    poll_s: float = ONBOARD_POLL_S,
    identity: Mapping[str, str] | None = None,
) -> tuple[str, str | None]:
    """``(project id, tier)`` of the account, onboarding it when it has none (``identity``: the
    client identity headers to send, CLIENT-1)."""
    loaded = await _post(
        http, f"{host}/v1internal:loadCodeAssist", token, {"metadata": _METADATA}, timeout_s, identity
    )
    if not isinstance(loaded, dict):
        raise ProjectUnavailable("loadCodeAssist answered something other than an object")
    tier = _default_tier(loaded)
    project = _project_id(loaded.get("cloudaicompanionProject"))
    if project is not None:
        return project, tier
    body = {"tier_id": tier, "metadata": _METADATA}
    for attempt in range(ONBOARD_POLLS):
        operation = await _post(http, f"{host}/v1internal:onboardUser", token, body, timeout_s, identity)
        if isinstance(operation, dict) and operation.get("done") is True:
            response = operation.get("response")
            project = _project_id(
                response.get("cloudaicompanionProject") if isinstance(response, dict) else None
            )
            if project is None:
                break
            return project, tier
        if attempt + 1 < ONBOARD_POLLS:
            await asyncio.sleep(poll_s)
    raise ProjectUnavailable("onboardUser gave no project")
