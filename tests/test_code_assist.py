"""CLIENT-6: the Code Assist ingress (``POST /v1internal:{method}``), with the real Gemini CLI in
Google sign-in mode pointed at SubLane, and over HTTP for the envelope, the set-up methods, the
quota reads and the errors.

The Gemini CLI takes a ready access token from ``GOOGLE_CLOUD_ACCESS_TOKEN`` when
``GOOGLE_GENAI_USE_GCA=true`` (its own code: no token check, no refresh), and its Code Assist base
URL from ``CODE_ASSIST_ENDPOINT``: the SubLane key is that token (docs/code-assist.md).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_pool import Pool
from test_real_clients import ANSWER, GEMINI_MODELS, _client, _run_cli
from test_real_clients_cross import TOOL_RESULT_MARKERS

from sublane_sim import Behaviour

#: The model each provider's pool serves to the CLI (``-m``), as the cross-provider tests use.
PROVIDER_MODELS = {"antigravity": "gemini-3-flash", "codex": "gpt-5-codex", "claude": "claude-sonnet-4-5"}


def gemini_google_run(url: str, key: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The Gemini CLI in Google sign-in mode (``oauth-personal``) with SubLane at ``url`` as its Code
    Assist server and ``key`` as its access token."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "oauth-personal"}}}))
    return _run_cli(
        "gemini",
        home,
        args,
        GOOGLE_GENAI_USE_GCA="true",
        GOOGLE_CLOUD_ACCESS_TOKEN=key,
        CODE_ASSIST_ENDPOINT=url,
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )


def _pool_of(make_pool: Callable[..., Pool], provider: str) -> Pool:
    options = {"models": GEMINI_MODELS} if provider == "antigravity" else {}
    return make_pool(provider=provider, account_options=options)


@pytest.mark.e2e
@pytest.mark.parametrize("provider", ["antigravity", "codex", "claude"])
def test_client_6_gemini_cli_google_signin_mode_through_each_provider(
    make_pool: Callable[..., Pool], tmp_path: Path, provider: str
) -> None:
    """A prompt whose first answer is a tool call: the CLI runs the tool, sends its result back and
    prints the final answer — every turn through ``/v1internal``, on the one account of the pool."""
    _client("gemini")
    pool = _pool_of(make_pool, provider)
    account = pool.sim_accounts[0]
    pool.sim.script(account.id, Behaviour.ok(tool_call=True, text="Looking.", deltas=2))
    pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    run = gemini_google_run(pool.gateway.url, pool.key, tmp_path, "-p", "say hi", "-m", PROVIDER_MODELS[provider])
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    served = [record for record in pool.finished if record.outcome == "success"]
    assert len(served) >= 2, [(r.protocol, r.outcome, r.error_code) for r in pool.finished]
    assert {record.protocol for record in served} == {"code_assist"}
    assert {record.provider for record in served} == {provider}
    assert {record.account_id for record in served} == {pool.account_ids[0]}
    bodies = [str(request.body) for request in pool.sim.requests(account_id=account.id)]
    assert any(marker in body for body in bodies for marker in TOOL_RESULT_MARKERS[provider]), bodies[-1][
        :2000
    ]
    assert pool.runtime.leases.total_in_flight() == 0
