"""Building Anthropic Messages requests from what a client sent (PROTOCOLS §2.1–2.3).

SubLane forwards real Claude Code traffic, so the body and the client's identity headers pass
through unchanged; only the credential is swapped: the pooled account's OAuth access token goes in
``authorization``, and the ``oauth-2025-04-20`` beta flag it needs is added to the client's list.
The client's own ``x-api-key``/``authorization`` (its SubLane key), cookies and hop headers are
never forwarded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import Dialect

OAUTH_BETA = "oauth-2025-04-20"
DEFAULT_ANTHROPIC_VERSION = "2023-06-01"
SESSION_HEADER = "x-claude-code-session-id"
#: The line OAuth tokens require as the first ``system`` block (PROTOCOLS §2.2): bodies translated
#: from another client protocol get it, exactly once.
CLAUDE_CODE_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
CLAUDE_DIALECT = Dialect(system_prelude=CLAUDE_CODE_IDENTITY)

# Claude Code's identity headers (CAP); everything else the client sent stays with the gateway.
_PASSTHROUGH = frozenset({"user-agent", "x-app", "anthropic-dangerous-direct-browser-access"})
_PASSTHROUGH_PREFIXES = ("x-stainless-",)


def merged_betas(values: list[str]) -> str:
    """One ``anthropic-beta`` value: the client's own, byte for byte, plus the OAuth flag when absent.

    Nothing the client sent is reordered, respaced or dropped (CLIENT-4: Claude Code's auto mode
    checks for its own beta, e.g. ``dangerous-tool-use-2026-09-03``, beside the ``safeguards`` field);
    several header lines are joined with ``,`` as HTTP folds them, and the OAuth flag goes last.
    """
    sent = ",".join(value for value in values if value.strip())
    if OAUTH_BETA in (item.strip() for item in sent.split(",")):
        return sent
    return f"{sent},{OAUTH_BETA}" if sent else OAUTH_BETA


def upstream_headers(client_headers: Mapping[str, str], *, access_token: str, bound: bool) -> dict[str, str]:
    """Headers for the Messages API: our bearer, the client's version, betas and identity headers.

    ``X-Claude-Code-Session-Id`` is forwarded only for a ``bound`` call (one with a conversation
    key, AFF-2), so unrelated calls never share an upstream session.
    """
    headers: dict[str, str] = {}
    betas: list[str] = []
    version: str | None = None
    for raw_name, value in client_headers.items():
        name = raw_name.lower()
        if name == "anthropic-beta":
            betas.append(value)
        elif name == "anthropic-version":
            version = value.strip() or None
        elif (
            name in _PASSTHROUGH
            or name.startswith(_PASSTHROUGH_PREFIXES)
            or (name == SESSION_HEADER and bound)
        ):
            headers[name] = value
    headers["anthropic-version"] = version or DEFAULT_ANTHROPIC_VERSION
    headers["anthropic-beta"] = merged_betas(betas)
    headers["authorization"] = f"Bearer {access_token}"
    return headers


def messages_body(body: Mapping[str, Any], *, model: str) -> dict[str, Any]:
    """The client's Messages (or count_tokens) body as sent, with ``model`` set to the upstream id.

    System blocks, tools, thinking, ``metadata.user_id``, ``cache_control``, ``context_management``,
    ``output_config`` and whatever else the client sent are kept as they are: Anthropic validates
    them, and Claude Code's prompt caching depends on the exact bytes of its prefix.
    """
    prepared = dict(body)
    prepared["model"] = model
    return prepared


def messages_url(base: str) -> str:
    """The Messages endpoint under ``base``, with the ``?beta=true`` Claude Code adds."""
    return f"{base.rstrip('/')}/v1/messages?beta=true"


def count_tokens_url(base: str) -> str:
    """The token-counting endpoint under ``base``."""
    return f"{base.rstrip('/')}/v1/messages/count_tokens?beta=true"
