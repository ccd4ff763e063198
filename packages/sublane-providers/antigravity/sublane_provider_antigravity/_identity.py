"""The Antigravity client's identity (CLIENT-1): its ``user-agent`` and request metadata.

Antigravity clients send ``user-agent: antigravity/<version> <os>/<arch>`` with
``x-goog-api-client`` and ``client-metadata`` (PROTOCOLS §3.2). No client protocol SubLane serves
today is spoken by an Antigravity client, so calls carry SubLane's identity; a client whose user
agent names ``antigravity/<version>`` (well-formed) would pass its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sublane_providers import parse_version
from sublane_providers.kit import VersionedIdentity

#: The Antigravity client version SubLane presents when nothing newer is known.
BUILT_IN_VERSION = "1.13.3"
API_CLIENT = "google-cloud-sdk vscode_cloudshelleditor/0.1"
CLIENT_METADATA = '{"ideType":"IDE_UNSPECIFIED","platform":"PLATFORM_UNSPECIFIED","pluginType":"GEMINI"}'
_OWNED = frozenset({"user-agent", "x-goog-api-client", "client-metadata"})
_USER_AGENT = re.compile(r"antigravity/(?:hub/)?([0-9.]{1,17})(?: |$)")


class AntigravityIdentity(VersionedIdentity):
    """The Antigravity client's identity headers; SubLane's at the effective version."""

    def __init__(self, built_in: str = BUILT_IN_VERSION) -> None:
        super().__init__(built_in)

    def owns(self, name: str) -> bool:
        return name in _OWNED

    def client_version(self, headers: Mapping[str, str]) -> str | None:
        match = _USER_AGENT.match(headers.get("user-agent", ""))
        if match is None or parse_version(match[1]) is None:
            return None
        return match[1]

    def headers(self, version: str | None = None) -> dict[str, str]:
        return {
            "user-agent": f"antigravity/{version or self.effective} linux/amd64",
            "x-goog-api-client": API_CLIENT,
            "client-metadata": CLIENT_METADATA,
        }

    def carried(self, headers: Mapping[str, str]) -> dict[str, str]:
        """The identity headers a request carries: the client's own when usable, else SubLane's."""
        if self.client_version(headers) is None:
            return self.headers()
        return {name: headers[name] for name in _OWNED if name in headers}
