"""The public surface of sublane-web changes only on purpose: update this list with the change."""

from __future__ import annotations

import sublane_web

EXPECTED = [
    "mount", "PAGES",
    "STATIC_DIR", "STATIC_PREFIX",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sublane_web.__all__ == EXPECTED
    for name in EXPECTED:
        assert hasattr(sublane_web, name), name
