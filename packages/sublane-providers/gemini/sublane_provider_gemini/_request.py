"""The Gemini API's requests: ``{base_url}/v1beta/models/{model}:<method>`` with ``x-goog-api-key``.

The client's Gemini body goes upstream as it came, but for ``model`` (the path names it).
``countTokens`` takes only ``contents`` or a whole ``generateContentRequest`` (which must name its
model): a body carrying more (a system instruction, tools) is sent as a ``generateContentRequest``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from sublane_core import UpstreamOperation

API_VERSION = "v1beta"
#: The API's version paths: the request paths carry one, so a base URL is stored without it.
VERSION_PATHS = ("/v1beta", "/v1alpha", "/v1")
USER_AGENT = "sublane"
METHODS = {
    UpstreamOperation.STREAM: ("streamGenerateContent?alt=sse", "text/event-stream"),
    UpstreamOperation.JSON: ("generateContent", "application/json"),
    UpstreamOperation.COUNT_TOKENS: ("countTokens", "application/json"),
}


def api_host(base_url: str) -> str:
    """The base URL as the google-genai SDK takes it — the host, or a proxy's prefix — without a
    version path: ``https://generativelanguage.googleapis.com/v1beta/`` (as the API reference
    writes its URLs) is ``https://generativelanguage.googleapis.com``; the calls add ``/v1beta``."""
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    while version := next((v for v in VERSION_PATHS if path.lower().endswith(v)), None):
        path = path[: -len(version)].rstrip("/")
    return urlunsplit(parts._replace(path=path)).rstrip("/")


def model_id(value: Any) -> str:
    """A model id without the ``models/`` resource prefix."""
    text = str(value)
    return text.removeprefix("models/")


def model_url(base_url: str, model: str, operation: UpstreamOperation) -> str:
    method, _ = METHODS[operation]
    return f"{base_url}/{API_VERSION}/models/{quote(model_id(model), safe='-._')}:{method}"


def upstream_headers(api_key: str, *, accept: str) -> dict[str, str]:
    """The key and what the answer should be; nothing of the client's headers goes upstream."""
    return {
        "x-goog-api-key": api_key,
        "content-type": "application/json",
        "accept": accept,
        "user-agent": USER_AGENT,
    }


def upstream_body(operation: UpstreamOperation, body: Mapping[str, Any]) -> dict[str, Any]:
    """The body the Gemini API takes for ``operation``."""
    model = model_id(body["model"])
    rest = {key: value for key, value in body.items() if key != "model"}
    if operation is not UpstreamOperation.COUNT_TOKENS:
        return rest
    nested = rest.get("generateContentRequest")
    if isinstance(nested, dict):
        return {"generateContentRequest": {"model": f"models/{model}", **nested}}
    if set(rest) <= {"contents"}:
        return rest
    return {"generateContentRequest": {"model": f"models/{model}", **rest}}
