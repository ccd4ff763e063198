"""Cost (SPEC §32 COST-1, 2, 3, 5, 6) through a real gateway on loopback, wired to the upstream
simulator: prices, each record's cost checked by hand for each provider's usage shape, cost in the
summaries, subscription value, rolling budgets and the key-authenticated usage route."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from gateway_pool import Pool

from sublane_gateway.testing import MEMBER_PASSWORD
from sublane_sim import Behaviour

CODEX_BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": False}
MILLION = 1_000_000


def _records(pool: Pool) -> list[dict[str, Any]]:
    """The admin's request records, oldest first."""
    response = pool.admin.get("/api/requests")
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items[::-1]


def _cost(usage: dict[str, Any], prices: dict[str, float], *, hour: bool = False) -> float:
    """COST-1's formula by hand, from a record's counts and prices per million tokens."""
    written = usage["cache_write_tokens"] or 0
    cached = usage["cached_tokens"] or 0
    write_price = prices["cache_write_1h" if hour else "cache_write_5m"]
    return (
        (usage["input_tokens"] - cached - written) * prices["input"]
        + cached * prices["cached_input"]
        + written * write_price
        + usage["output_tokens"] * prices["output"]
    ) / MILLION


# --- COST-1: prices --------------------------------------------------------------------------


