"""Code Assist requests (``v1internal``) unwrapped to the Gemini requests inside them.

``:generateContent`` and ``:streamGenerateContent`` carry ``{"model", "project", "request": <a Gemini
GenerateContentRequest>, …}`` (the Gemini CLI adds ``user_prompt_id`` and ``enabled_credit_types``;
the Antigravity clients ``requestId``, ``requestType`` and ``userAgent``); ``:countTokens`` carries
``{"request": {"model": "models/<id>", "contents": […]}}``. The session id inside the Gemini request
(the Gemini CLI's ``session_id``, Antigravity's ``sessionId``) is stable across a session's turns: it
is the call's conversation key (AFF), not a field sent on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sublane_core import SubLaneError

#: The session id's names inside the Gemini request (proto JSON accepts both spellings).
_SESSION_FIELDS = ("session_id", "sessionId")


@dataclass(frozen=True, slots=True)
class GeminiCall:
    """A Gemini call as a Code Assist body carried it."""

    model: str
    body: dict[str, Any]  # the Gemini request (generateContent or countTokens body)
    session: str | None  # the client's session id: the call's conversation key


def _model_of(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip().removeprefix("models/"):
        raise SubLaneError("invalid_request", f"'{where}' must name a model.")
    return value.strip().removeprefix("models/")


def _request_of(body: Mapping[str, Any]) -> dict[str, Any]:
    request = body.get("request")
    if not isinstance(request, dict):
        raise SubLaneError("invalid_request", "'request' must be an object (a Gemini request).")
    return request


def _session(request: dict[str, Any]) -> str | None:
    found = None
    for name in _SESSION_FIELDS:
        value = request.pop(name, None)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            found = found or str(value).strip()
    return found


def generate_call(body: Mapping[str, Any]) -> GeminiCall:
    """The Gemini ``generateContent`` call inside a Code Assist generate body; 400 when it has none."""
    model = _model_of(body.get("model"), "model")
    request = dict(_request_of(body))
    session = _session(request)
    return GeminiCall(model=model, body=request, session=session)


def count_call(body: Mapping[str, Any]) -> GeminiCall:
    """The Gemini ``countTokens`` call inside a Code Assist count body (its model inside ``request``)."""
    request = dict(_request_of(body))
    model = _model_of(request.pop("model", None), "request.model")
    _session(request)
    return GeminiCall(model=model, body=request, session=None)
