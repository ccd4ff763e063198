"""The Gemini API's model list: ``GET {base_url}/v1beta/models``, paged with ``pageToken``.

Each entry is ``{"name": "models/<id>", "supportedGenerationMethods": [...], ...}``; only models
whose methods include ``generateContent`` can serve a call (embedding models, for one, do not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SERVING_METHOD = "generateContent"
PAGE_SIZE = 1000
MAX_PAGES = 20
MAX_MODEL_ID_CHARS = 256


def serving_models(page: Mapping[str, Any]) -> list[str]:
    """The ids of one page's models that serve ``generateContent``."""
    models = page.get("models")
    if models is None:
        return []
    if not isinstance(models, list):
        raise ValueError("'models' is not a list")
    found: list[str] = []
    for entry in models:
        if not isinstance(entry, dict):
            continue
        name, methods = entry.get("name"), entry.get("supportedGenerationMethods")
        if not isinstance(name, str) or not isinstance(methods, list) or SERVING_METHOD not in methods:
            continue
        model = name.removeprefix("models/")
        if model and len(model) <= MAX_MODEL_ID_CHARS:
            found.append(model)
    return found


def next_page(page: Mapping[str, Any]) -> str | None:
    token = page.get("nextPageToken")
    return token if isinstance(token, str) and token else None
