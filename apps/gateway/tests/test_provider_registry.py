"""The providers the gateway ships with are found through their entry points, in their order."""

from __future__ import annotations

import pytest

from sublane_providers import UnknownProviderError, parse_credentials, provider_names, provider_plugins


def test_registry_lists_the_three_providers() -> None:
    assert provider_names() == ("codex", "claude", "antigravity")
    assert [plugin.order for plugin in provider_plugins()] == sorted(
        plugin.order for plugin in provider_plugins()
    )
    with pytest.raises(UnknownProviderError):
        parse_credentials("gemini", {})
