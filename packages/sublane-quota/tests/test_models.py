"""QUOTA-4: the native model whose quota a request spends (thinking suffixes normalized)."""

from __future__ import annotations

import pytest

from sublane_quota import quota_model


@pytest.mark.parametrize(
    ("requested", "native"),
    [
        ("gemini-3-pro-high", "gemini-3-pro-high"),
        ("claude-opus-4-6-thinking", "claude-opus-4-6-thinking"),
        ("gemini-3-pro(high)", "gemini-3-pro-high"),
        ("gemini-3-pro(LOW)", "gemini-3-pro-low"),
        ("gemini-3-pro-high(high)", "gemini-3-pro-high"),
        ("claude-sonnet-4-5(16384)", "claude-sonnet-4-5"),
        ("gemini-3-flash(auto)", "gemini-3-flash"),
        ("gpt-5-codex", "gpt-5-codex"),
    ],
)
def test_quota_4_thinking_suffixes_name_the_native_model(requested: str, native: str) -> None:
    assert quota_model(requested) == native
