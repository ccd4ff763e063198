"""The real coding clients (Codex CLI over HTTP and WebSocket, Claude Code, the Gemini CLI) through
the gateway to parrot accounts: a fourth provider serves them with nothing changed outside its
package. Skipped only when a client is not installed (``make clients``; ``.ci/run`` installs them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_real_clients import _claude, _client, _codex, _gemini

from sublane_provider_parrot.testing import ParrotPool

pytestmark = pytest.mark.e2e


def _served(pool: ParrotPool, protocol: str) -> list[dict[str, object]]:
    records = pool.admin.get("/api/requests").json()["items"]
    return [r for r in records if r["protocol"] == protocol and r["outcome"] == "success"]


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_codex_cli_on_parrot_accounts(parrot_pool: ParrotPool, tmp_path: Path, websocket: bool) -> None:
    _client("codex")
    run = _codex(parrot_pool, tmp_path, websocket=websocket, prompt="say hi", model="parrot-1")  # type: ignore[arg-type]
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert "parrot:" in run.stdout and "say hi" in run.stdout
    served = _served(parrot_pool, "responses_ws" if websocket else "responses")
    assert served and all(record["provider"] == "parrot" for record in served)


def test_claude_code_on_parrot_accounts(parrot_pool: ParrotPool, tmp_path: Path) -> None:
    _client("claude")
    run = _claude(parrot_pool, tmp_path, "-p", "--model", "parrot-1", "say hi")  # type: ignore[arg-type]
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert "parrot:" in run.stdout and "say hi" in run.stdout
    assert _served(parrot_pool, "messages")


def test_gemini_cli_on_parrot_accounts(parrot_pool: ParrotPool, tmp_path: Path) -> None:
    _client("gemini")
    run = _gemini(parrot_pool, tmp_path, "-p", "say hi", "-m", "parrot-1")  # type: ignore[arg-type]
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert "parrot:" in run.stdout and "say hi" in run.stdout
    assert _served(parrot_pool, "gemini")


# -- agentic runs: the parrot asks for the CLI's own tool; the CLI runs it and sends its output back --

MARK = "parrot-tool-ok-7731"


def _tool_round_trip(pool: ParrotPool) -> None:
    """The second call carried the tool's output back, and the answer repeats it."""
    last = pool.upstream.seen[-1].body["input"]
    outputs = [item for item in last if isinstance(item, dict) and item.get("type") == "function_call_output"]
    assert outputs and MARK in str(outputs[-1].get("output")), last[-3:]


def test_codex_cli_runs_its_exec_command_tool_on_parrot_accounts(
    parrot_pool: ParrotPool, tmp_path: Path
) -> None:
    _client("codex")
    prompt = f'call:exec_command {{"cmd": "echo {MARK}"}}'
    run = _codex(parrot_pool, tmp_path, websocket=False, prompt=prompt, model="parrot-1")  # type: ignore[arg-type]
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    _tool_round_trip(parrot_pool)
    assert "parrot: tool said" in run.stdout and MARK in run.stdout


def test_claude_code_runs_its_read_tool_on_parrot(parrot_pool: ParrotPool, tmp_path: Path) -> None:
    _client("claude")
    (tmp_path / "note.txt").write_text(f"{MARK}\n")
    prompt = f'call:Read {{"file_path": "{tmp_path / "note.txt"}"}}'
    run = _claude(parrot_pool, tmp_path, "-p", "--model", "parrot-1", prompt)  # type: ignore[arg-type]
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    _tool_round_trip(parrot_pool)
    assert "parrot: tool said" in run.stdout and MARK in run.stdout


def test_gemini_cli_runs_its_read_file_tool_on_parrot_accounts(
    parrot_pool: ParrotPool, tmp_path: Path
) -> None:
    _client("gemini")
    (tmp_path / "note.txt").write_text(f"{MARK}\n")
    prompt = f'call:read_file {{"file_path": "{tmp_path / "note.txt"}"}}'
    run = _gemini(parrot_pool, tmp_path, "-p", prompt, "-m", "parrot-1")  # type: ignore[arg-type]
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    _tool_round_trip(parrot_pool)
    assert "parrot: tool said" in run.stdout and MARK in run.stdout
