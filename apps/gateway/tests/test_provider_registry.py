"""The providers the gateway ships with are found through their entry points, in their order."""

from __future__ import annotations

import pytest

from sublane_providers import UnknownProviderError, parse_credentials, provider_names, provider_plugins


def test_registry_lists_the_subscription_providers_first_then_the_metered_ones() -> None:
    assert provider_names()[:3] == ("codex", "claude", "antigravity")
    # PAID-1: each metered provider is one distribution more
    assert {"openai", "anthropic", "gemini", "openai-compatible"} <= set(provider_names()[3:])
    assert [plugin.order for plugin in provider_plugins()] == sorted(
        plugin.order for plugin in provider_plugins()
    )
    with pytest.raises(UnknownProviderError):
        parse_credentials("no-such-provider", {})
