"""COST-4: Anthropic's prompt-cache lifetime, declared by the Claude package: 5 minutes, or an hour
when a breakpoint asks ``"ttl": "1h"``."""

from __future__ import annotations

from typing import Any

from sublane_provider_claude._cache import CACHE_LIFETIME_1H_S, CACHE_LIFETIME_S, cache_lifetime_s

HOUR = {"type": "ephemeral", "ttl": "1h"}


def _text(control: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": "x"}
    if control is not None:
        block["cache_control"] = control
    return block


def test_cost_4_claude_cache_lifetime_is_five_minutes_by_default() -> None:
    body = {"system": [_text({"type": "ephemeral"})], "messages": [{"role": "user", "content": [_text()]}]}
    assert cache_lifetime_s(body) == CACHE_LIFETIME_S == 300
    assert cache_lifetime_s({"messages": "not a list", "system": "plain"}) == 300


def test_cost_4_claude_cache_lifetime_is_an_hour_when_a_breakpoint_asks() -> None:
    assert cache_lifetime_s({"system": [_text(HOUR)], "messages": []}) == CACHE_LIFETIME_1H_S == 3600
    assert cache_lifetime_s({"tools": [{"name": "t", "cache_control": HOUR}], "messages": []}) == 3600
    older, newest = {"role": "user", "content": [_text()]}, {"role": "user", "content": [_text(HOUR)]}
    latest = {"messages": [older, newest]}
    assert cache_lifetime_s(latest) == 3600
