"""Egress proxy addresses (EGRESS-1): the accepted forms, the masked one, and no echo of a secret."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sublane_core import Settings, checked_proxy_url, masked_proxy_url


@pytest.mark.parametrize(
    "url",
    [
        "http://proxy.example:3128",
        "https://user:pass@proxy.example:443",
        "socks5://127.0.0.1:1080",
        "socks5h://u%40corp:p%3Aw@[2001:db8::1]:1080",
    ],
)
def test_egress_1_the_four_proxy_forms_are_accepted(url: str) -> None:
    assert checked_proxy_url(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "ftp://proxy:21",
        "http://proxy",
        "socks5://:1080",
        "http://h:1/path",
        "http://h:1?q=1",
        "nonsense",
        "http://h:99999",
    ],
)
def test_egress_1_anything_else_is_refused_without_repeating_it(url: str) -> None:
    with pytest.raises(ValueError, match="proxy URL") as refused:
        checked_proxy_url(url)
    assert url not in str(refused.value)


def test_egress_1_the_password_is_shown_as_stars() -> None:
    assert masked_proxy_url("socks5h://egress:s3cret@127.0.0.1:1080") == "socks5h://egress:***@127.0.0.1:1080"
    assert masked_proxy_url("http://[2001:db8::1]:3128") == "http://[2001:db8::1]:3128"
    assert masked_proxy_url("http://u:p@[2001:db8::1]:3128") == "http://u:***@[2001:db8::1]:3128"


def test_egress_1_sublane_egress_proxy_is_checked_at_start_and_never_echoed() -> None:
    assert Settings(egress_proxy="socks5://u:pw@127.0.0.1:1080").egress_proxy is not None
    assert Settings(egress_proxy="").egress_proxy is None
    with pytest.raises(ValidationError) as refused:
        Settings(egress_proxy="ftp://u:hunter2@proxy:21")
    assert "hunter2" not in str(refused.value)
