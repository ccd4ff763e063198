"""The real coding clients through SubLane to the simulator: the Codex CLI (npm ``@openai/codex``)
over HTTP and WebSocket, Claude Code, and the Gemini CLI (npm ``@google/gemini-cli``).

Skipped only when the client is not installed (``make clients``; ``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from gateway_pool import Pool

from sublane_sim import Behaviour

REPO = Path(__file__).resolve().parents[1]
NODE_BIN = REPO / ".cache" / "node-clients" / "node_modules" / ".bin"
ANSWER = "Hello through SubLane"

pytestmark = pytest.mark.e2e


def _client(name: str) -> Path:
    binary = NODE_BIN / name
    if shutil.which("npm") is None or not binary.exists():
        pytest.skip(f"{name} is not installed under {NODE_BIN} (make clients)")
    return binary


def _codex(
    pool: Pool, home: Path, *, websocket: bool, prompt: str = "say hi", model: str = "gpt-5-codex"
) -> subprocess.CompletedProcess[str]:
    return codex_exec(pool.gateway.url, pool.key, home, websocket=websocket, prompt=prompt, model=model)


def codex_exec(
    url: str,
    key: str,
    home: Path,
    *,
    websocket: bool,
    prompt: str = "say hi",
    model: str | None = "gpt-5-codex",
) -> subprocess.CompletedProcess[str]:
    """``codex exec`` with SubLane at ``url`` as its model provider, ``key`` its key (``model``
    ``None``: the CLI's own default)."""
    args = [
        str(_client("codex")),
        "exec",
        "--skip-git-repo-check",
        "-c", "model_provider=sl",
        "-c", 'model_providers.sl.name="sl"',
        "-c", f'model_providers.sl.base_url="{url}/v1"',
        "-c", 'model_providers.sl.wire_api="responses"',
        "-c", 'model_providers.sl.env_key="SUBLANE_KEY"',
    ]  # fmt: skip
    if model is not None:
        args += ["-m", model]
    if websocket:
        args += ["-c", "model_providers.sl.supports_websockets=true"]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "dumb",
        "SUBLANE_KEY": key,
    }
    return subprocess.run(
        [*args, prompt],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_codex_cli_completes_a_prompt_through_sublane(
    make_pool: Callable[..., Pool], tmp_path: Path, websocket: bool
) -> None:
    _client("codex")
    pool = make_pool()
    account = pool.sim_accounts[0]
    pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    result = _codex(pool, tmp_path, websocket=websocket)
    assert result.returncode == 0, result.stderr[-3000:]
    assert ANSWER in result.stdout
    endpoints = [record.endpoint for record in pool.sim.requests(account_id=account.id)]
    if websocket:
        assert "codex.ws.prewarm" in endpoints and "codex.ws.turn" in endpoints
        assert "codex.responses" not in endpoints  # no fallback to HTTP
    else:
        assert "codex.responses" in endpoints
    turns = [record for record in pool.finished if record.outcome == "success"]
    assert len(turns) == 1  # the prewarm is not recorded
    assert turns[0].protocol == ("responses_ws" if websocket else "responses")
    upstream = pool.sim.requests(account_id=account.id)[-1]
    assert upstream.headers["chatgpt-account-id"] == account.account_id
    assert upstream.body["prompt_cache_key"]
    assert pool.runtime.leases.total_in_flight() == 0


def _run_cli(name: str, home: Path, args: tuple[str, ...], **env: str) -> subprocess.CompletedProcess[str]:
    """Run an npm-installed CLI with a scratch ``HOME`` and only the given environment."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TERM": "dumb"}
    return subprocess.run(
        [str(_client(name)), *args],
        env=base | env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


def _claude(pool: Pool, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run_cli("claude", home, args, ANTHROPIC_BASE_URL=pool.gateway.url, ANTHROPIC_API_KEY=pool.key)


def test_claude_code_runs_through_sublane_and_a_session_stays_on_one_account(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    _client("claude")
    pool = make_pool(provider="claude", accounts=2)
    for account in pool.sim_accounts:
        pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    session = str(uuid.uuid4())
    first = _claude(pool, tmp_path, "-p", "--session-id", session, "say hi")
    assert first.returncode == 0, first.stderr[-3000:]
    assert ANSWER in first.stdout
    second = _claude(pool, tmp_path, "-p", "--resume", session, "say hi again")
    assert second.returncode == 0, second.stderr[-3000:]
    assert ANSWER in second.stdout
    turns = [
        record for record in pool.finished if record.operation == "messages" and record.outcome == "success"
    ]
    assert len(turns) >= 2
    assert len({record.account_id for record in turns}) == 1  # both runs of the session: one account
    upstream = pool.sim.requests(endpoint="claude.messages")[-1]
    assert "oauth-2025-04-20" in upstream.headers["anthropic-beta"]
    assert upstream.headers["x-claude-code-session-id"] == session
    assert pool.runtime.leases.total_in_flight() == 0


# Ids Antigravity lists (PROTOCOLS.md §3.9); what the Gemini CLI sends instead (gemini-3.8-flash for
# "-m gemini-3-flash") reaches them through the built-in aliases (ALIAS-1), never through a
# simulator taught the rewritten names.
GEMINI_MODELS = ("gemini-3-flash", "gemini-3-pro-high", "gemini-3-pro-low", "gemini-3.1-pro-high")


def _gemini(pool: Pool, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return gemini_run(pool.gateway.url, pool.key, home, *args)


def gemini_run(url: str, key: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The Gemini CLI with SubLane at ``url`` as its Gemini API, ``key`` its API key."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    return _run_cli(
        "gemini",
        home,
        args,
        GOOGLE_GEMINI_BASE_URL=url,
        GEMINI_API_KEY=key,
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )


def test_gemini_cli_completes_a_prompt_served_by_a_pooled_antigravity_account(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    _client("gemini")
    pool = make_pool(provider="antigravity", account_options={"models": GEMINI_MODELS})
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=5))
    run = _gemini(pool, tmp_path, "-p", "say hi", "-m", "gemini-3-flash")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    served = [r for r in pool.finished if r.protocol == "gemini" and r.outcome == "success"]
    assert served and all(record.provider == "antigravity" for record in served)
    assert {(r.model, r.served_model) for r in served} == {("gemini-3.8-flash", "gemini-3-flash")}
    upstream = pool.sim.requests(endpoint="antigravity.streamGenerateContent")
    assert upstream and upstream[-1].body["project"] == pool.sim_accounts[0].project_id
    assert pool.runtime.leases.total_in_flight() == 0


def test_cat_2_gemini_cli_with_a_thinking_level_in_parentheses(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    _client("gemini")
    pool = make_pool(provider="antigravity")  # the simulator lists gemini-3-pro-high, not "(high)"
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=5))
    run = _gemini(pool, tmp_path, "-p", "say hi", "-m", "gemini-3-pro(high)")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    calls = ("antigravity.generateContent", "antigravity.streamGenerateContent")
    sent = [r.body["model"] for r in pool.sim.requests() if r.endpoint in calls]
    assert sent and set(sent) <= {"gemini-3-pro-high", "gemini-3-flash"}, (
        sent
    )  # the CLI's helpers may use flash
    assert "gemini-3-pro-high" in sent


def _limited(pool: Pool) -> str:
    """Rate-limit the pool's first account for good; its simulator id."""
    limited = pool.sim_accounts[0]
    pool.sim.set_default(limited.id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="60"))
    for account in pool.sim_accounts[1:]:
        pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    return limited.id


