"""COST-4 in the web views, driven in Debian's Chromium through Playwright: the cache hit rate on
Team usage (totals, breakdowns, per account) and My usage, and a request's hit rate and miss reason
in its details. The pictures go to ``docs/images/`` (docs/cost.md shows them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway_pool import Pool
from playwright.sync_api import expect
from test_web import (  # the module's browser and page fixtures and helpers
    DOC_IMAGES,
    _admin_page,
    _records,
    _shoot,
    _tile,
    browser,
    open_context,
    pytestmark,
)

__all__ = ["browser", "open_context", "pytestmark"]  # fixtures pytest finds in this module

SESSION = {"x-claude-code-session-id": "web-session"}


def _turn(pool: Pool, *texts: str) -> str:
    roles = ("user", "assistant")
    messages = [{"role": roles[index % 2], "content": text} for index, text in enumerate(texts)]
    body = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": messages, "stream": True}
    response = pool.client().post("/v1/messages", json=body, headers=SESSION)
    assert response.status_code == 200, response.text
    return response.headers["x-request-id"]


def _percent(rate: float) -> str:
    text = f"{rate * 100:.1f}"
    return (text[:-2] if text.endswith(".0") else text) + "%"


def test_cost_4_web_shows_hit_rates_and_miss_reasons(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool(provider="claude")
    _turn(pool, "hello")
    _turn(pool, "hello", "hi", "tell me more about caches")
    edited = _turn(pool, "HELLO (edited)", "hi", "tell me more about caches", "ok", "and then?")
    _records(pool, 3)
    pool.gateway.app.state.history.flush()
    team = pool.admin.get("/api/usage?days=7").json()
    assert team["totals"]["hit_rate"] is not None
    page = _admin_page(pool, open_context, "/admin/usage?days=7")
    assert _tile(page, "Cache hit rate") == _percent(team["totals"]["hit_rate"])
    models = page.get_by_role("region", name="Usage by model")
    expect(models.locator("td.hit-rate")).to_have_text(_percent(team["by_model"][0]["hit_rate"]))
    accounts = page.get_by_role("region", name="Cache hit rate by account")
    expect(accounts.locator("tbody tr")).to_have_count(1)
    expect(accounts.locator("tbody tr th")).to_have_text("claude-1")
    expect(accounts.locator("td.hit-rate")).to_have_text(_percent(team["cache_by_account"][0]["hit_rate"]))
    _shoot(page, "team-usage-cache")
    accounts.screenshot(path=DOC_IMAGES / "cache-by-account.png")
    page.goto("/usage?days=7")  # My usage
    mine = page.request.get("/api/me/usage?days=7").json()
    expect(page.locator(".tile", has_text="Cache hit rate").locator(".tile-value")).to_have_text(
        _percent(mine["totals"]["hit_rate"])
    )
    page.goto("/admin/requests")
    rows = page.get_by_role("region", name="Requests table").locator("tbody tr")
    rows.get_by_role("button", name=f"Details of {edited}").click()
    details = page.get_by_role("dialog", name="Request details")
    expect(details.get_by_text("Cache miss reason", exact=True)).to_be_visible()
    expect(details).to_contain_text("prefix changed (not a continuation of the last turn)")
    details.screenshot(path=DOC_IMAGES / "request-cache-miss.png")
