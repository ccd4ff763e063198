"""The Google Antigravity (cloudcode-pa ``v1internal``) provider: Gemini requests in a wrapper."""

from sublane_provider_antigravity._adapter import KNOWN_MODELS, AntigravityAdapter, build_adapter
from sublane_provider_antigravity._credentials import parse_credentials
from sublane_provider_antigravity._failures import classify_failure, parse_duration
from sublane_provider_antigravity._login import AntigravityLogin
from sublane_provider_antigravity._oauth import GoogleOAuth
from sublane_provider_antigravity._project import ProjectUnavailable, discover_project
from sublane_provider_antigravity._quota import models_of, windows_from_models
from sublane_provider_antigravity._request import hosts_of, session_id, upstream_headers, wrapped_body
from sublane_provider_antigravity._settings import AntigravitySettings
from sublane_provider_antigravity._stream import AntigravityStreamObserver, unwrap, usage_of
from sublane_providers import ProviderPlugin

#: What the ``sublane.providers`` entry point names.
PROVIDER = ProviderPlugin(
    name="antigravity",
    settings=AntigravitySettings,
    build_adapter=build_adapter,
    parse_credentials=parse_credentials,
    order=30,
)

__all__ = [
    "PROVIDER",
    "AntigravitySettings",
    "KNOWN_MODELS",
    "AntigravityAdapter",
    "AntigravityLogin",
    "AntigravityStreamObserver",
    "GoogleOAuth",
    "ProjectUnavailable",
    "build_adapter",
    "classify_failure",
    "discover_project",
    "hosts_of",
    "models_of",
    "parse_credentials",
    "parse_duration",
    "session_id",
    "unwrap",
    "upstream_headers",
    "usage_of",
    "windows_from_models",
    "wrapped_body",
]
