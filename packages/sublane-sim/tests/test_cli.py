"""The `sublane-sim` command, and real Codex CLI / Claude Code runs against the simulator."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from sublane_sim import PROVIDERS, Behaviour, Simulator

REPO = Path(__file__).resolve().parents[3]
NODE_BIN = REPO / ".cache" / "node-clients" / "node_modules" / ".bin"
ANSWER = "Hello from sublane-sim"


def sim_command() -> list[str]:
    installed = shutil.which("sublane-sim", path=str(Path(sys.executable).parent))
    return [installed] if installed else [sys.executable, "-m", "sublane_sim._cli"]


def test_console_command_serves_and_writes_credentials(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [
            *sim_command(),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--seed-accounts",
            "1",
            "--credentials-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines: list[str] = []
        for line in process.stdout:
            lines.append(line.strip())
            if line.startswith("control API"):
                break
        base = lines[0].rsplit(" ", 1)[-1]
        assert base.startswith("http://127.0.0.1:") and not base.endswith(":0")
        assert f"export SUBLANE_CODEX_BASE_URL={base}/backend-api" in lines
        accounts = [line for line in lines if line.startswith("account ")]
        assert len(accounts) == len(PROVIDERS)
        auth_json = json.loads((tmp_path / "codex-1" / "auth.json").read_text())
        assert auth_json["auth_mode"] == "chatgpt"
        assert (tmp_path / "claude-2" / ".credentials.json").stat().st_mode & 0o777 == 0o600
        for _ in range(50):
            try:
                health = httpx.get(f"{base}/_sim/health", timeout=2)
                break
            except httpx.ConnectError:
                import time

                time.sleep(0.1)
        assert health.json()["ok"] is True
        listed = httpx.get(f"{base}/_sim/accounts", timeout=2).json()["accounts"]
        assert {a["provider"] for a in listed} == set(PROVIDERS)
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def _client(name: str) -> Path:
    binary = NODE_BIN / name
    if shutil.which("npm") is None or not binary.exists():
        pytest.skip(
            f"{name} is not installed under {NODE_BIN} (npm install --prefix .cache/node-clients ...)"
        )
    return binary


def _run(args: list[str], home: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TERM": "dumb", **extra_env}
    return subprocess.run(
        args,
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_codex_cli_completes_a_prompt(sim: Simulator, tmp_path: Path, websocket: bool) -> None:
    codex = _client("codex")
    account = sim.create_account("codex")
    sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    args = [
        str(codex),
        "exec",
        "--skip-git-repo-check",
        "-c",
        "model_provider=sim",
        "-c",
        'model_providers.sim.name="sim"',
        "-c",
        f'model_providers.sim.base_url="{sim.codex_base_url}/codex"',
        "-c",
        'model_providers.sim.wire_api="responses"',
        "-c",
        'model_providers.sim.env_key="SIM_KEY"',
        "-m",
        "gpt-5-codex",
    ]
    if websocket:
        args += ["-c", "model_providers.sim.supports_websockets=true"]
    result = _run([*args, "say hi"], tmp_path, {"SIM_KEY": account.api_key})
    assert result.returncode == 0, result.stderr[-2000:]
    assert ANSWER in result.stdout
    endpoints = [r.endpoint for r in sim.requests(account_id=account.id)]
    if websocket:
        assert endpoints[:3] == ["codex.ws.connect", "codex.ws.prewarm", "codex.ws.turn"]
    else:
        assert endpoints == ["codex.responses"]
    turn = sim.requests(account_id=account.id)[-1]
    assert turn.outcome == "completed" and turn.body["prompt_cache_key"]


def test_claude_code_completes_a_prompt(sim: Simulator, tmp_path: Path) -> None:
    claude = _client("claude")
    account = sim.create_account("claude")
    sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    result = _run(
        [str(claude), "-p", "say hi"],
        tmp_path,
        {"ANTHROPIC_BASE_URL": sim.claude_base_url, "ANTHROPIC_API_KEY": account.api_key},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert ANSWER in result.stdout
    messages = sim.requests(account_id=account.id, endpoint="claude.messages")
    assert messages and all(r.outcome == "completed" for r in messages)
    assert messages[-1].headers["x-claude-code-session-id"]
    assert messages[-1].headers["x-api-key"] == account.api_key
