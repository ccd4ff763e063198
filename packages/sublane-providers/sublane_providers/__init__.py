"""SubLane's provider contracts: the adapter interface, the plugin registry and the helpers every
provider distribution shares. The providers themselves are separate distributions, found through
the entry point group ``sublane.providers`` (see ``docs/adding-a-provider.md``)."""

from sublane_core.sse import (
    USUAL_EVENT,
    SseEvent,
    SseFramer,
    blocks_of,
    encode_event,
    event_fields,
    parse_event,
    usual_event_name,
)
from sublane_providers._adapter import LoginFlow, ProviderAdapter, Quota, StreamObserver, stream_request
from sublane_providers._capabilities import (
    AliasesModels,
    ChecksCredentials,
    CompletesBundles,
    CompletesImports,
    HasClientIdentity,
    HasOtherHosts,
    OpensSessions,
    RenewsCredentials,
    ReportsQuotaInStream,
    SignsIn,
    SuggestsAliases,
    TakesApiKeys,
    WrapsEvents,
)
from sublane_providers._credentials import (
    AccountIdentity,
    CredentialFormatError,
    CredentialsRefused,
    ImportedCredentials,
)
from sublane_providers._egress import EgressFailed, current_egress, use_egress
from sublane_providers._http import parse_retry_after
from sublane_providers._identity import (
    ClientIdentity,
    newest_version,
    parse_version,
    plausible_version,
    version_below,
)
from sublane_providers._jwt import expiry_of, unverified_claims
from sublane_providers._oauth import PastedCallbackError, PkcePair, code_from_pasted, new_pkce_pair
from sublane_providers._plugin import ENTRY_POINT_GROUP, ProviderPlugin, ProviderSettings
from sublane_providers._protocol_vocabulary import (
    CHAT_COMPLETIONS_VOCABULARY,
    MESSAGES_VOCABULARY,
    RESPONSES_VOCABULARY,
)
from sublane_providers._refresh import RefreshedCredentials, RefreshFailed
from sublane_providers._registry import (
    ProviderRegistrationError,
    UnknownProviderError,
    build_adapters,
    parse_credentials,
    provider_billing,
    provider_names,
    provider_plugin,
    provider_plugins,
)
from sublane_providers._session import (
    SessionClosed,
    SessionEgressFailed,
    SessionRefused,
    UpstreamSession,
    UpstreamUnreachable,
)
from sublane_providers._transport import MetadataClients, MetadataHttp, UpstreamClients
from sublane_providers._types import (
    DeltaKind,
    FailureKind,
    Outcome,
    StreamState,
    TokenUsage,
    UpstreamFailure,
)
from sublane_providers._upstream import (
    ResponseHeaders,
    UpstreamConnectError,
    UpstreamCut,
    UpstreamError,
    UpstreamProxyError,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamSender,
    UpstreamTimeout,
    chunks_of,
    read_all,
    read_error_body,
)
from sublane_providers._vault import Credentials, CredentialVault, RefreshFence, RefreshGate
from sublane_providers._vocabulary import (
    KIND_ANSWER_FIELD,
    KIND_CLIENT_VERSION,
    KIND_ERROR,
    KIND_EVENT,
    KIND_MODEL,
    KIND_TERMINAL_FIELD,
    UNKNOWN_KINDS,
    DeclaresVocabulary,
    UpstreamVocabulary,
)

__version__ = "0.1.0"

__all__ = [
    # adapters
    "LoginFlow",
    "ProviderAdapter",
    "Quota",
    "StreamObserver",
    "stream_request",
    # optional capabilities (found with isinstance)
    "AliasesModels",
    "ChecksCredentials",
    "CompletesBundles",
    "CompletesImports",
    "HasClientIdentity",
    "HasOtherHosts",
    "OpensSessions",
    "RenewsCredentials",
    "ReportsQuotaInStream",
    "SignsIn",
    "SuggestsAliases",
    "TakesApiKeys",
    "WrapsEvents",
    "DeclaresVocabulary",
    # what an upstream is known to answer (CLIENT-7)
    "UpstreamVocabulary",
    "UNKNOWN_KINDS",
    "KIND_EVENT",
    "KIND_ANSWER_FIELD",
    "KIND_TERMINAL_FIELD",
    "KIND_ERROR",
    "KIND_MODEL",
    "KIND_CLIENT_VERSION",
    "RESPONSES_VOCABULARY",
    "MESSAGES_VOCABULARY",
    "CHAT_COMPLETIONS_VOCABULARY",
    # plugins and the registry
    "ENTRY_POINT_GROUP",
    "ProviderPlugin",
    "ProviderSettings",
    "ProviderRegistrationError",
    "UnknownProviderError",
    "build_adapters",
    "parse_credentials",
    "provider_billing",
    "provider_names",
    "provider_plugin",
    "provider_plugins",
    # transport and upstream sessions
    "SessionClosed",
    "SessionRefused",
    "UpstreamClients",
    "MetadataClients",
    "MetadataHttp",
    "EgressFailed",
    "SessionEgressFailed",
    "current_egress",
    "use_egress",
    "UpstreamRequest",
    "UpstreamResponse",
    "UpstreamSender",
    "ResponseHeaders",
    "UpstreamError",
    "UpstreamConnectError",
    "UpstreamProxyError",
    "UpstreamTimeout",
    "UpstreamCut",
    "chunks_of",
    "read_all",
    "read_error_body",
    "UpstreamSession",
    "UpstreamUnreachable",
    # credentials
    "AccountIdentity",
    "CredentialFormatError",
    "CredentialsRefused",
    "ImportedCredentials",
    "CredentialVault",
    "Credentials",
    "RefreshedCredentials",
    "RefreshFailed",
    "RefreshFence",
    "RefreshGate",
    # logins
    "PastedCallbackError",
    "PkcePair",
    "code_from_pasted",
    "new_pkce_pair",
    # tokens
    "expiry_of",
    "unverified_claims",
    # streams and outcomes
    "DeltaKind",
    "FailureKind",
    "Outcome",
    "StreamState",
    "TokenUsage",
    "UpstreamFailure",
    "SseEvent",
    "SseFramer",
    "encode_event",
    "parse_event",
    "event_fields",
    "blocks_of",
    "USUAL_EVENT",
    "usual_event_name",
    "parse_retry_after",
    # client identities (CLIENT-1, CLIENT-2)
    "ClientIdentity",
    "newest_version",
    "parse_version",
    "plausible_version",
    "version_below",
]
