"""The Codex CLI's identity (CLIENT-1): ``originator``, ``user-agent`` and ``version``.

The Codex CLI sends ``originator: <name>`` (``codex_cli_rs``, ``codex_exec``, ``codex-tui``…) and
``user-agent: <originator>/<version> (<os> <os-version>; <arch>) <terminal>`` (PROTOCOLS §1.2,
captured from 0.171.0); it adds ``version: <version>`` when it talks to the ChatGPT backend.
A client's identity is usable when its user agent names a Codex originator and a well-formed
version, and its ``originator`` and ``version`` headers (when sent) agree with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sublane_providers import parse_version
from sublane_providers.kit import VersionedIdentity

#: The newest Codex CLI this release was tested with (``docs/clients.md``).
BUILT_IN_VERSION = "0.171.0"
ORIGINATOR = "codex_cli_rs"
_OWNED = frozenset({"originator", "user-agent", "version"})
_USER_AGENT = re.compile(r"(codex[A-Za-z0-9_.-]{0,40})/([0-9.]{1,17})(?: |$)", re.IGNORECASE)


class CodexIdentity(VersionedIdentity):
    """The Codex CLI's identity headers; SubLane's is the CLI's own at the effective version."""

    def __init__(self, built_in: str = BUILT_IN_VERSION) -> None:
        super().__init__(built_in)

    def owns(self, name: str) -> bool:
        return name in _OWNED

    def client_version(self, headers: Mapping[str, str]) -> str | None:
        match = _USER_AGENT.match(headers.get("user-agent", ""))
        if match is None or parse_version(match[2]) is None:
            return None
        originator, version = match[1], match[2]
        if headers.get("originator", originator) != originator or headers.get("version", version) != version:
            return None  # a mixed identity is no usable identity
        return version

    def headers(self, version: str | None = None) -> dict[str, str]:
        version = version or self.effective
        return {
            "originator": ORIGINATOR,
            "user-agent": f"{ORIGINATOR}/{version} (Linux 6.8.0; x86_64) unknown",
            "version": version,
        }
