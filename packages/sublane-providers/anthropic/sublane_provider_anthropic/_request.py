"""The Anthropic API's requests with an API key (PAID-1): endpoints and headers.

An API key travels in ``x-api-key``. Nothing of a subscription's OAuth identity goes with it: not
the ``oauth-2025-04-20`` beta (it asks the API to read the credential as an OAuth token), not a
``Authorization`` bearer, not the Claude Code identity a subscription's calls carry. What a native
Messages client chose is relayed: its ``anthropic-version`` (``2023-06-01`` when it sent none) and
its ``anthropic-beta`` list, byte for byte but for the OAuth flag — every other beta a client sends
is one the API takes with a key (Claude Code sends its betas with ``ANTHROPIC_API_KEY`` too), and
the API answers an unknown one with a 400 ``invalid_request_error`` the client sees as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

DEFAULT_VERSION = "2023-06-01"
#: The API's version path, which the request paths carry: not part of a base URL.
VERSION_PATH = "/v1"
#: The beta that marks a subscription's OAuth token: never sent with an API key.
OAUTH_BETA = "oauth-2025-04-20"


def api_root(base_url: str) -> str:
    """The base URL as the Anthropic SDK takes it — the host, or a proxy's prefix — without the
    ``/v1`` the request paths add: ``https://api.anthropic.com/v1`` (as pasted from the API
    reference or a proxy's page), with or without a trailing slash, is ``https://api.anthropic.com``."""
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    while path.lower().endswith(VERSION_PATH):
        path = path[: -len(VERSION_PATH)].rstrip("/")
    return urlunsplit(parts._replace(path=path)).rstrip("/")


def messages_url(base_url: str) -> str:
    return f"{base_url.rstrip('/')}/v1/messages"


def count_tokens_url(base_url: str) -> str:
    return f"{base_url.rstrip('/')}/v1/messages/count_tokens"


def models_url(base_url: str) -> str:
    return f"{base_url.rstrip('/')}/v1/models"


def api_betas(values: list[str]) -> str | None:
    """The client's ``anthropic-beta`` lines joined as HTTP folds them, without the OAuth flag;
    ``None`` when nothing is left."""
    kept = [
        item for value in values for item in value.split(",") if item.strip() and item.strip() != OAUTH_BETA
    ]
    return ",".join(kept) or None


def api_headers(client_headers: Mapping[str, str], *, api_key: str) -> dict[str, str]:
    """The key in ``x-api-key``, the client's version and betas; nothing else of the client's."""
    betas: list[str] = []
    version: str | None = None
    for raw_name, value in client_headers.items():
        name = raw_name.lower()
        if name == "anthropic-beta":
            betas.append(value)
        elif name == "anthropic-version":
            version = value.strip() or None
    headers = {"x-api-key": api_key, "anthropic-version": version or DEFAULT_VERSION}
    beta = api_betas(betas)
    if beta is not None:
        headers["anthropic-beta"] = beta
    return headers


def messages_body(body: Mapping[str, Any], *, model: str) -> dict[str, Any]:
    """The client's Messages body as sent (prompt caching depends on its exact prefix), with the
    upstream model id."""
    prepared = dict(body)
    prepared["model"] = model
    return prepared
