"""The public surface of sublane-providers changes only on purpose."""

from __future__ import annotations

import sublane_providers
import sublane_providers.antigravity
import sublane_providers.claude
import sublane_providers.codex

EXPECTED = [
    "LoginFlow", "ProviderAdapter", "Quota", "StreamObserver",
    "UnknownProviderError", "build_adapters", "parse_credentials", "provider_names",
    "SessionClosed", "SessionRefused", "UpstreamClients", "UpstreamRequest", "UpstreamResponse",
    "UpstreamSender", "ResponseHeaders", "UpstreamError", "UpstreamConnectError", "UpstreamProxyError",
    "UpstreamTimeout", "UpstreamCut", "chunks_of", "read_all", "read_error_body", "UpstreamSession",
    "UpstreamUnreachable",
    "AccountIdentity", "CredentialFormatError", "ImportedCredentials",
    "CredentialVault", "Credentials", "RefreshedCredentials", "RefreshFailed",
    "PastedCallbackError", "PkcePair", "code_from_pasted", "new_pkce_pair",
    "expiry_of", "unverified_claims",
    "DeltaKind", "FailureKind", "Outcome", "StreamState", "TokenUsage", "UpstreamFailure",
    "SseEvent", "SseFramer", "encode_event", "parse_event", "event_fields", "blocks_of",
    "USUAL_EVENT", "usual_event_name",
    "parse_retry_after",
]  # fmt: skip

CODEX = [
    "KNOWN_MODELS", "CodexAdapter", "CodexLogin", "CodexSession", "CodexStreamObserver", "build_adapter",
    "classify_failure", "compact_body", "parse_credentials", "responses_body", "upstream_headers",
    "usage_of", "windows_from_headers", "windows_from_rate_limits_event", "windows_from_usage",
]  # fmt: skip

CLAUDE = [
    "ClaudeAdapter", "ClaudeLogin", "ClaudeStreamObserver", "KNOWN_MODELS", "build_adapter",
    "classify_failure", "count_tokens_url",
    "messages_body", "messages_url", "parse_credentials", "upstream_headers", "usage_of_message",
    "windows_from_headers", "windows_from_usage",
]  # fmt: skip


ANTIGRAVITY = [
    "KNOWN_MODELS", "AntigravityAdapter", "AntigravityLogin", "AntigravityStreamObserver", "GoogleOAuth",
    "ProjectUnavailable", "build_adapter", "classify_failure", "discover_project", "hosts_of", "models_of",
    "parse_credentials", "parse_duration", "session_id", "unwrap", "upstream_headers", "usage_of",
    "windows_from_models", "wrapped_body",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sublane_providers.__all__ == EXPECTED
    assert sorted(sublane_providers.codex.__all__) == sorted(CODEX)
    assert sorted(sublane_providers.claude.__all__) == sorted(CLAUDE)
    assert sorted(sublane_providers.antigravity.__all__) == sorted(ANTIGRAVITY)
