"""The newest clients (CLIENT-8): pinned where they are installed, served without choosing a model.

Each client's default model is read from its own code (docs/clients.md); the simulator's default
accounts — what ``make demo`` imports — must serve them, and no list may offer what Claude Code
calls retired.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from gateway_pool import Pool
from test_real_clients import _client, _run_cli, codex_exec, gemini_run

from sublane_provider_claude import KNOWN_MODELS

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {"codex": "@openai/codex", "claude": "@anthropic-ai/claude-code", "gemini": "@google/gemini-cli"}
#: Claude Code 2.1.332's retirement table (its own code): no list offers these any more.
RETIRED = (
    "claude-sonnet-4-5",
    "claude-opus-4-1",
    "claude-opus-4-2025",
    "claude-sonnet-4-2025",
    "claude-3-7-sonnet",
    "claude-3-5-haiku",
)


def _pins(text: str) -> dict[str, str]:
    return {name: version for name, version in re.findall(r"(@[\w-]+/[\w-]+)@(\d+\.\d+\.\d+)", text)}


def test_client_8_make_clients_ci_and_docs_name_the_same_client_versions() -> None:
    make = _pins((REPO / "Makefile").read_text())
    ci = _pins((REPO / ".ci" / "run").read_text())
    assert make == ci and set(make) == set(PACKAGES.values()), (make, ci)
    docs = (REPO / "docs" / "clients.md").read_text()
    for package, version in make.items():
        row = next(line for line in docs.splitlines() if f"(`{package}`)" in line)
        assert f"| {version} |" in row, (package, version, row)  # the "tested" column


def test_client_8_the_lists_serve_the_newest_defaults_and_nothing_retired(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(provider="codex")  # the simulator's default accounts, as make demo imports them
    pool.add_account("claude", "claude-1")
    with pool.client() as client:
        listed = {model["id"] for model in client.get("/v1/models").json()["data"]}
    assert {"gpt-6.2-sol", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"} <= listed, listed
    assert {"claude-opus-5-5", "claude-haiku-5-5"} <= set(KNOWN_MODELS)
    for model in (*listed, *KNOWN_MODELS):
        assert not model.startswith(RETIRED), model


@pytest.mark.e2e
def test_client_8_each_newest_client_is_served_without_choosing_a_model(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    for name in PACKAGES:
        _client(name)
    pool = make_pool(provider="codex")  # the simulator's default accounts, as make demo imports them
    pool.add_account("claude", "claude-1")
    pool.add_account("antigravity", "antigravity-1")
    homes = {name: tmp_path / name for name in PACKAGES}
    for home in homes.values():
        home.mkdir()
    codex = codex_exec(pool.gateway.url, pool.key, homes["codex"], websocket=False, model=None)
    assert codex.returncode == 0, (codex.stdout[-2000:], codex.stderr[-3000:])
    claude = _run_cli(
        "claude",
        homes["claude"],
        ("-p", "say hi"),
        ANTHROPIC_BASE_URL=pool.gateway.url,
        ANTHROPIC_API_KEY=pool.key,
    )
    assert claude.returncode == 0, (claude.stdout[-2000:], claude.stderr[-3000:])
    gemini = gemini_run(pool.gateway.url, pool.key, homes["gemini"], "-p", "say hi")
    assert gemini.returncode == 0, (gemini.stdout[-2000:], gemini.stderr[-3000:])
    asked = {(record.provider, record.model) for record in pool.finished if record.outcome == "success"}
    assert ("codex", "gpt-6.2-sol") in asked and ("claude", "claude-opus-5-5") in asked, asked
    assert any(provider == "antigravity" for provider, _ in asked), asked
    refused = [record.model for record in pool.finished if record.error_code == "model_not_found"]
    assert not refused, refused  # no default model of theirs is missing
