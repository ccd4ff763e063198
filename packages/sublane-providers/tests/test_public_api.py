"""The public surface of sublane-providers changes only on purpose."""

from __future__ import annotations

import sublane_providers
import sublane_providers.kit

EXPECTED = [
    "LoginFlow", "ProviderAdapter", "Quota", "StreamObserver", "stream_request",
    "AliasesModels", "ChecksCredentials", "CompletesBundles", "CompletesImports", "HasClientIdentity",
    "HasOtherHosts", "OpensSessions", "RenewsCredentials",
    "ReportsQuotaInStream", "SignsIn", "SuggestsAliases", "TakesApiKeys", "WrapsEvents", "DeclaresVocabulary",
    "UpstreamVocabulary", "UNKNOWN_KINDS", "KIND_EVENT", "KIND_ANSWER_FIELD", "KIND_TERMINAL_FIELD",
    "KIND_ERROR", "KIND_MODEL", "KIND_CLIENT_VERSION",
    "RESPONSES_VOCABULARY", "MESSAGES_VOCABULARY", "CHAT_COMPLETIONS_VOCABULARY",
    "ENTRY_POINT_GROUP", "ProviderPlugin", "ProviderSettings", "ProviderRegistrationError",
    "UnknownProviderError", "build_adapters", "parse_credentials", "provider_billing", "provider_names",
    "provider_plugin", "provider_plugins",
    "SessionClosed", "SessionRefused", "UpstreamClients",
    "MetadataClients", "MetadataHttp", "EgressFailed", "SessionEgressFailed", "current_egress", "use_egress",
    "UpstreamRequest", "UpstreamResponse",
    "UpstreamSender", "ResponseHeaders", "UpstreamError", "UpstreamConnectError", "UpstreamProxyError",
    "UpstreamTimeout", "UpstreamCut", "chunks_of", "read_all", "read_error_body", "UpstreamSession",
    "UpstreamUnreachable",
    "AccountIdentity", "CredentialFormatError", "CredentialsRefused", "ImportedCredentials",
    "CredentialVault", "Credentials", "RefreshedCredentials", "RefreshFailed", "RefreshFence", "RefreshGate",
    "PastedCallbackError", "PkcePair", "code_from_pasted", "new_pkce_pair",
    "expiry_of", "unverified_claims",
    "DeltaKind", "FailureKind", "Outcome", "StreamState", "TokenUsage", "UpstreamFailure",
    "SseEvent", "SseFramer", "encode_event", "parse_event", "event_fields", "blocks_of",
    "USUAL_EVENT", "usual_event_name",
    "parse_retry_after",
    "ClientIdentity", "newest_version", "parse_version", "plausible_version", "version_below",
]  # fmt: skip

KIT = [
    "optional_text", "optional_token", "parse_timestamp", "require_object", "require_token",
    "MAX_RETRY_AFTER_S", "header", "authorize_url", "oauth_retry_after",
    "JsonStreamObserver", "ResponsesStreamObserver", "responses_error", "responses_usage",
    "MessagesStreamObserver", "messages_error", "messages_usage",
    "MEMO_MAX_AGE_S", "QuotaHeaderMemo", "headers_with_prefix",
    "WebSocket", "WebSocketRefused", "connect_websocket",
    "ApiKeyAdapter", "API_KEY_PLAN", "UNAUTHORIZED_CODE", "parse_api_key_credentials", "key_fingerprint",
    "rate_limit_windows", "parse_duration", "api_retry_after", "api_error_fields", "classify_api_failure",
    "safe_message",
    "VERSION_IN_TEXT", "VersionedIdentity",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sublane_providers.__all__ == EXPECTED
    assert sublane_providers.kit.__all__ == KIT
