"""Claude Code's server-side checks through SubLane (CLIENT-4).

Claude Code's auto mode adds its beta (``dangerous-tool-use-2026-09-03``) and a top-level
``safeguards`` field to a Messages request and reads ``safeguard_results`` from the answer: top-level
in a JSON message, in the ``message_delta`` event's ``delta`` when streamed (its own code; see
docs/clients.md). On a native Claude call all three pass unchanged; on a translated call the field
reaches no other upstream and no verdict appears that the upstream did not give.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from gateway_pool import Pool

from sublane_sim import Behaviour, parse_sse

AUTO_MODE_BETA = "dangerous-tool-use-2026-09-03"
# The client's beta value as Claude Code writes it, spaces and all, on two header lines.
CLIENT_BETAS = [
    ("anthropic-beta", f"claude-code-20250219, {AUTO_MODE_BETA}"),
    ("anthropic-beta", "x-later-2026"),
]
# Claude Code's shape (a list of {"type":"dangerous_tool_use","classifier_context":…}), written as
# its JSON.stringify writes it: compact, raw UTF-8, shortest number forms. SubLane re-encodes the
# body it parsed, so a client's \\u-escapes or exponent forms would arrive as equal values, not bytes.
SAFEGUARDS = (
    '[{"type":"dangerous_tool_use","classifier_context":{"user_intent":"tidy the repo – café \\"now\\"",'
    '"rules":["no rm -rf /","\\n"],"budget":0.25,"turns":150,"strict":true,"extra":null}}]'
).encode()
VERDICTS = [
    {
        "type": "dangerous_tool_use",
        "status": {
            "type": "available",
            "tool_uses": {"toolu_01": {"type": "evaluated", "outcome": "allowed"}},
        },
    }
]


def _body(model: str, *, stream: bool) -> bytes:
    """A Messages body in compact JSON as Claude Code sends it, ``safeguards`` spliced in as bytes."""
    head = json.dumps(
        {
            "model": model,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "tidy up"}],
            "stream": stream,
        },
        separators=(",", ":"),
    ).encode()
    return head[:-1] + b',"safeguards":' + SAFEGUARDS + b"}"


def _post(pool: Pool, body: bytes) -> tuple[int, bytes]:
    headers = [
        ("x-api-key", pool.key),
        ("anthropic-version", "2023-06-01"),
        ("content-type", "application/json"),
        *CLIENT_BETAS,
    ]
    with pool.gateway.client() as client:
        response = client.post("/v1/messages?beta=true", content=body, headers=headers)
    return response.status_code, response.content


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_client_4_native_claude_passes_safeguards_betas_and_results_byte_exact(
    make_pool: Callable[..., Pool], stream: bool
) -> None:
    pool = make_pool(provider="claude")
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(safeguard_results=VERDICTS))
    status, answer = _post(pool, _body("claude-opus-5-5", stream=stream))
    assert status == 200, answer
    (upstream,) = pool.sim.requests(endpoint="claude.messages")
    # The field's bytes as the client wrote them (escapes, number form), every beta as sent, in order.
    assert b'"safeguards":' + SAFEGUARDS in upstream.raw_body
    assert upstream.headers["anthropic-beta"] == (
        f"claude-code-20250219, {AUTO_MODE_BETA},x-later-2026,oauth-2025-04-20"
    )
    verdict_bytes = b'"safeguard_results":' + json.dumps(VERDICTS, separators=(",", ":")).encode()
    assert verdict_bytes in answer  # unchanged, where the upstream put it
    if stream:
        deltas = [e.data for e in parse_sse(answer.decode()) if e.data.get("type") == "message_delta"]
        assert deltas[-1]["delta"]["safeguard_results"] == VERDICTS
    else:
        assert json.loads(answer)["safeguard_results"] == VERDICTS


def test_client_4_native_claude_without_safeguards_gets_no_verdict(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="claude")
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(safeguard_results=VERDICTS))
    body = {"model": "claude-opus-5-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    status, answer = _post(pool, json.dumps(body).encode())
    assert status == 200 and b"safeguard_results" not in answer  # nothing asked, nothing answered


@pytest.mark.parametrize(
    ("provider", "model"),
    [("codex", "gpt-5-codex"), ("antigravity", "gemini-3-flash")],
    ids=["codex", "antigravity"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_client_4_translated_call_leaks_no_safeguards_and_invents_no_verdict(
    make_pool: Callable[..., Pool], provider: str, model: str, stream: bool
) -> None:
    pool = make_pool(provider=provider)
    status, answer = _post(pool, _body(model, stream=stream))
    assert status == 200, answer
    (upstream,) = [r for r in pool.sim.requests() if r.model is not None]
    assert b"safeguards" not in upstream.raw_body and b"dangerous_tool_use" not in upstream.raw_body
    assert AUTO_MODE_BETA not in json.dumps(upstream.headers)
    assert b"safeguard_results" not in answer  # no verdict the upstream did not give


def test_client_4_an_upstream_refusal_naming_safeguards_reaches_the_client_as_sent(
    make_pool: Callable[..., Pool],
) -> None:
    """Claude Code turns its server check off on a 400 whose message names ``safeguards`` (its gateway
    guide): the message must arrive as Anthropic wrote it, and the account stays usable."""
    pool = make_pool(provider="claude")
    message = "safeguards: Extra inputs are not permitted"
    refusal = Behaviour.error(400, error_code="invalid_request_error", error_message=message)
    pool.sim.script(pool.sim_accounts[0].id, refusal)
    status, answer = _post(pool, _body("claude-opus-5-5", stream=True))
    assert status == 400
    error = json.loads(answer)["error"]
    assert error["type"] == "invalid_request_error" and error["message"] == message
    status, _ = _post(pool, _body("claude-opus-5-5", stream=False))
    assert status == 200  # a refused field is the request's fault, not the account's
