"""CONNECT-2: every client's set-up and ``try`` (``GET /api/connect``) run as pasted —
``bash -c "$setup; $try"`` in a fresh ``HOME`` with only ``SUBLANE_API_KEY`` set — against a real
gateway and the upstream simulator, with the real CLIs (``make clients``) and the Python SDKs.

The Antigravity CLI is not published on npm or PyPI, so it cannot run here: its template's ``try``
is the call it makes (``v1internal:generateContent`` at ``CLOUD_CODE_URL``, sent with curl), and that
is what runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from gateway_pool import Pool

from sublane_gateway._cli import main
from sublane_gateway.connect import templates
from sublane_sim import Behaviour

REPO = Path(__file__).resolve().parents[1]
NODE_BIN = REPO / ".cache" / "node-clients" / "node_modules" / ".bin"
ANSWER = "Hello through SubLane"

#: client -> (the provider of the pool's account, the real CLI it needs or None, the record's protocol)
CLIENTS: dict[str, tuple[str, str | None, str]] = {
    "codex": ("codex", "codex", "responses"),
    "claude": ("claude", "claude", "messages"),
    "gemini": ("antigravity", "gemini", "gemini"),
    "antigravity": ("antigravity", None, "code_assist"),
    "openai-python": ("codex", None, "responses"),
    "anthropic-python": ("claude", None, "messages"),
    "genai-python": ("antigravity", None, "gemini"),
    "curl": ("codex", None, "chat_completions"),
}


def paste(setup: str, try_: str, home: Path, key: str) -> subprocess.CompletedProcess[str]:
    """``bash -c "$setup; $try"`` as a person pastes it: a fresh ``HOME``, the key in
    ``SUBLANE_API_KEY``, the real CLIs and this Python (with the SDKs) first on ``PATH``."""
    python = str(Path(sys.executable).parent)
    path = os.pathsep.join([str(NODE_BIN), python, "/usr/local/bin", "/usr/bin", "/bin"])
    env = {"PATH": path, "HOME": str(home), "TERM": "dumb", "SUBLANE_API_KEY": key}
    return subprocess.run(
        ["bash", "-c", f"{setup}; {try_}"],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_connect_2_every_client_has_a_template() -> None:
    assert list(templates()) == list(CLIENTS)
    for template in templates().values():  # pasted as "$setup; $try": the last line must take a ";"
        last = template.setup.strip().splitlines()[-1].strip()
        assert not last.startswith("#") and last not in ("EOF", "then", "do", "{")


def test_connect_2_model_of_the_keys_group_url_and_bad_input(
    make_pool: Callable[..., Pool], capsys: pytest.CaptureFixture[str]
) -> None:
    pool = make_pool(provider="codex")
    _, member = pool.gateway.member(pool.admin, "bob")
    assert member.get("/api/connect", params={"client": "codex"}).json()["model"] == "gpt-5.5"
    # the group allows one model: the try asks for it
    assert pool.admin.patch("/api/groups/1", json={"model_policy": {"allow": ["gpt-5.4"]}}).status_code == 200
    key = member.post("/api/me/keys", json={"name": "laptop", "group_id": 1}).json()
    text = member.get("/api/connect", params={"client": "codex", "key_id": key["id"]}).json()
    assert text["model"] == "gpt-5.4" and 'model = "gpt-5.4"' in text["setup"]
    assert key["secret"] not in text["setup"] + text["try"]
    # the CLI prints the same texts for the same URL and model
    main(["connect", "codex", "--url", pool.gateway.url, "--model", "gpt-5.4"])
    printed = capsys.readouterr().out
    assert text["setup"] in printed and text["try"] in printed
    # bad input: clear 4xx
    assert member.get("/api/connect", params={"client": "vim"}).status_code == 400
    assert member.get("/api/connect", params={"client": "codex", "key_id": "١"}).status_code == 400
    admin_key = pool.admin.get("/api/me/keys").json()["items"][0]["id"]
    assert member.get("/api/connect", params={"client": "codex", "key_id": admin_key}).status_code == 404
    assert pool.gateway.client().get("/api/connect", params={"client": "codex"}).status_code == 401
    names = [item["client"] for item in member.get("/api/connect/clients").json()["items"]]
    assert names == list(CLIENTS)
    with pytest.raises(SystemExit, match="not a plain"):
        main(["connect", "curl", "--url", "http://x/$(id)"])
    # SUBLANE_PUBLIC_URL (OPS-6) wins over the address the browser used
    public = make_pool(provider="codex", public_url="https://sublane.example.com/")
    text = public.admin.get("/api/connect", params={"client": "curl"}).json()
    assert text["url"] == "https://sublane.example.com"
    assert "export SUBLANE_URL='https://sublane.example.com'" in text["setup"]


@pytest.mark.e2e
@pytest.mark.parametrize("client", list(CLIENTS))
def test_connect_2_template_runs_as_pasted(
    make_pool: Callable[..., Pool], tmp_path: Path, client: str
) -> None:
    provider, cli, protocol = CLIENTS[client]
    if cli is not None and not (NODE_BIN / cli).exists():
        pytest.skip(f"{cli} is not installed under {NODE_BIN} (make clients)")
    if shutil.which("curl") is None and client in ("curl", "antigravity"):
        pytest.skip("needs curl")
    pool = make_pool(provider=provider)
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=3))
    answer = pool.admin.get("/api/connect", params={"client": client})
    assert answer.status_code == 200, answer.text
    text = answer.json()
    assert text["client"] == client and text["title"] == templates()[client].title
    assert text["url"] == pool.gateway.url
    served = {item["id"] for item in pool.client().get("/v1/models").json()["data"]}
    assert text["model"] in served  # a model the key's group serves
    assert pool.key not in text["setup"] + text["try"]  # the key is read from SUBLANE_API_KEY
    home = tmp_path / "home"
    home.mkdir()
    run = paste(text["setup"], text["try"], home, pool.key)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    served_calls = [r for r in pool.finished if r.outcome == "success" and r.protocol == protocol]
    assert served_calls, [(r.protocol, r.outcome) for r in pool.finished]


def test_connect_item_5_readme_and_set_up_pages_name_the_providers_terms(
    make_pool: Callable[..., Pool],
) -> None:
    """Issue 50 item 5: the operator decides; metered (API-key) accounts stay within the terms."""
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "may be against a provider's terms of use; the operator decides" in readme
    assert "Metered (API-key) accounts are the way to stay within those terms" in readme
    page = " ".join(make_pool().gateway.client().get("/setup").text.split())
    assert "may be against a provider's terms: you, the operator, decide" in page
    assert "Metered (API-key) accounts are the way to stay within them" in page


def test_connect_2_codex_setup_keeps_an_existing_config_and_runs_twice(tmp_path: Path) -> None:
    import tomllib

    from sublane_gateway.connect import connect_text

    text = connect_text("codex", "http://127.0.0.1:8080", ["gpt-5.4"])
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"\napproval_policy = "never"\n\n[profiles.x]\nmodel = "keep"\n')
    for _ in range(2):  # pasted twice: the second changes nothing
        env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
        subprocess.run(["bash", "-c", text["setup"]], env=env, check=True, timeout=30)
    settings = tomllib.loads(config.read_text())
    assert settings["model_provider"] == "sublane" and settings["model"] == "gpt-5.4"
    assert settings["approval_policy"] == "never" and settings["profiles"] == {"x": {"model": "keep"}}
    assert settings["model_providers"]["sublane"] == {
        "name": "SubLane",
        "base_url": "http://127.0.0.1:8080/v1",
        "env_key": "SUBLANE_API_KEY",
        "wire_api": "responses",
    }
    assert (tmp_path / ".codex" / "config.toml.before-sublane").read_text().startswith('model = "o3"')
