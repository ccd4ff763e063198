"""The registry's answers that need no installed provider, and the shared pasted-callback reader."""

from __future__ import annotations

import pytest

from sublane_providers import PastedCallbackError, UnknownProviderError, code_from_pasted, parse_credentials


def test_an_unregistered_provider_is_unknown() -> None:
    with pytest.raises(UnknownProviderError):
        parse_credentials("no-such-provider", {})


def test_ops_1_an_unparsable_pasted_address_is_a_callback_error() -> None:
    # Found by probing: oauth/complete with "http://[/?code=…" gave a 500 (ValueError from urlsplit).
    with pytest.raises(PastedCallbackError, match="not a valid address"):
        code_from_pasted("http://[/?code=abc&state=s", "s")
