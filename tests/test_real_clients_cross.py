"""The real coding clients served by an account of ANOTHER provider (XLAT-1, XLAT-4, XLAT-5).

Each run: a group whose only account is of a provider the client does not speak; the simulator
answers the first model request with a tool call and the next with text, so the client executes
the tool (or is refused permission) and sends its result back — a tool round trip through the
translation, on one account, in the client's own protocol. Skipped only when a client is not
installed (``make clients``; ``.ci/run`` installs them).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from gateway_pool import Pool
from test_real_clients import ANSWER, GEMINI_MODELS, _claude, _client, _codex, _gemini

from sublane_sim import Behaviour

pytestmark = pytest.mark.e2e

TOOL_RESULT_MARKERS = {
    "codex": ("function_call_output", "custom_tool_call_output"),
    "claude": ("tool_result",),
    "antigravity": ("functionResponse",),
}


def _script_tool_round_trip(pool: Pool) -> None:
    account = pool.sim_accounts[0]
    pool.sim.script(account.id, Behaviour.ok(tool_call=True, text="Looking.", deltas=2))
    pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))


def _check_one_account_and_a_tool_round_trip(pool: Pool, client_protocol: tuple[str, ...]) -> None:
    served = [record for record in pool.finished if record.outcome == "success"]
    assert len(served) >= 2, [(r.protocol, r.outcome, r.error_code) for r in pool.finished]
    assert {record.account_id for record in served} == {pool.account_ids[0]}
    assert {record.protocol for record in served} <= set(client_protocol)  # XLAT-5: the client's
    provider = pool.sim_accounts[0].provider
    assert {record.provider for record in served} == {provider}  # XLAT-5: the account's
    bodies = [str(request.body) for request in pool.sim.requests(account_id=pool.sim_accounts[0].id)]
    assert any(marker in body for body in bodies for marker in TOOL_RESULT_MARKERS[provider]), bodies[-1][
        :2000
    ]
    assert pool.runtime.leases.total_in_flight() == 0


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_xlat_1_codex_cli_on_an_antigravity_account(
    make_pool: Callable[..., Pool], tmp_path: Path, websocket: bool
) -> None:
    _client("codex")
    pool = make_pool(provider="antigravity", account_options={"models": GEMINI_MODELS})
    _script_tool_round_trip(pool)
    result = _codex(pool, tmp_path, websocket=websocket, model="gemini-3-flash")
    assert result.returncode == 0, result.stderr[-3000:]
    assert ANSWER in result.stdout
    _check_one_account_and_a_tool_round_trip(pool, ("responses", "responses_ws"))


def test_xlat_1_gemini_cli_on_a_codex_account(make_pool: Callable[..., Pool], tmp_path: Path) -> None:
    _client("gemini")
    pool = make_pool(provider="codex")
    _script_tool_round_trip(pool)
    run = _gemini(pool, tmp_path, "-p", "say hi", "-m", "gpt-5-codex")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    _check_one_account_and_a_tool_round_trip(pool, ("gemini",))


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_xlat_1_codex_cli_on_a_claude_account(
    make_pool: Callable[..., Pool], tmp_path: Path, websocket: bool
) -> None:
    _client("codex")
    pool = make_pool(provider="claude")
    _script_tool_round_trip(pool)
    result = _codex(pool, tmp_path, websocket=websocket, model="claude-sonnet-5-5")
    assert result.returncode == 0, result.stderr[-3000:]
    assert ANSWER in result.stdout
    _check_one_account_and_a_tool_round_trip(pool, ("responses", "responses_ws"))


def test_xlat_1_claude_code_on_a_codex_account(make_pool: Callable[..., Pool], tmp_path: Path) -> None:
    _client("claude")
    pool = make_pool(provider="codex")
    _script_tool_round_trip(pool)
    run = _claude(pool, tmp_path, "-p", "--model", "gpt-5-codex", "say hi")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    _check_one_account_and_a_tool_round_trip(pool, ("messages",))


def test_xlat_1_gemini_cli_on_a_claude_account(make_pool: Callable[..., Pool], tmp_path: Path) -> None:
    _client("gemini")
    pool = make_pool(provider="claude")
    _script_tool_round_trip(pool)
    run = _gemini(pool, tmp_path, "-p", "say hi", "-m", "claude-sonnet-5-5")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    _check_one_account_and_a_tool_round_trip(pool, ("gemini",))


def test_xlat_1_claude_code_on_an_antigravity_account(make_pool: Callable[..., Pool], tmp_path: Path) -> None:
    _client("claude")
    pool = make_pool(provider="antigravity", account_options={"models": GEMINI_MODELS})
    _script_tool_round_trip(pool)
    run = _claude(pool, tmp_path, "-p", "--model", "gemini-3-flash", "say hi")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    _check_one_account_and_a_tool_round_trip(pool, ("messages",))


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
@pytest.mark.parametrize("provider", ["claude", "antigravity"])
def test_xlat_2_codex_cli_namespaced_sub_agent_tool_on_another_provider(
    make_pool: Callable[..., Pool], tmp_path: Path, websocket: bool, provider: str
) -> None:
    """The Codex CLI offers its sub-agent tools in a ``namespace`` tool (``multi_agent_v1``); another
    provider gets them as plain tools, and a call of one must come back with its namespace, or the
    CLI answers "unsupported call: close_agent" instead of running it."""
    _client("codex")
    options = {"models": GEMINI_MODELS} if provider == "antigravity" else {}
    pool = make_pool(provider=provider, account_options=options)
    account = pool.sim_accounts[0]
    pool.sim.script(
        account.id, Behaviour.ok(tool_call=True, tool_name="close_agent", text="Closing.", deltas=2)
    )
    pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    model = "gemini-3-flash" if provider == "antigravity" else "claude-sonnet-5-5"
    result = _codex(pool, tmp_path, websocket=websocket, model=model)
    assert result.returncode == 0, result.stderr[-3000:]
    assert ANSWER in result.stdout
    bodies = [str(request.body) for request in pool.sim.requests(account_id=account.id)]
    assert not any("unsupported call" in body for body in bodies), bodies[-1][:3000]
    assert any(marker in body for body in bodies for marker in TOOL_RESULT_MARKERS[provider]), bodies[-1][
        :2000
    ]
    _check_one_account_and_a_tool_round_trip(pool, ("responses", "responses_ws"))
