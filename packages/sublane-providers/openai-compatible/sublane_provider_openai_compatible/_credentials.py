"""What an admin imports for an OpenAI-compatible server (PAID-1).

``{"api_key", "base_url", "models"?}``: ``base_url`` is required (there is no public default) and
is OpenAI-style, the address the ``openai`` SDK takes, ending in ``/v1``; ``models`` names what the
server serves when it lists none (``GET {base_url}/models`` answers 404 on many self-hosted
servers and coding plans).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_providers import ImportedCredentials
from sublane_providers.kit import parse_api_key_credentials

NAME = "openai-compatible"
#: How the import form names what it takes.
FILE = "API key, base URL (…/v1) and models"


def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
    """The sealed bundle ``{"api_key", "base_url", "models"?}``; ``CredentialFormatError`` when a
    field is unusable (the message names no secret)."""
    return parse_api_key_credentials(NAME, data, default_base_url=None, accepts_models=True)
