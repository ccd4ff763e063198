"""The registry's answers that need no installed provider, and the shared pasted-callback reader."""

from __future__ import annotations

import pytest

from sublane_providers import (
    CredentialFormatError,
    PastedCallbackError,
    UnknownProviderError,
    code_from_pasted,
    parse_credentials,
)
from sublane_providers.kit import optional_text, optional_token


def test_an_unregistered_provider_is_unknown() -> None:
    with pytest.raises(UnknownProviderError):
        parse_credentials("no-such-provider", {})


def test_ops_1_an_unparsable_pasted_address_is_a_callback_error() -> None:
    # Found by probing: oauth/complete with "http://[/?code=…" gave a 500 (ValueError from urlsplit).
    with pytest.raises(PastedCallbackError, match="not a valid address"):
        code_from_pasted("http://[/?code=abc&state=s", "s")


@pytest.mark.parametrize("token", ["\ud800", "a\x00b", "a\nb", "tök-en", "日本", "a\u200bb"])
def test_ops_1_a_token_that_is_not_visible_ascii_is_not_a_token(token: str) -> None:
    """A token goes into a header: a lone surrogate (no column can hold it: a 500 at import), a
    control character or other text (unsendable: a 500 at the first call) is refused at import."""
    with pytest.raises(CredentialFormatError, match="is not a token"):
        optional_token({"access_token": token}, "access_token", "credentials")
    assert (
        optional_token({"access_token": "sk-ant-oat01-Ab_9.~+/="}, "access_token", "c")
        == "sk-ant-oat01-Ab_9.~+/="
    )


@pytest.mark.parametrize("text", ["\ud800", "max\ud800", "a\x00b", "line\nbreak"])
def test_ops_1_an_informational_text_no_column_can_hold_is_left_out(text: str) -> None:
    assert optional_text({"email": text}, "email") is None
    assert optional_text({"email": "dév@example.com"}, "email") == "dév@example.com"
    assert optional_text({"account_id": "dév"}, "account_id", header=True) is None  # sent in a header