def test_fail_1_claude_code_with_the_first_account_rate_limited_is_served_by_the_second(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    _client("claude")
    pool = make_pool(provider="claude", accounts=2)
    limited = _limited(pool)
    run = _claude(pool, tmp_path, "-p", "--session-id", str(uuid.uuid4()), "say hi")
    assert run.returncode == 0, run.stderr[-3000:]
    assert ANSWER in run.stdout
    assert [r for r in pool.sim.requests(endpoint="claude.messages") if r.account_id == limited]
    assert all(record.outcome == "success" for record in pool.finished), pool.finished
    moved = [record for record in pool.finished if record.routing and "attempts" in record.routing]
    assert len(moved) == 1  # the account cooled after its 429: later calls never tried it
    assert pool.runtime.leases.total_in_flight() == 0


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_fail_1_codex_cli_on_a_new_conversation_is_served_by_the_second_account(
    make_pool: Callable[..., Pool], tmp_path: Path, websocket: bool
) -> None:
    _client("codex")
    pool = make_pool(accounts=2)
    limited = _limited(pool)
    result = _codex(pool, tmp_path, websocket=websocket)
    assert result.returncode == 0, result.stderr[-3000:]
    assert ANSWER in result.stdout
    assert pool.sim.requests(account_id=limited)  # it was tried, and left
    turns = [record for record in pool.finished if record.outcome == "success"]
    assert len(turns) == 1 and turns[0].account_id == pool.account_ids[1]
    assert all(record.outcome == "success" for record in pool.finished), pool.finished
    assert pool.runtime.leases.total_in_flight() == 0


@pytest.mark.parametrize(
    ("asked", "sent", "served"),
    [
        ("gemini-3-flash", "gemini-3.8-flash", "gemini-3-flash"),
        ("gemini-3-pro", "gemini-3-pro", "gemini-3-pro-high"),
        ("pro", "gemini-3.1-pro-preview", "gemini-3.1-pro-high"),
    ],
)
def test_alias_1_gemini_cli_model_names_work_out_of_the_box(
    make_pool: Callable[..., Pool], tmp_path: Path, asked: str, sent: str, served: str
) -> None:
    """The Gemini CLI rewrites ``-m`` names before sending them; Antigravity lists none of the
    rewritten ones (the simulator lists only its real ids). The built-in aliases route them."""
    _client("gemini")
    pool = make_pool(provider="antigravity")  # the simulator's own list: Antigravity's real ids
    assert sent not in pool.sim.account_state(pool.sim_accounts[0].id)["models"]
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=5))
    run = _gemini(pool, tmp_path, "-p", "say hi", "-m", asked)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    records = [r for r in pool.finished if r.model == sent]
    assert records and all(r.outcome == "success" and r.served_model == served for r in records)
    upstream = [r.body["model"] for r in pool.sim.requests(endpoint="antigravity.streamGenerateContent")]
    assert served in upstream and sent not in upstream


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_egress_1_codex_cli_through_an_account_behind_a_socks5_proxy(
    make_pool: Callable[..., Pool], tmp_path: Path, websocket: bool
) -> None:
    """The Codex CLI as a user runs it; its account leaves through microsocks, which the simulator
    sees as 127.0.0.2 (the proxy's outgoing address) for every upstream call of the run."""
    from proxy_servers import proxies_installed, start_socks_proxy

    _client("codex")
    if not proxies_installed():
        pytest.skip("microsocks is not installed")
    socks = start_socks_proxy(tmp_path / "socks", "127.0.0.2", "egress", "e2e-pw")
    try:
        pool = make_pool()
        account = pool.sim_accounts[0]
        pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
        proxied = {"proxy_url": socks.url("socks5h")}
        assert pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}", json=proxied).status_code == 200
        pool.sim.clear_requests()
        home = tmp_path / "home"
        home.mkdir()
        result = _codex(pool, home, websocket=websocket)
        assert result.returncode == 0, result.stderr[-3000:]
        assert ANSWER in result.stdout
        records = pool.sim.requests(account_id=account.id)
        assert records and {record.peer for record in records} == {"127.0.0.2"}
        endpoint = "codex.ws.turn" if websocket else "codex.responses"
        assert endpoint in [record.endpoint for record in records]
        assert socks.connections()
    finally:
        socks.stop()


def test_egress_2_claude_code_is_served_by_the_second_account_when_the_firsts_proxy_is_down(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    from ports import free_port

    _client("claude")
    pool = make_pool(provider="claude", accounts=2)
    for account in pool.sim_accounts:
        pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    assert (
        pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}", json={"proxy_url": dead}).status_code == 200
    )
    result = _claude(pool, tmp_path, "-p", "say hi")
    assert result.returncode == 0, result.stderr[-3000:]
    assert ANSWER in result.stdout
    assert not pool.sim.requests(account_id=pool.sim_accounts[0].id, endpoint="claude.messages")
    assert pool.sim.requests(account_id=pool.sim_accounts[1].id, endpoint="claude.messages")
    assert pool.runtime.scheduler.cooldowns.active(pool.account_ids[0]) is None  # no cooldown
