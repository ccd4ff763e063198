"""Claude Code's identity (CLIENT-1): ``user-agent``, ``x-app`` and its betas.

Claude Code sends ``user-agent: claude-cli/<version> (external, cli|sdk-cli|…)``, ``x-app: cli``,
the Anthropic SDK's ``x-stainless-*`` headers and ``anthropic-beta`` flags led by
``claude-code-20250219`` (PROTOCOLS §2.2, captured from 2.1.197; 2.1.332 sends the same). A
client's identity is usable when its user agent names ``claude-cli`` and a well-formed version.
SubLane's identity is Claude Code's user agent and ``x-app`` at the effective version with the
``claude-code-20250219`` beta added to whatever betas the call carries (they describe the body).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sublane_providers import parse_version
from sublane_providers.kit import VersionedIdentity

#: The newest Claude Code this release was tested with (``docs/clients.md``).
BUILT_IN_VERSION = "2.1.332"
CLAUDE_CODE_BETA = "claude-code-20250219"
_OWNED = frozenset({"user-agent", "x-app"})
_OWNED_PREFIXES = ("x-stainless-",)
_USER_AGENT = re.compile(r"claude-cli/([0-9.]{1,17})(?: |$)")


class ClaudeIdentity(VersionedIdentity):
    """Claude Code's identity headers; SubLane's is Claude Code's own at the effective version."""

    def __init__(self, built_in: str = BUILT_IN_VERSION) -> None:
        super().__init__(built_in)

    def owns(self, name: str) -> bool:
        return name in _OWNED or name.startswith(_OWNED_PREFIXES)

    def client_version(self, headers: Mapping[str, str]) -> str | None:
        match = _USER_AGENT.match(headers.get("user-agent", ""))
        if match is None or parse_version(match[1]) is None:
            return None
        return match[1]

    def headers(self, version: str | None = None) -> dict[str, str]:
        version = version or self.effective
        return {
            "user-agent": f"claude-cli/{version} (external, cli)",
            "x-app": "cli",
            "anthropic-beta": CLAUDE_CODE_BETA,
        }

    def replaced(self, headers: Mapping[str, str], version: str | None = None) -> dict[str, str]:
        betas = headers.get("anthropic-beta")
        replaced = super().replaced(headers, version)
        if betas:  # the call's own betas stay, byte for byte (CLIENT-4): they say what its body uses
            has_flag = CLAUDE_CODE_BETA in (flag.strip() for flag in betas.split(","))
            replaced["anthropic-beta"] = betas if has_flag else f"{CLAUDE_CODE_BETA},{betas}"
        return replaced