def test_cost_1_prices_are_listed_overridden_audited_and_validated(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    assert pool.client().post("/v1/responses", json=CODEX_BODY).status_code == 200
    listed = pool.admin.get("/api/prices").json()
    assert listed["built_in"] == {"library": "genai-prices", "version": "0.2.3", "as_of": "2026-11-10"}
    codex = {item["model"]: item for item in listed["items"]}["gpt-5-codex"]
    # OpenAI's list price of gpt-5-codex, dollars per million tokens
    assert codex == {
        "model": "gpt-5-codex", "input": 1.25, "cached_input": 0.125, "cache_write_5m": 1.25,
        "cache_write_1h": 1.25, "output": 10, "source": "built-in", "as_of": "2026-11-10",
    }  # fmt: skip
    body = {"input": 2, "cached_input": 0.5, "output": 8}
    answer = pool.admin.put("/api/prices/gpt-5-codex", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["source"] == "admin" and answer.json()["cache_write_5m"] is None
    assert answer.json()["as_of"] == dt.datetime.now(dt.UTC).date().isoformat()
    house = pool.admin.put("/api/prices/house/model-1", json={"input": 0.1, "output": 0.2})
    assert house.status_code == 200 and house.json()["model"] == "house/model-1"
    items = {item["model"]: item for item in pool.admin.get("/api/prices").json()["items"]}
    assert items["gpt-5-codex"]["input"] == 2 and items["house/model-1"]["source"] == "admin"
    for bad in ({"input": 1}, {"input": -1, "output": 1}, {"input": "1e999", "output": 1},
                {"input": 1, "output": 1, "discount": 3}, {"input": True, "output": 1}, [1, 2]):  # fmt: skip
        refused = pool.admin.put("/api/prices/gpt-5-codex", json=bad)
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.json()["error"]["code"] == "invalid_request"
    items = {item["model"]: item for item in pool.admin.get("/api/prices").json()["items"]}
    assert items["gpt-5-codex"]["input"] == 2  # unchanged by the refusals
    _user, _key = pool.member_key("bob")
    bob = pool.gateway.login("bob", MEMBER_PASSWORD)
    assert bob.put("/api/prices/gpt-5-codex", json=body).status_code == 403
    assert bob.delete("/api/prices/gpt-5-codex").status_code == 403
    assert pool.admin.delete("/api/prices/gpt-5-codex").status_code == 204
    assert pool.admin.delete("/api/prices/gpt-5-codex").status_code == 404
    items = {item["model"]: item for item in pool.admin.get("/api/prices").json()["items"]}
    assert items["gpt-5-codex"]["source"] == "built-in"
    audit = pool.admin.get("/api/audit").json()["items"]
    actions = [(entry["action"], (entry.get("summary") or {}).get("model")) for entry in audit]
    assert ("price.set", "gpt-5-codex") in actions and ("price.delete", "gpt-5-codex") in actions


# --- COST-2: each record's cost --------------------------------------------------------------


def test_cost_2_cost_matches_hand_computation_codex(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.ok(input_tokens=10_000, cached_tokens=4_000, output_tokens=500)
    )
    assert pool.client().post("/v1/responses", json=CODEX_BODY).status_code == 200
    usage = _records(pool)[-1]["usage"]
    assert (usage["input_tokens"], usage["cached_tokens"], usage["output_tokens"]) == (10_000, 4_000, 500)
    # the built-in gpt-5-codex prices: 1.25 input, 0.125 cached input, 10 output
    assert usage["cost_usd"] == pytest.approx((6_000 * 1.25 + 4_000 * 0.125 + 500 * 10) / MILLION)
    assert usage["cost_usd"] == pytest.approx(0.013)
    # an unpriced model: its cost is null, never 0, and its tokens are counted as unpriced
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(input_tokens=300, output_tokens=30))
    spark = {**CODEX_BODY, "model": "gpt-5.3-codex-spark"}
    assert pool.client().post("/v1/responses", json=spark).status_code == 200
    assert _records(pool)[-1]["usage"]["cost_usd"] is None
    team = pool.admin.get("/api/usage?days=1").json()
    assert team["totals"]["cost_usd"] == pytest.approx(0.013) and team["totals"]["unpriced_tokens"] == 330
    by_model = {row["model"]: row for row in team["by_model"]}
    assert by_model["gpt-5.3-codex-spark"]["cost_usd"] is None
    assert by_model["gpt-5-codex"]["cost_usd"] == pytest.approx(0.013)
    assert team["by_member"][0]["cost_usd"] == pytest.approx(0.013)
    assert team["by_provider"][0]["cost_usd"] == pytest.approx(0.013)
    assert team["by_group"][0]["cost_usd"] == pytest.approx(0.013)
    [account] = team["by_account"]
    assert (account["account_id"], account["provider"], account["unpriced_tokens"]) == (
        pool.account_ids[0], "codex", 330,
    )  # fmt: skip
    assert account["cost_usd"] == pytest.approx(0.013)
    assert team["by_day"][-1]["cost_usd"] == pytest.approx(0.013)
    mine = pool.admin.get("/api/me/usage?days=1").json()
    assert mine["totals"]["cost_usd"] == pytest.approx(0.013) and "by_account" not in mine


CLAUDE_PRICES = {"input": 3, "cached_input": 0.3, "cache_write_5m": 3.75, "cache_write_1h": 6, "output": 15}


def _claude_body(system: str, ttl: str | None) -> dict[str, Any]:
    control: dict[str, Any] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": [{"type": "text", "text": system * 200, "cache_control": control}],
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_cost_2_cost_matches_hand_computation_claude_5m_1h_writes(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="claude")
    assert pool.admin.put("/api/prices/claude-sonnet-4-6", json=CLAUDE_PRICES).status_code == 200
    client = pool.gateway.client(headers={"x-api-key": pool.key})
    for body in (_claude_body("five minutes. ", None), _claude_body("one hour. ", "1h"),
                 _claude_body("five minutes. ", None)):  # fmt: skip
        response = client.post("/v1/messages", json=body)
        assert response.status_code == 200, response.text
    five, hour, read = (record["usage"] for record in _records(pool))
    assert five["cache_write_tokens"] > 0 and hour["cache_write_tokens"] > 0
    assert five["cost_usd"] == pytest.approx(_cost(five, CLAUDE_PRICES), abs=1e-9)
    assert hour["cost_usd"] == pytest.approx(_cost(hour, CLAUDE_PRICES, hour=True), abs=1e-9)
    assert hour["cost_usd"] != pytest.approx(_cost(hour, CLAUDE_PRICES), abs=1e-9)  # the 1 h price counted
    assert read["cached_tokens"] > 0 and read["cache_write_tokens"] == 0
    assert read["cost_usd"] == pytest.approx(_cost(read, CLAUDE_PRICES), abs=1e-9)


def test_cost_2_cost_matches_hand_computation_gemini_cached(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="antigravity")
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.ok(input_tokens=8_000, cached_tokens=3_000, output_tokens=400)
    )
    client = pool.gateway.client(headers={"x-goog-api-key": pool.key})
    body = {"contents": [{"role": "user", "parts": [{"text": "say hi"}]}]}
    response = client.post("/v1beta/models/gemini-3-flash:generateContent", json=body)
    assert response.status_code == 200, response.text
    usage = _records(pool)[-1]["usage"]
    assert (usage["input_tokens"], usage["cached_tokens"], usage["output_tokens"]) == (8_000, 3_000, 400)
    # the built-in Gemini 3 Flash prices: 0.5 input, 0.05 cached input, 3 output
    assert usage["cost_usd"] == pytest.approx((5_000 * 0.5 + 3_000 * 0.05 + 400 * 3) / MILLION)


