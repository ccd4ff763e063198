"""``make demo``: the upstream simulator plus a gateway wired to it, ready for a first model call.

Starts the simulator with one seeded account per provider, a gateway on SUBLANE_PORT (default
8080) over a fresh database in .cache/demo, imports the accounts, creates a member with a key, and
prints what to try. Everything stays on loopback; Ctrl-C stops both.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
from pathlib import Path

from sublane_core import configure_logging
from sublane_gateway.testing import make_settings, running_gateway
from sublane_sim import Simulator

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".cache" / "demo"
GEMINI_SETTINGS = '{"security": {"auth": {"selectedType": "gemini-api-key"}}}'
ADMIN_PASSWORD = "demo-admin-password"  # noqa: S105  (a local demo, printed on screen)
MEMBER_PASSWORD = "demo-member-password"  # noqa: S105


def main() -> None:
    configure_logging("WARNING", "text")
    port = int(os.environ.get("SUBLANE_PORT", "8080"))
    shutil.rmtree(DATA, ignore_errors=True)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with Simulator(seed=7) as sim:
        urls = {name[len("SUBLANE_") :].lower(): value for name, value in sim.env().items()}
        settings = make_settings(DATA, admin_username="admin", admin_password=ADMIN_PASSWORD, **urls)
        with running_gateway(settings, port=port) as gateway:
            admin = gateway.login("admin", ADMIN_PASSWORD)
            for provider in ("codex", "claude", "antigravity"):
                account = sim.create_account(provider)
                body = {"provider": provider, "name": f"demo-{provider}", "group_ids": [1]}
                response = admin.post(
                    "/api/accounts/import", json=body | {"credentials": account.credentials}
                )
                response.raise_for_status()
            member = admin.post("/api/users", json={"username": "demo", "password": MEMBER_PASSWORD}).json()
            key = admin.post(f"/api/users/{member['id']}/keys", json={"name": "demo", "group_id": 1}).json()
            secret = key["secret"]
            url = gateway.url
            gemini_home = (DATA / "gemini-home").resolve()
            (gemini_home / ".gemini").mkdir(parents=True, exist_ok=True)
            (gemini_home / ".gemini" / "settings.json").write_text(GEMINI_SETTINGS)
            print(
                f"""
SubLane demo is running.
  gateway     {url}   (API docs: {url}/docs)
  simulator   {sim.base_url}   (a stand-in for ChatGPT, Claude and Antigravity)
  admin       admin / {ADMIN_PASSWORD}
  member      demo / {MEMBER_PASSWORD}
  member key  {secret}

Try a model call:
  curl -N {url}/v1/responses -H 'Authorization: Bearer {secret}' \\
       -H 'Content-Type: application/json' -d '{{"model":"gpt-5-codex","input":"say hi","stream":true}}'
  curl {url}/v1/chat/completions -H 'Authorization: Bearer {secret}' \\
       -H 'Content-Type: application/json' \\
       -d '{{"model":"gpt-5-codex","messages":[{{"role":"user","content":"hi"}}]}}'

Or the Codex CLI (make clients):
  SUBLANE_KEY={secret} .cache/node-clients/node_modules/.bin/codex exec --skip-git-repo-check \\
    -c model_provider=sl -c 'model_providers.sl.name="sl"' -c 'model_providers.sl.base_url="{url}/v1"' \\
    -c 'model_providers.sl.wire_api="responses"' -c 'model_providers.sl.env_key="SUBLANE_KEY"' \\
    -m gpt-5-codex "say hi"

Or the Gemini CLI, served by the Antigravity account:
  HOME={gemini_home} GOOGLE_GEMINI_BASE_URL={url} GEMINI_API_KEY={secret} GEMINI_CLI_TRUST_WORKSPACE=true \\
    .cache/node-clients/node_modules/.bin/gemini -p "say hi" -m gemini-3-flash

Or Claude Code, served by the Claude account:
  HOME={gemini_home} ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY={secret} \\
    .cache/node-clients/node_modules/.bin/claude -p "say hi"

Ctrl-C stops the demo.""",
                flush=True,
            )
            stop.wait()


if __name__ == "__main__":
    main()
