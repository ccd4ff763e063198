"""CONNECT-1 and CONNECT-3 in Debian's Chromium through Playwright: the key page's "Connect a client"
panel (at creation with the secret, from the key list with a placeholder) and the admins' first-run
checklist. Pictures go to ``docs/images/`` (connect-a-client.png, get-started.png)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import test_web
from gateway_pool import Pool
from playwright.sync_api import Page, expect
from test_web import ADMIN_PASSWORD, ADMIN_USERNAME, DOC_IMAGES, MEMBER_PASSWORD, _shoot, _sign_in

from sublane_sim import Behaviour

ANSWER = "Hello through SubLane"
# the browser and its profiles, as the other web tests have them
browser = test_web.browser
open_context = test_web.open_context
pytestmark = test_web.pytestmark


def _snippet(panel: Any, label: str) -> str:
    text: str = panel.get_by_label(label, exact=True).inner_text()
    return text


def _copied(page: Page, panel: Any, label: str) -> str:
    panel.get_by_role("button", name=f"Copy {label.lower()} text").click()
    text: str = page.evaluate("navigator.clipboard.readText()")
    return text


def test_connect_1_the_key_page_connect_panel_at_creation_and_from_the_list(
    make_pool: Callable[..., Pool], open_context: Any, tmp_path: Path
) -> None:
    pool = make_pool()
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=2))
    pool.gateway.member(pool.admin, "bob")
    page = _sign_in(open_context(pool.gateway.url), "bob", MEMBER_PASSWORD, "/keys")
    create = page.get_by_role("form", name="Create a key")
    create.get_by_label("Key name").fill("laptop")
    create.get_by_role("button", name="Create key").click()
    secret_box = page.get_by_role("region", name="New key secret")
    secret = secret_box.locator(".secret-value").inner_text()
    panel = secret_box.get_by_role("region", name="Connect a client to laptop")
    tabs = panel.get_by_role("tab")
    expect(tabs).to_have_text(
        [
            "Codex CLI", "Claude Code", "Gemini CLI", "Antigravity CLI", "OpenAI Python SDK",
            "Anthropic Python SDK", "google-genai Python SDK", "curl",
        ]
    )  # fmt: skip
    # the Codex CLI first: a config.toml provider at the URL this browser reached, holding the secret
    expect(panel.get_by_role("tab", name="Codex CLI")).to_have_attribute("aria-selected", "true")
    setup = panel.get_by_label("Set-up", exact=True)
    expect(setup).to_contain_text(f"export SUBLANE_API_KEY='{secret}'")
    expect(setup).to_contain_text(f'base_url = "{pool.gateway.url}/v1"')
    expect(panel.get_by_label("Try", exact=True)).to_contain_text("codex exec")
    panel.get_by_role("tab", name="Claude Code").click()
    expect(setup).to_contain_text(f"export ANTHROPIC_BASE_URL='{pool.gateway.url}'")
    expect(panel.get_by_label("Try", exact=True)).to_contain_text("claude -p")
    # curl's texts, copied with the buttons, work as pasted: the secret is in the set-up
    panel.get_by_role("tab", name="curl").click()
    expect(panel.get_by_label("Try", exact=True)).to_contain_text("curl")
    copied_setup = _copied(page, panel, "Set-up")
    copied_try = _copied(page, panel, "Try")
    assert copied_setup == _snippet(panel, "Set-up") and secret in copied_setup
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    run = subprocess.run(
        ["bash", "-c", f"{copied_setup}; {copied_try}"], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0 and ANSWER in run.stdout, (run.stdout, run.stderr)
    panel.get_by_role("tab", name="Codex CLI").click()
    expect(panel.get_by_label("Try", exact=True)).to_contain_text("codex exec")
    expect(page.locator("#status")).to_have_text("", timeout=6000)  # the "Copied" notice is gone
    _shoot(page, "connect-a-client")
    page.screenshot(path=DOC_IMAGES / "connect-a-client.png", full_page=True)

    # from the key list: a placeholder stands in for the secret (shown once only)
    page.reload()
    page.get_by_role("button", name="Connect a client to laptop").click()
    panel = page.get_by_role("region", name="Connect a client to laptop")
    setup = panel.get_by_label("Set-up", exact=True)
    expect(setup).to_contain_text("export SUBLANE_API_KEY='<your SubLane key>'")
    expect(page.get_by_text(secret)).to_have_count(0)


def test_connect_3_admins_land_on_the_first_run_checklist_until_the_first_call(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool(accounts=0)
    for key in pool.admin.get("/api/keys").json()["items"]:  # the pool's key: start with none
        assert pool.admin.delete(f"/api/keys/{key['id']}").status_code in (200, 204)
    answer = pool.admin.get("/api/setup/checklist").json()
    assert answer["done"] is False
    assert [(s["id"], s["href"], s["done"]) for s in answer["steps"]] == [
        ("account", "/accounts", False),
        ("key", "/keys", False),
        ("connect", "/keys", False),
        ("first_call", "/admin/requests", False),
    ]
    _, member = pool.gateway.member(pool.admin, "bob")
    assert member.get("/api/setup/checklist").status_code == 403

    page = _sign_in(open_context(pool.gateway.url), ADMIN_USERNAME, ADMIN_PASSWORD, "/")
    expect(page.get_by_role("heading", name="Get started", level=1)).to_be_visible()
    assert page.url.endswith("/get-started")
    steps = page.get_by_role("list", name="First-run checklist").get_by_role("listitem")
    expect(steps).to_have_count(4)
    expect(steps.locator(".offscreen")).to_have_text([" (to do)"] * 4)
    expect(page.get_by_role("link", name="Add an account")).to_have_attribute("href", "/accounts")
    expect(page.get_by_role("link", name="Create a key")).to_have_attribute("href", "/keys")
    expect(page.get_by_text("may be against a provider's terms")).to_be_visible()

    # each step ticks itself
    pool.add_account("codex", "codex-1")
    page.reload()
    expect(steps.locator(".offscreen")).to_have_text([" (done)", " (to do)", " (to do)", " (to do)"])
    key = pool.admin.post("/api/users/1/keys", json={"name": "laptop", "group_id": 1}).json()["secret"]
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.error(400))
    with pool.client(key) as client:  # a client reached SubLane; the call failed
        client.post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi"})
    page.reload()
    expect(steps.locator(".offscreen")).to_have_text([" (done)", " (done)", " (done)", " (to do)"])
    _shoot(page, "get-started")
    page.screenshot(path=DOC_IMAGES / "get-started.png", full_page=True)
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER))
    with pool.client(key) as client:
        assert client.post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi"}).status_code == 200
    page.reload()
    expect(steps.locator(".offscreen")).to_have_text([" (done)"] * 4)
    assert pool.admin.get("/api/setup/checklist").json()["done"] is True
    page.goto("/")  # set up: admins land on the requests again
    expect(page.get_by_role("heading", name="Requests", level=1)).to_be_visible()
    assert page.url.endswith("/requests")
    # members never land on it
    bob = _sign_in(open_context(pool.gateway.url), "bob", MEMBER_PASSWORD, "/")
    assert bob.url.endswith("/requests")