# --- COST-3: subscription value --------------------------------------------------------------


def test_cost_3_value_served_against_the_subscription_price(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    first, second = pool.account_ids
    answer = pool.admin.patch(f"/api/accounts/{first}", json={"monthly_price_usd": 0.026})
    assert answer.status_code == 200 and answer.json()["monthly_price_usd"] == 0.026
    for bad in (-1, "20", True):
        refused = pool.admin.patch(f"/api/accounts/{first}", json={"monthly_price_usd": bad})
        assert refused.status_code == 400, refused.text
    for account in pool.sim_accounts:
        pool.sim.script(account.id, Behaviour.ok(input_tokens=10_000, cached_tokens=4_000, output_tokens=500))
    pool.gateway.app.state.client.scheduler  # noqa: B018 - the pool rotates; find who served
    assert pool.client().post("/v1/responses", json=CODEX_BODY).status_code == 200
    served = _records(pool)[-1]["account_id"]
    if served != first:  # make the priced account the one that served
        assert pool.admin.patch(f"/api/accounts/{first}", json={"monthly_price_usd": None}).status_code == 200
        assert (
            pool.admin.patch(f"/api/accounts/{served}", json={"monthly_price_usd": 0.026}).status_code == 200
        )
        first, second = served, first
    month = dt.datetime.now(dt.UTC).strftime("%Y-%m")
    value = pool.admin.get(f"/api/usage/value?month={month}").json()
    assert value["month"] == month
    accounts = {row["account_id"]: row for row in value["accounts"]}
    assert accounts[first]["cost_usd"] == pytest.approx(0.013) and accounts[first]["ratio"] == 0.5
    assert accounts[first]["monthly_price_usd"] == 0.026
    assert accounts[second]["cost_usd"] == 0 and accounts[second]["ratio"] is None  # no price: no ratio
    [codex] = value["providers"]
    assert (codex["provider"], codex["accounts"], codex["ratio"]) == ("codex", 2, 0.5)
    assert pool.admin.get("/api/usage/value").json()["month"] == month  # this month by default
    empty = pool.admin.get("/api/usage/value?month=2001-01").json()
    assert {row["account_id"]: row["cost_usd"] for row in empty["accounts"]} == {first: 0, second: 0}
    for bad in ("2026-13", "26-01", "2026-1", "now"):
        assert pool.admin.get(f"/api/usage/value?month={bad}").status_code == 400
    _user, _key = pool.member_key("bob")
    assert pool.gateway.login("bob", MEMBER_PASSWORD).get("/api/usage/value").status_code == 403


def test_cost_3_value_of_the_last_representable_month_is_no_500(make_pool: Callable[..., Pool]) -> None:
    """Every month the route accepts (up to 9999-12, whose end is past the year 9999) answers."""
    pool = make_pool()
    for month in ("9999-12", "1970-01"):
        answer = pool.admin.get(f"/api/usage/value?month={month}")
        assert answer.status_code == 200, answer.text
        assert answer.json()["month"] == month


# --- COST-5: rolling windows and dollars -----------------------------------------------------


def _rules(pool: Pool, user_id: int, *rules: dict[str, Any]) -> httpx.Response:
    return pool.admin.put(f"/api/users/{user_id}/budgets", json={"rules": list(rules)})


def _spend(pool: Pool, key: str, **counts: int) -> None:
    for account in pool.sim_accounts:
        pool.sim.script(account.id, Behaviour.ok(**counts))
    response = pool.client(key).post("/v1/responses", json=CODEX_BODY)
    assert response.status_code == 200, response.text


def test_cost_5_rolling_token_window_refuses_until_enough_usage_left_it(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    bob, key = pool.member_key("bob")
    _spend(pool, key, input_tokens=300, output_tokens=0)
    first = time.time()
    time.sleep(1.0)
    _spend(pool, key, input_tokens=300, output_tokens=0)
    # set after the calls: a rolling rule counts what the window already holds
    answer = _rules(pool, bob["id"], {"period": "5h", "limit": 500})
    assert answer.status_code == 200, answer.text
    [rule] = answer.json()["rules"]
    assert (rule["period"], rule["unit"], rule["used"], rule["exceeded"]) == ("5h", "tokens", 600, True)
    refused = pool.client(key).post("/v1/responses", json=CODEX_BODY)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "token_budget_exceeded"
    # the first call leaving the window is enough (300 < 500): then, 5 hours after it
    expected = first + 5 * 3600 - time.time()
    assert expected - 3 <= int(refused.headers["retry-after"]) <= expected + 1
    assert abs(int(refused.headers["x-token-budget-reset"]) - (first + 5 * 3600)) <= 2
    assert _rules(pool, bob["id"], {"period": "day", "limit": 500}).json()["rules"][0]["unit"] == "tokens"


def test_cost_5_dollar_budget_counts_the_cost_of_calls(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    bob, key = pool.member_key("bob")
    for bad in ({"period": "5h", "limit": 1.5}, {"period": "7d", "unit": "usd", "limit": 0},
                {"period": "2h", "limit": 5}, {"period": "7d", "unit": "eur", "limit": 5},
                {"period": "7d", "unit": "usd", "limit": "1"}):  # fmt: skip
        assert _rules(pool, bob["id"], bad).status_code == 400, bad
    answer = _rules(pool, bob["id"], {"period": "7d", "unit": "usd", "limit": 0.02})
    assert answer.status_code == 200, answer.text
    assert answer.json()["rules"][0]["limit"] == 0.02
    _spend(pool, key, input_tokens=10_000, cached_tokens=4_000, output_tokens=500)  # $0.013
    _spend(pool, key, input_tokens=10_000, cached_tokens=4_000, output_tokens=500)  # begun at $0.013 < $0.02
    refused = pool.client(key).post("/v1/responses", json=CODEX_BODY)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "token_budget_exceeded"
    assert "$0.02 per 7 days" in refused.json()["error"]["message"]
    [rule] = pool.admin.get(f"/api/users/{bob['id']}/budgets").json()["rules"]
    assert rule["used"] >= 0.02 and rule["exceeded"] is True
    # a month rule in dollars counts the same cost
    month = _rules(pool, bob["id"], {"period": "month", "unit": "usd", "limit": 0.5}).json()["rules"][0]
    assert month["used"] == pytest.approx(_records_cost(pool, bob["id"]), abs=1e-6)
    assert pool.client(key).post("/v1/responses", json=CODEX_BODY).status_code == 200


def _records_cost(pool: Pool, user_id: int) -> float:
    return sum(record["usage"]["cost_usd"] or 0 for record in _records(pool) if record["user_id"] == user_id)


# --- COST-6: usage for a key -----------------------------------------------------------------


def test_cost_6_usage_for_any_key_header(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    bob, key = pool.member_key("bob")
    _spend(pool, key, input_tokens=10_000, cached_tokens=4_000, output_tokens=500)
    assert _rules(
        pool, bob["id"], {"period": "5h", "limit": 100_000}, {"period": "month", "unit": "usd", "limit": 5}
    )
    for headers in ({"authorization": f"Bearer {key}"}, {"x-api-key": key}, {"x-goog-api-key": key}):
        answer = pool.gateway.client(headers=headers).get("/v1/usage")
        assert answer.status_code == 200, answer.text
        usage = answer.json()
        assert usage["member"] == {"id": bob["id"], "username": "bob"}
        assert usage["key"]["name"] == "member" and usage["key"]["group_id"] == 1
        assert set(usage["windows"]) == {"5h", "7d", "day", "month"}
        for window in usage["windows"].values():
            assert window["tokens"] == 10_500 and window["cost_usd"] == pytest.approx(0.013)
        assert usage["windows"]["5h"]["limit"] == {"tokens": 100_000, "cost_usd": None}
        assert usage["windows"]["month"]["limit"] == {"tokens": None, "cost_usd": 5}
        assert usage["windows"]["7d"]["limit"] == {"tokens": None, "cost_usd": None}
        [room] = usage["pool"]
        assert (room["provider"], room["accounts_total"]) == ("codex", 1) and "account_id" not in room
    admins = pool.client().get("/v1/usage").json()  # another member's key: only their own use
    assert admins["member"]["username"] == "admin" and admins["windows"]["day"]["tokens"] == 0
    refused = pool.gateway.client(headers={"authorization": "Bearer sk-nope"}).get("/v1/usage")
    assert refused.status_code == 401 and "error" in refused.json()
    assert pool.gateway.client().get("/v1/usage").status_code == 401


def test_cost_6_the_documented_status_line_script_runs_and_prints(
    make_pool: Callable[..., Pool], tmp_path: Any
) -> None:
    import re
    import shutil
    import subprocess
    from pathlib import Path

    if shutil.which("jq") is None or shutil.which("curl") is None:
        pytest.skip("the status line script needs curl and jq")
    text = (Path(__file__).parents[1] / "docs" / "cost.md").read_text()
    script = re.search(r"<!-- statusline -->\n```sh\n(.*?)```", text, re.S)
    assert script is not None
    path = tmp_path / "sublane-status.sh"
    path.write_text(script.group(1))
    path.chmod(0o755)
    pool = make_pool()
    bob, key = pool.member_key("bob")
    _spend(pool, key, input_tokens=10_000, cached_tokens=4_000, output_tokens=500)
    assert _rules(pool, bob["id"], {"period": "5h", "limit": 100_000}).status_code == 200
    env = {"PATH": "/usr/bin:/bin", "SUBLANE_URL": pool.gateway.url, "SUBLANE_API_KEY": key}
    session = '{"session_id": "x", "model": {"display_name": "Opus"}}'  # what Claude Code sends
    done = subprocess.run(
        [str(path)], input=session, env=env, capture_output=True, text=True, timeout=20, check=True
    )
    assert done.stdout.strip() == "SubLane bob · 5h 10.5k/100k $0.01 · month 10.5k $0.01"
    env["SUBLANE_API_KEY"] = "sk-wrong"
    done = subprocess.run(
        [str(path)], input=session, env=env, capture_output=True, text=True, timeout=20, check=True
    )
    assert done.stdout.strip() == "SubLane: usage unavailable"
