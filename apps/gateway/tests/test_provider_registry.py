"""The providers the gateway ships with are found through their entry points, in their order."""

from __future__ import annotations

import pytest

from sublane_providers import UnknownProviderError, parse_credentials, provider_names, provider_plugins


def test_registry_lists_the_three_providers() -> None:
    assert provider_names()[:3] == ("codex", "claude", "antigravity")  # the subscriptions first
    assert "openai" in provider_names()  # PAID-1: a metered provider is found the same way
    assert [plugin.order for plugin in provider_plugins()] == sorted(
        plugin.order for plugin in provider_plugins()
    )
    with pytest.raises(UnknownProviderError):
        parse_credentials("gemini", {})
