"""What a provider package builds on, beyond the contracts in ``sublane_providers`` itself.

Provider distributions (``sublane-provider-*``) import from here and from the top-level package,
never from this package's private modules: these names are the helpers every provider shares
(credential parsing, OAuth and refresh answers, JSON stream reading, the Responses and Messages
streams of any upstream speaking them, quota-header memos, the upstream WebSocket), kept stable on purpose.
"""

from sublane_providers._api_key import (
    API_KEY_PLAN,
    UNAUTHORIZED_CODE,
    ApiKeyAdapter,
    api_error_fields,
    api_retry_after,
    classify_api_failure,
    key_fingerprint,
    parse_api_key_credentials,
    parse_duration,
    rate_limit_windows,
    safe_message,
)
from sublane_providers._credentials import (
    optional_text,
    optional_token,
    parse_timestamp,
    require_object,
    require_token,
)
from sublane_providers._http import MAX_RETRY_AFTER_S, header
from sublane_providers._identity import VERSION_IN_TEXT, VersionedIdentity
from sublane_providers._messages_stream import MessagesStreamObserver, messages_error, messages_usage
from sublane_providers._oauth import authorize_url
from sublane_providers._observer import JsonStreamObserver
from sublane_providers._quota_headers import MEMO_MAX_AGE_S, QuotaHeaderMemo, headers_with_prefix
from sublane_providers._refresh import oauth_retry_after
from sublane_providers._responses_stream import ResponsesStreamObserver, responses_error, responses_usage
from sublane_providers._transport import WebSocket, WebSocketRefused, connect_websocket

__all__ = [
    # credential files
    "optional_text",
    "optional_token",
    "parse_timestamp",
    "require_object",
    "require_token",
    # HTTP answers and OAuth
    "MAX_RETRY_AFTER_S",
    "header",
    "authorize_url",
    "oauth_retry_after",
    # streams and quota
    "JsonStreamObserver",
    "ResponsesStreamObserver",
    "responses_error",
    "responses_usage",
    "MessagesStreamObserver",
    "messages_error",
    "messages_usage",
    "MEMO_MAX_AGE_S",
    "QuotaHeaderMemo",
    "headers_with_prefix",
    # the upstream WebSocket
    "WebSocket",
    "WebSocketRefused",
    "connect_websocket",
    # API-key (metered) providers (PAID-1, PAID-4)
    "ApiKeyAdapter",
    "API_KEY_PLAN",
    "UNAUTHORIZED_CODE",
    "parse_api_key_credentials",
    "key_fingerprint",
    "rate_limit_windows",
    "parse_duration",
    "api_retry_after",
    "api_error_fields",
    "classify_api_failure",
    "safe_message",
    # client identities (CLIENT-1)
    "VERSION_IN_TEXT",
    "VersionedIdentity",
]
