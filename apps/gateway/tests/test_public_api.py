"""The public surface of sublane-gateway changes only on purpose."""

from __future__ import annotations

import sublane_gateway
from sublane_gateway import testing


def test_public_api_is_pinned() -> None:
    assert sublane_gateway.__all__ == ["create_app"]
    for name in ("Gateway", "running_gateway", "serve_in_thread", "make_settings", "migrate"):
        assert hasattr(testing, name), name
