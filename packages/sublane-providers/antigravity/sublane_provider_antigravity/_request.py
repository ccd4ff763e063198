"""Building ``v1internal`` requests from a Gemini ``generateContent`` body (PROTOCOLS §3.2, §3.3).

The client's Gemini request goes upstream inside the Antigravity wrapper, untouched but for what
the wrapper owns: ``project``, ``model``, ``userAgent``, ``requestType``, ``requestId``, and the
``sessionId`` that keys the upstream cache — derived from the conversation key when the call has
one (stable across its turns), random otherwise (AFF-2).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from sublane_core import new_uuid
from sublane_provider_antigravity._identity import API_CLIENT, BUILT_IN_VERSION, CLIENT_METADATA

USER_AGENT = f"antigravity/{BUILT_IN_VERSION} linux/amd64"
# Fields of the Gemini request the wrapper carries itself, or the upstream refuses.
_DROPPED = ("model", "safetySettings")


def session_id(conversation_key: str | None) -> str:
    """A negative decimal id, as Antigravity clients send: stable per conversation key."""
    if conversation_key is None:
        return "-" + str(int(new_uuid().replace("-", ""), 16) % 10**19)
    digest = hashlib.sha256(conversation_key.encode("utf-8", "surrogatepass")).digest()
    return "-" + str(int.from_bytes(digest[:8], "big") % 10**19)


def wrapped_body(
    body: Mapping[str, Any], *, project: str, model: str, conversation_key: str | None
) -> dict[str, Any]:
    """The ``v1internal`` body for the client's Gemini request."""
    request = {key: value for key, value in body.items() if key not in _DROPPED}
    request["sessionId"] = session_id(conversation_key)
    return {
        "project": project,
        "model": model,
        "userAgent": "antigravity",
        "requestType": "agent",
        "requestId": f"agent-{new_uuid()}",
        "request": request,
    }


def upstream_headers(
    access_token: str, *, accept: str, identity: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Our bearer and the Antigravity client identity (``identity``: the headers the call carries,
    CLIENT-1; the built-in one by default); nothing else of the client's headers goes upstream."""
    return {
        "authorization": f"Bearer {access_token}",
        "content-type": "application/json",
        "accept": accept,
        **(
            identity
            if identity is not None
            else {
                "user-agent": USER_AGENT,
                "x-goog-api-client": API_CLIENT,
                "client-metadata": CLIENT_METADATA,
            }
        ),
    }


def hosts_of(setting: str) -> tuple[str, ...]:
    """The hosts of ``SUBLANE_ANTIGRAVITY_BASE_URL``, in order (GEM-4: comma-separated)."""
    hosts = tuple(part.strip().rstrip("/") for part in setting.split(",") if part.strip())
    if not hosts:
        raise ValueError("SUBLANE_ANTIGRAVITY_BASE_URL names no host")
    return hosts
