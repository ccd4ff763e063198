"""Model aliases per group (ALIAS-1): the API, routing, model lists and records, against the simulator."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gateway_pool import Pool

BODY = {"model": "fast", "input": "say hi", "stream": True}
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "say hi"}]}]}


def _aliases(pool: Pool, *pairs: tuple[str, str], group: int = 1) -> Any:
    body = {"aliases": [{"alias": alias, "model": model} for alias, model in pairs]}
    return pool.admin.put(f"/api/groups/{group}/aliases", json=body)


def _record(pool: Pool, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        items = pool.admin.get("/api/requests", params={"request_id": request_id}).json()["items"]
        if items or time.monotonic() > deadline:
            assert items
            return dict(items[0])
        time.sleep(0.05)


def test_alias_1_a_group_starts_with_the_built_in_defaults(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    answer = pool.admin.get("/api/groups/1/aliases")
    assert answer.status_code == 200
    aliases = {entry["alias"]: entry for entry in answer.json()["aliases"]}
    assert aliases["gemini-3.8-flash"] == {
        "alias": "gemini-3.8-flash",
        "model": "gemini-3-flash",
        "builtin": True,
    }
    assert aliases["gemini-3-pro"]["model"] == "gemini-3-pro-high"
    assert answer.json()["defaults"] == [
        {"alias": entry["alias"], "model": entry["model"]} for entry in answer.json()["aliases"]
    ]
    assert pool.admin.get("/api/groups/99/aliases").status_code == 404


def test_alias_1_an_alias_is_routed_sent_listed_and_recorded_as_its_model(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    saved = _aliases(pool, ("fast", "gpt-5-codex"))
    assert saved.status_code == 200, saved.text
    assert {"alias": "fast", "model": "gpt-5-codex", "builtin": False} in saved.json()["aliases"]
    client = pool.client()
    answer = client.post("/v1/responses", json=BODY)
    assert answer.status_code == 200, answer.text
    upstream = pool.sim.requests(endpoint="codex.responses")[-1]
    assert upstream.body["model"] == "gpt-5-codex"
    record = _record(pool, answer.headers["x-request-id"])
    assert record["model"] == "fast" and record["served_model"] == "gpt-5-codex"
    # Listed with its model's provider, in both model lists.
    listed = {entry["id"]: entry["owned_by"] for entry in client.get("/v1/models").json()["data"]}
    assert listed["fast"] == "codex" and "gpt-5-codex" in listed
    assert client.get("/v1/models/fast").json()["owned_by"] == "codex"
    gemini = client.get("/v1beta/models").json()["models"]
    assert "models/fast" in {model["name"] for model in gemini}
    # Defaults whose model no account lists are not listed.
    assert "gemini-3.8-flash" not in listed
    # A chat call and a WebSocket-free translated call route the same way.
    chat = client.post(
        "/v1/chat/completions", json={"model": "fast", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert chat.status_code == 200, chat.text
    assert pool.sim.requests(endpoint="codex.responses")[-1].body["model"] == "gpt-5-codex"


def test_alias_1_a_plain_record_keeps_served_model_equal_to_model(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    answer = pool.client().post("/v1/responses", json=dict(BODY, model="gpt-5-codex"))
    record = _record(pool, answer.headers["x-request-id"])
    assert record["model"] == record["served_model"] == "gpt-5-codex"


def test_alias_1_defaults_route_the_gemini_clis_names(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="antigravity")
    client = pool.client()
    answer = client.post("/v1beta/models/gemini-3.8-flash:generateContent", json=GEMINI_BODY)
    assert answer.status_code == 200, answer.text
    sent = pool.sim.requests(endpoint="antigravity.generateContent")[-1].body["model"]
    assert sent == "gemini-3-flash"
    names = {model["name"] for model in client.get("/v1beta/models").json()["models"]}
    assert {"models/gemini-3.8-flash", "models/gemini-3-flash", "models/gemini-3-pro"} <= names


def test_alias_1_admins_override_and_remove_defaults(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="antigravity")
    defaults = [(e["alias"], e["model"]) for e in pool.admin.get("/api/groups/1/aliases").json()["defaults"]]
    kept = [(alias, model) for alias, model in defaults if alias not in ("gemini-3.8-flash", "gemini-3-pro")]
    saved = _aliases(pool, *kept, ("gemini-3-pro", "gemini-3-pro-low"))
    assert saved.status_code == 200, saved.text
    shown = {entry["alias"]: entry for entry in pool.admin.get("/api/groups/1/aliases").json()["aliases"]}
    assert "gemini-3.8-flash" not in shown
    assert shown["gemini-3-pro"] == {"alias": "gemini-3-pro", "model": "gemini-3-pro-low", "builtin": False}
    assert shown["gemini-3.5-flash"]["builtin"] is True
    client = pool.client()
    removed = client.post("/v1beta/models/gemini-3.8-flash:generateContent", json=GEMINI_BODY)
    assert removed.status_code == 404 and removed.json()["error"]["status"] == "NOT_FOUND"
    overridden = client.post("/v1beta/models/gemini-3-pro:generateContent", json=GEMINI_BODY)
    assert overridden.status_code == 200, overridden.text
    assert pool.sim.requests(endpoint="antigravity.generateContent")[-1].body["model"] == "gemini-3-pro-low"
    # Putting the defaults back restores them as built-in entries.
    assert _aliases(pool, *defaults).status_code == 200
    restored = pool.admin.get("/api/groups/1/aliases").json()["aliases"]
    assert all(entry["builtin"] for entry in restored) and len(restored) == len(defaults)
    entries = pool.admin.get("/api/audit", params={"action": "group.aliases"}).json()["items"]
    assert len(entries) == 2


def test_alias_1_refusals(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    shadow = _aliases(pool, ("gpt-5-codex", "gpt-5"))
    assert shadow.status_code == 409 and shadow.json()["error"]["code"] == "alias_shadows_model"
    chain = _aliases(pool, ("a", "b"), ("b", "gpt-5-codex"))
    assert chain.status_code == 409 and chain.json()["error"]["code"] == "alias_chain"
    itself = _aliases(pool, ("a", "a"))
    assert itself.status_code == 409 and itself.json()["error"]["code"] == "alias_chain"
    twice = _aliases(pool, ("a", "gpt-5-codex"), ("a", "gpt-5"))
    assert twice.status_code == 400
    too_many = _aliases(pool, *[(f"a{n}", "gpt-5-codex") for n in range(257)])
    assert too_many.status_code == 400
    too_long = _aliases(pool, ("a" * 129, "gpt-5-codex"))
    assert too_long.status_code == 400
    assert _aliases(pool, ("", "gpt-5-codex")).status_code == 400
    assert _aliases(pool, *[(f"a{n}", "gpt-5-codex") for n in range(256)]).status_code == 200
    assert _aliases(pool, ("x", "gpt-5-codex"), group=99).status_code == 404
    member, session = pool.gateway.member(pool.admin, "ann")
    assert session.get("/api/groups/1/aliases").status_code == 403
    assert session.put("/api/groups/1/aliases", json={"aliases": []}).status_code == 403
    del member


def test_alias_1_the_group_policy_applies_to_the_aliases_model(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    assert _aliases(pool, ("fast", "gpt-5-codex")).status_code == 200
    policy = pool.admin.patch("/api/groups/1", json={"model_policy": {"allow": ["gpt-5"]}})
    assert policy.status_code == 200, policy.text
    refused = pool.client().post("/v1/responses", json=BODY)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "model_not_allowed"
    assert "fast" not in {entry["id"] for entry in pool.client().get("/v1/models").json()["data"]}


def test_alias_1_aliases_belong_to_their_group(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    group = pool.admin.post("/api/groups", json={"name": "other"}).json()["id"]
    pool.admin.put(f"/api/groups/{group}/accounts", json={"account_ids": pool.account_ids})
    assert _aliases(pool, ("fast", "gpt-5-codex"), group=group).status_code == 200
    refused = pool.client().post("/v1/responses", json=BODY)  # the pool's key is of group 1
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "model_not_found"


def test_alias_1_names_with_a_provider_prefix_or_a_listed_model_s_case_variant_are_refused(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    for pair in (("codex/fast", "gpt-5-codex"), ("fast", "codex/gpt-5-codex")):
        refused = _aliases(pool, pair)
        assert refused.status_code == 400, (pair, refused.text)
        assert refused.json()["error"]["code"] == "invalid_request"
        assert "provider prefix" in refused.json()["error"]["message"]
    variant = _aliases(pool, ("GPT-5-Codex", "gpt-5"))
    assert variant.status_code == 400 and variant.json()["error"]["code"] == "alias_shadows_model"
    aliases = {entry["alias"] for entry in pool.admin.get("/api/groups/1/aliases").json()["aliases"]}
    assert not {"codex/fast", "fast", "GPT-5-Codex"} & aliases  # nothing was stored
    assert _aliases(pool, ("fast", "gpt-5-codex")).status_code == 200  # plain names still work
    for model in ("fast", "codex/fast"):  # the prefix narrows the providers; the alias still applies
        served = pool.client().post("/v1/responses", json={**BODY, "model": model})
        assert served.status_code == 200, (model, served.text)
