"""An OpenAI API key as SubLane imports it: ``{"api_key", "base_url"?}`` (PAID-1)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sublane_provider_openai._request import api_base
from sublane_provider_openai._settings import PUBLIC_BASE_URL
from sublane_providers import CredentialFormatError, ImportedCredentials
from sublane_providers.kit import parse_api_key_credentials

PROVIDER_NAME = "openai"


def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
    """The key and, when given, its base URL (``https://api.openai.com/v1`` as the OpenAI SDK
    takes it). A key imported without one follows ``SUBLANE_OPENAI_BASE_URL`` at call time, so
    moving the setting moves every such account (the bundle keeps no copy of the default). A base
    URL without a path is given ``/v1``, a doubled ``/v1`` made one (:func:`api_base`)."""
    if not isinstance(data, Mapping):
        raise CredentialFormatError("credentials must be an object with 'api_key'")
    imported = parse_api_key_credentials(PROVIDER_NAME, data, default_base_url=PUBLIC_BASE_URL)
    if data.get("base_url") in (None, ""):
        bundle = {name: value for name, value in imported.bundle.items() if name != "base_url"}
    else:
        bundle = {**imported.bundle, "base_url": api_base(str(imported.bundle["base_url"]))}
    return dataclasses.replace(imported, bundle=bundle)
