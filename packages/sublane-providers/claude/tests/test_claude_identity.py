"""CLIENT-1/3 for Claude: Claude Code's identity and Anthropic's version refusal."""

from __future__ import annotations

import json

from sublane_provider_claude._failures import classify_failure
from sublane_provider_claude._identity import ClaudeIdentity
from sublane_providers import FailureKind


def test_client_1_claude_identity_keeps_the_calls_betas() -> None:
    identity = ClaudeIdentity()
    assert identity.client_version({"user-agent": "claude-cli/2.1.332 (external, cli)"}) == "2.1.332"
    assert identity.client_version({"user-agent": "Anthropic/Python 0.70.0"}) is None
    replaced = identity.replaced(
        {
            "user-agent": "Anthropic/Python",
            "x-stainless-lang": "python",
            "anthropic-beta": "context-1m-2025-08-07",
        },
        "2.1.400",
    )
    assert replaced == {
        "user-agent": "claude-cli/2.1.400 (external, cli)",
        "x-app": "cli",
        "anthropic-beta": "claude-code-20250219,context-1m-2025-08-07",
    }


def _refusal(error: dict[str, object]) -> bytes:
    return json.dumps({"type": "error", "error": {"type": "invalid_request_error", **error}}).encode()


def test_client_3_claude_version_refusal_is_detected() -> None:
    by_code = classify_failure(
        400,
        {},
        _refusal({"message": "Too old.", "details": {"error_code": "claude_code_version_too_old"}}),
        0.0,
    )
    assert by_code.kind is FailureKind.CLIENT_VERSION and by_code.needed_version is None
    message = "Claude Code 2.1.100 does not support this model; version 2.1.300 or newer is required"
    by_message = classify_failure(400, {}, _refusal({"message": message}), 0.0)
    assert by_message.kind is FailureKind.CLIENT_VERSION and by_message.needed_version == "2.1.300"
    plain = classify_failure(400, {}, _refusal({"message": "max_tokens: too large"}), 0.0)
    assert plain.kind is FailureKind.CLIENT_ERROR
