"""The web views (SPEC §16, HIST-10, HIST-11) driven in Debian's Chromium through Playwright.

A real gateway on loopback, wired to the upstream simulator, serves the pages; the tests sign in as an
admin and as a member and walk every view as a person would. Each view is photographed at desktop
and phone width into ``docs/screenshots/`` (regenerated on every run; the folder is not committed),
and the Accounts and Team usage views also into ``docs/images/``, which the README shows.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_pool import Pool
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Dialog,
    FilePayload,
    Page,
    ViewportSize,
    expect,
    sync_playwright,
)
from ports import free_port
from webhook_receiver import received, receiver

from sublane_core import Outcome, signals
from sublane_gateway.testing import ADMIN_PASSWORD, ADMIN_USERNAME, MEMBER_PASSWORD
from sublane_sim import Behaviour

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "docs" / "screenshots"
README_IMAGE = ROOT / "docs" / "images" / "accounts.png"
TEAM_USAGE_IMAGE = ROOT / "docs" / "images" / "team-usage.png"
COST_IMAGE = ROOT / "docs" / "images" / "usage-cost.png"
DOC_IMAGES = ROOT / "docs" / "images"  # pictures the docs show, taken by the tests
DESKTOP = ViewportSize(width=1280, height=800)
PHONE = ViewportSize(width=390, height=844)
BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}
TIMEOUT_MS = 8000

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's Chromium at /usr/bin/chromium (apt-get install chromium)"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
            ],
        )  # fmt: skip
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def open_context(browser: Browser) -> Iterator[Callable[[str], BrowserContext]]:
    """``open_context(base_url)`` → a fresh browser profile that may use the clipboard."""
    contexts: list[BrowserContext] = []

    def factory(base_url: str) -> BrowserContext:
        context = browser.new_context(base_url=base_url, viewport=DESKTOP)
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        return context

    yield factory
    for context in contexts:
        context.close()


def _sign_in(context: BrowserContext, username: str, password: str, path: str = "/requests") -> Page:
    page = context.new_page()
    page.goto(path)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    return page


def _admin_page(pool: Pool, open_context: Callable[[str], BrowserContext], path: str) -> Page:
    return _sign_in(open_context(pool.gateway.url), ADMIN_USERNAME, ADMIN_PASSWORD, path)


def _shoot(page: Page, name: str) -> None:
    """Photograph the current view at desktop and phone width."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=SCREENSHOTS / f"{name}-desktop.png", full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=SCREENSHOTS / f"{name}-phone.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], (
        "no sideways scroll at phone width"
    )
    page.set_viewport_size(DESKTOP)


def _records(pool: Pool, count: int) -> list[dict[str, Any]]:
    """Wait for the background recorder to have written ``count`` records; the newest page of them."""
    deadline = time.monotonic() + 10
    while True:
        items: list[dict[str, Any]] = pool.admin.get("/api/requests").json()["items"]
        written = items[0]["id"] if items else 0  # record IDs count up from 1 and are never reused
        if written >= count or time.monotonic() > deadline:
            assert written >= count, items
            return items
        time.sleep(0.05)


def _card(page: Page, name: str) -> Any:
    return page.locator("article.card").filter(has=page.get_by_role("heading", name=name, exact=True))


# --- WEB-4: sign-in, adding accounts, keys, members, groups ------------------------------------


def test_web_4_sign_in_sign_out_and_the_menus_by_role(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    pool.gateway.member(pool.admin, "bob")
    context = open_context(pool.gateway.url)
    page = context.new_page()
    page.goto("/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    _shoot(page, "sign-in")
    page.get_by_label("Username").fill(ADMIN_USERNAME)
    page.get_by_label("Password").fill("wrong-password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("invalid_credentials")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    nav = page.get_by_role("navigation", name="Main")
    for link in (
        "Requests", "Usage", "Keys", "Accounts", "Scheduling settings", "All requests", "Team usage",
        "Members", "Groups", "Audit log",
    ):  # fmt: skip
        expect(nav.get_by_role("link", name=link, exact=True)).to_be_visible()
    assert page.url.endswith("/get-started")  # CONNECT-3: no model call yet, admins land on the checklist
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.goto("/accounts")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()  # the session is gone

    member = _sign_in(open_context(pool.gateway.url), "bob", MEMBER_PASSWORD)
    nav = member.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Requests", exact=True)).to_be_visible()
    expect(nav.get_by_role("link", name="Keys", exact=True)).to_be_visible()
    expect(nav.get_by_role("link", name="Usage", exact=True)).to_be_visible()
    expect(nav.get_by_role("link", name="Accounts")).to_have_count(0)
    expect(nav.get_by_role("link", name="Audit log")).to_have_count(0)

    expect(nav.get_by_role("link", name="Team usage")).to_have_count(0)
    member.goto("/accounts")
    expect(member.get_by_role("heading", name="Not available")).to_be_visible()
    # The setup page still answers, and the shell allows no other origin.
    assert pool.admin.get("/setup").status_code == 200
    shell = pool.admin.get("/requests")
    assert "default-src 'self'" in shell.headers["content-security-policy"]


def test_web_4_adding_accounts_by_file_upload_and_by_sign_in(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    page = _admin_page(pool, open_context, "/accounts")
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.reload()
    expect(_card(page, "codex-1")).to_be_visible()
    pasted = pool.sim.create_account("codex")
    form = page.get_by_role("form", name="Import a credential file")
    # the choices are the gateway's providers (GET /api/providers), not a list in the page
    offered = pool.admin.get("/api/providers").json()["items"]
    choices = form.get_by_label("Provider").locator("option")
    expect(choices).to_have_text([item["label"] for item in offered])
    expect(form.get_by_text("~/.claude/.credentials.json")).to_be_visible()
    form.get_by_label("Name").fill("pasted-plus")
    form.get_by_label("Credential file content").fill(json.dumps(pasted.credentials))
    form.get_by_role("button", name="Import account").click()
    expect(_card(page, "pasted-plus")).to_contain_text("Ready")

    uploaded = pool.sim.create_account("claude")
    form.get_by_label("Provider").select_option("claude")
    form.get_by_label("Name").fill("uploaded-max")
    upload = FilePayload(
        name=".credentials.json",
        mimeType="application/json",
        buffer=json.dumps(uploaded.credentials).encode(),
    )
    form.get_by_label("Or upload the file").set_input_files(files=[upload])
    expect(form.get_by_label("Credential file content")).not_to_have_value("")
    form.get_by_role("button", name="Import account").click()
    expect(_card(page, "uploaded-max")).to_contain_text("claude")

    form.get_by_label("Credential file content").fill("{not json")
    form.get_by_label("Name").fill("broken")
    form.get_by_role("button", name="Import account").click()
    expect(form.get_by_role("alert")).to_contain_text("not valid JSON")

    signed = pool.sim.create_account("codex")
    pool.sim.prepare_login("codex", signed.id)
    oauth = page.get_by_role("form", name="Sign in to a provider")
    oauth.get_by_label("Name (optional)").fill("signed-in")
    oauth.get_by_role("button", name="Start sign-in").click()
    finish = page.get_by_role("form", name="Finish the sign-in")
    authorize_url = finish.get_by_role("link", name="the provider's sign-in page").get_attribute("href")
    assert authorize_url
    with httpx.Client(follow_redirects=False, timeout=10) as other_browser:
        callback = other_browser.get(authorize_url).headers["location"]
    finish.get_by_label("Callback URL or code").fill(callback)
    finish.get_by_role("button", name="Finish sign-in").click()
    expect(_card(page, "signed-in")).to_be_visible()
    names = {account["name"] for account in pool.admin.get("/api/accounts").json()["items"]}
    assert names == {"codex-1", "pasted-plus", "uploaded-max", "signed-in"}
    assert fetched and all(url.startswith((f"{pool.gateway.url}/", "data:")) for url in fetched)  # no CDN


def test_gem_3_antigravity_accounts_are_added_by_file_and_by_google_sign_in(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool(accounts=0)
    page = _admin_page(pool, open_context, "/accounts")
    imported = pool.sim.create_account("antigravity")
    form = page.get_by_role("form", name="Import a credential file")
    form.get_by_label("Provider").select_option("antigravity")
    form.get_by_label("Name").fill("google-file")
    form.get_by_label("Credential file content").fill(json.dumps(imported.credentials))
    form.get_by_role("button", name="Import account").click()
    card = _card(page, "google-file")
    expect(card).to_contain_text("antigravity")
    expect(card).to_contain_text(f"project {imported.project_id}")

    signed = pool.sim.create_account("antigravity")
    pool.sim.prepare_login("antigravity", signed.id)
    oauth = page.get_by_role("form", name="Sign in to a provider")
    oauth.get_by_label("Provider").select_option("antigravity")
    oauth.get_by_label("Name (optional)").fill("google-signed")
    oauth.get_by_role("button", name="Start sign-in").click()
    finish = page.get_by_role("form", name="Finish the sign-in")
    authorize_url = finish.get_by_role("link", name="the provider's sign-in page").get_attribute("href")
    assert authorize_url and "access_type=offline" in authorize_url
    with httpx.Client(follow_redirects=False, timeout=10) as other_browser:
        callback = other_browser.get(authorize_url).headers["location"]
    finish.get_by_label("Callback URL or code").fill(callback)
    finish.get_by_role("button", name="Finish sign-in").click()
    expect(_card(page, "google-signed")).to_contain_text(f"project {signed.project_id}")
    _shoot(page, "accounts-antigravity")


def test_web_4_keys_created_once_copied_and_revoked(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    pool.gateway.member(pool.admin, "bob")
    page = _sign_in(open_context(pool.gateway.url), "bob", MEMBER_PASSWORD, "/keys")
    create = page.get_by_role("form", name="Create a key")
    create.get_by_label("Key name").fill("laptop")
    create.get_by_role("button", name="Create key").click()
    secret_box = page.get_by_role("region", name="New key secret")
    secret = secret_box.locator(".secret-value").inner_text()
    assert secret.startswith("sl_") and len(secret) == 46
    secret_box.get_by_role("button", name="Copy key secret").click()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    assert pool.client(secret).get("/v1/models").status_code == 200
    mine = page.get_by_role("region", name="Your keys")
    expect(mine.locator("tr", has_text="laptop")).to_contain_text("active")
    _shoot(page, "keys")
    page.reload()
    expect(page.get_by_text(secret)).to_have_count(0)  # shown once only
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke laptop").click()
    expect(page.get_by_role("region", name="Your keys").locator("tr", has_text="laptop")).to_contain_text(
        "revoked"
    )
    assert pool.client(secret).get("/v1/models").status_code == 401

    admin = _admin_page(pool, open_context, "/keys")
    every = admin.get_by_role("region", name="All keys")
    expect(every.locator("tr", has_text="laptop")).to_contain_text("bob")
    issue = admin.get_by_role("form", name="Issue a key for a member")
    issue.get_by_label("Member", exact=True).select_option(label="bob")
    issue.get_by_label("Key name").fill("issued")
    issue.get_by_role("button", name="Issue key").click()
    expect(admin.get_by_role("region", name="New key secret")).to_contain_text("for bob")
    expect(every.locator("tr", has_text="issued")).to_contain_text("active")


def test_web_4_members_and_groups_forms(make_pool: Callable[..., Pool], open_context: Any) -> None:
    pool = make_pool()
    page = _admin_page(pool, open_context, "/members")
    add = page.get_by_role("form", name="Add a member")
    add.get_by_label("Username").fill("carol")
    add.get_by_label("Password (8 characters or more)").fill("carol-pass-1")
    add.get_by_role("button", name="Add member").click()
    row = page.locator("tr", has_text="carol")
    expect(row).to_contain_text("default")
    page.get_by_role("button", name="Edit carol").click()
    edit = page.get_by_role("form", name="Limits of carol")
    edit.get_by_label("Concurrent requests (0 = unlimited)").fill("3")
    edit.get_by_role("button", name="Save limits").click()
    expect(page.locator("tr", has_text="carol").locator("td").nth(3)).to_have_text("3")
    _shoot(page, "members")
    carol = next(u for u in pool.admin.get("/api/users").json()["items"] if u["username"] == "carol")
    assert carol["member_concurrency"] == 3 and carol["role"] == "member"

    page.goto("/groups")
    add = page.get_by_role("form", name="Add a group")
    add.get_by_label("Name").fill("interns")
    add.get_by_label("Allowed models (optional, comma-separated; empty allows all)").fill("gpt-5-codex")
    add.get_by_role("button", name="Add group").click()
    expect(page.locator("tr", has_text="interns")).to_contain_text("gpt-5-codex")
    page.get_by_role("button", name="Edit interns").click()
    edit = page.get_by_role("form", name="Edit interns")
    edit.get_by_role("checkbox", name="carol").check()
    edit.get_by_role("checkbox", name="codex-1 (codex)").check()
    edit.get_by_role("button", name="Save group").click()
    expect(page.locator("tr", has_text="interns").locator("td").nth(2)).to_have_text("1")
    _shoot(page, "groups")
    interns = next(g for g in pool.admin.get("/api/groups").json()["items"] if g["name"] == "interns")
    assert interns["user_ids"] == [carol["id"]] and interns["account_ids"] == pool.account_ids
    assert interns["model_policy"] == {"allow": ["gpt-5-codex"]}


# --- OPS-10: Administration → Audit log ---------------------------------------------------------


def test_ops_10_the_audit_log_view_shows_who_changed_what_with_filters_and_pages(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    account_id = pool.account_ids[0]
    bob, _ = pool.gateway.member(pool.admin, "bob")
    for limit in (5, 6, 7):
        pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": limit})
    pool.admin.patch(f"/api/users/{bob['id']}", json={"rpm": 20, "password": "bob-new-password-1"})
    _carol, carol = pool.gateway.member(pool.admin, "carol", role="admin")
    carol.post(f"/api/accounts/{account_id}/resume")
    page = _admin_page(pool, open_context, "/admin/audit")
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    table = page.get_by_role("region", name="Audit log table")
    newest = table.locator("tbody tr").first
    expect(newest).to_contain_text("Cleared a cooldown")
    expect(newest).to_contain_text("carol")
    expect(newest).to_contain_text(f"account #{account_id}")
    limits = table.locator("tr", has_text="Changed an account's limit").first
    expect(limits).to_contain_text("max concurrency: 6 → 7")
    user_change = table.locator("tr", has_text="Changed a user")
    expect(user_change).to_contain_text("rpm: 0 → 20")
    expect(user_change).to_contain_text("password changed: true")
    expect(table).not_to_contain_text("bob-new-password-1")
    _shoot(page, "audit-log")

    filters = page.get_by_role("form", name="Filters")
    filters.get_by_label("What").select_option(label="Changed an account's limit")
    filters.get_by_role("button", name="Apply filters").click()
    expect(table.locator("tbody tr")).to_have_count(3)
    assert "action=account.limits" in page.url
    filters = page.get_by_role("form", name="Filters")
    filters.get_by_label("Who").select_option(label="carol")
    filters.get_by_label("What").select_option(label="Any")
    filters.get_by_role("button", name="Apply filters").click()
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table).to_contain_text("Cleared a cooldown")

    for limit in range(1, 51):  # more than a page
        pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": limit})
    page.goto("/admin/audit")
    expect(table.locator("tbody tr")).to_have_count(50)
    page.get_by_role("link", name="Older →").click()
    expect(page.get_by_text("Page 2")).to_be_visible()
    expect(table.locator("tbody tr").first).to_be_visible()
    page.get_by_role("link", name="← Newer").click()
    expect(page.get_by_text("Page 1")).to_be_visible()

    member = _sign_in(open_context(pool.gateway.url), "bob", "bob-new-password-1", "/admin/audit")
    expect(member.get_by_role("heading", name="Not available")).to_be_visible()


# --- WEB-1 and WEB-2: accounts and scheduling settings -----------------------------------------


def test_web_1_account_cards_show_state_and_turn_busy_while_a_stream_runs(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool(accounts=2)
    page = _admin_page(pool, open_context, "/accounts")
    card = _card(page, "codex-1")
    expect(card).to_contain_text("Ready")
    expect(card.locator(".in-flight")).to_have_text("0 / 30")
    email = pool.admin.get(f"/api/accounts/{pool.account_ids[0]}").json()["identity"]["email"]
    expect(card.locator(".identity")).to_contain_text(email)
    pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}/limits", json={"max_concurrency": 1})
    pool.admin.patch(f"/api/accounts/{pool.account_ids[1]}/limits", json={"max_concurrency": 1})
    for sim_account in pool.sim_accounts:
        pool.sim.script(sim_account.id, Behaviour.ok(deltas=50, pacing_ms=50))
    with concurrent.futures.ThreadPoolExecutor(2) as workers:
        streams = [workers.submit(pool.client().post, "/v1/responses", json=BODY) for _ in range(2)]
        expect(card).to_have_attribute("data-state", "busy")  # polled, no reload
        expect(card.locator(".state")).to_have_text("Busy")
        expect(card.locator(".in-flight")).to_have_text("1 / 1")
        _shoot(page, "accounts")
        README_IMAGE.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=README_IMAGE)
        assert all(stream.result().status_code == 200 for stream in streams)
    expect(card).to_have_attribute("data-state", "ready")
    expect(card.locator(".in-flight")).to_have_text("0 / 1")


def test_web_1_a_model_cooldown_shows_as_model_limited_with_its_count(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool(model_failure_threshold=1, model_cooldown_initial_s=40)
    pool.sim.script(pool.sim_accounts[0].id, *[Behaviour.error(500)] * 3)
    assert pool.client().post("/v1/responses", json=BODY).status_code == 502
    page = _admin_page(pool, open_context, "/accounts")
    card = _card(page, "codex-1")
    expect(card).to_have_attribute("data-state", "model_limited")
    expect(card.locator(".state")).to_have_text("Model-limited · 1 model")
    expect(card).to_contain_text("gpt-5-codex")
    page.goto("/scheduling")
    page.once("dialog", lambda dialog: dialog.accept())
    _card(page, "codex-1").get_by_role("button", name="Clear cooldown").click()
    expect(_card(page, "codex-1")).to_have_attribute("data-state", "ready")


def test_web_2_clear_cooldown_after_a_429_and_change_a_limit(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="60")
    )
    assert pool.client().post("/v1/responses", json=BODY).status_code == 429
    page = _admin_page(pool, open_context, "/scheduling")
    card = _card(page, "codex-1")
    expect(card).to_have_attribute("data-state", "cooling")
    expect(card.locator(".state")).to_contain_text("left")
    _shoot(page, "scheduling")
    dialogs: list[str] = []

    def answer(accept: bool) -> Callable[[Dialog], None]:
        def handle(dialog: Dialog) -> None:
            dialogs.append(dialog.message)
            if accept:
                dialog.accept()
            else:
                dialog.dismiss()

        return handle

    page.once("dialog", answer(False))
    card.get_by_role("button", name="Clear cooldown").click()
    expect(card).to_have_attribute("data-state", "cooling")  # dismissed: nothing happened
    page.once("dialog", answer(True))
    card.get_by_role("button", name="Clear cooldown").click()
    expect(card).to_have_attribute("data-state", "ready")
    assert len(dialogs) == 2 and "codex-1" in dialogs[0]
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200

    limit = card.get_by_label("Concurrent requests (1–1000)")
    limit.fill("7")
    card.get_by_role("button", name="Save limit").click()
    expect(card.locator(".in-flight")).to_have_text("0 / 7")
    assert pool.admin.get(f"/api/accounts/{pool.account_ids[0]}").json()["max_concurrency"] == 7
    limit.fill("0")
    card.get_by_role("button", name="Save limit").click()
    assert limit.evaluate("input => input.validity.rangeUnderflow")  # refused by the form
    limit.evaluate("input => input.removeAttribute('max')")
    limit.fill("1001")
    card.get_by_role("button", name="Save limit").click()
    expect(card.get_by_role("alert")).to_contain_text("invalid_request")  # refused by the API
    assert pool.admin.get(f"/api/accounts/{pool.account_ids[0]}").json()["max_concurrency"] == 7

    page.once("dialog", answer(True))
    card.get_by_role("button", name="Disable account").click()
    expect(card).to_have_attribute("data-state", "disabled")
    expect(card.locator(".state")).to_have_text("Disabled")
    card.get_by_role("button", name="Enable account").click()
    expect(card).to_have_attribute("data-state", "ready")
    assert pool.admin.get(f"/api/accounts/{pool.account_ids[0]}").json()["enabled"] is True


# --- WEB-3, HIST-10, HIST-11: the request tables -----------------------------------------------


def test_client_2_web_shows_client_versions_and_pins_one(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    page = _admin_page(pool, open_context, "/accounts")
    row = page.locator("tr.client-version[data-provider=codex]")
    expect(row.locator(".effective")).to_have_text("0.171.0")
    expect(page.locator("tr.client-version[data-provider=claude] .effective")).to_have_text("2.1.332")
    row.get_by_role("textbox", name="Pinned version").fill("0.99")
    row.get_by_role("button", name="Pin").click()
    assert row.get_by_role("textbox", name="Pinned version").evaluate(
        "input => input.validity.patternMismatch"
    )  # refused by the form
    row.get_by_role("textbox", name="Pinned version").fill("0.180.0")
    row.get_by_role("button", name="Pin").click()
    row = page.locator("tr.client-version[data-provider=codex]")
    expect(row.locator(".effective")).to_have_text("0.180.0")
    providers = pool.admin.get("/api/providers").json()["items"]
    assert next(p for p in providers if p["name"] == "codex")["client_version"]["pinned"] == "0.180.0"
    row.get_by_role("button", name="Remove pin").click()
    expect(page.locator("tr.client-version[data-provider=codex] .effective")).to_have_text("0.171.0")


def test_web_3_all_requests_filters_and_pages_of_50(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    client = pool.client()
    for _ in range(52):
        assert client.post("/v1/responses", json={**BODY, "stream": False}).status_code == 200
    pool.admin.patch("/api/groups/1", json={"model_policy": {"allow": ["gpt-5"]}})
    assert client.post("/v1/responses", json=BODY).status_code == 403
    _records(pool, 53)
    page = _admin_page(pool, open_context, "/admin/requests")
    table = page.get_by_role("region", name="Requests table")
    expect(table.locator("tbody tr")).to_have_count(50)
    for header in ("Started", "Member", "Account", "Model", "Key", "Outcome", "Upstream status", "Duration",
                   "First output", "Input", "Output", "Cached", "Cache hit rate"):  # fmt: skip
        expect(table.get_by_role("columnheader", name=header, exact=True)).to_be_visible()
    expect(table.locator("tbody tr").first).to_contain_text("rejected")
    _shoot(page, "all-requests")
    page.get_by_role("link", name="Older →").click()
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(page.get_by_text("Page 2")).to_be_visible()
    page.get_by_role("link", name="← Newer").click()
    expect(table.locator("tbody tr")).to_have_count(50)

    filters = page.get_by_role("form", name="Filters")
    filters.get_by_label("Outcome").select_option("rejected")
    filters.get_by_role("button", name="Apply filters").click()
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.locator("tbody tr")).to_contain_text("model_not_allowed")
    filters = page.get_by_role("form", name="Filters")
    filters.get_by_label("Outcome").select_option("success")
    filters.get_by_label("Member", exact=True).select_option(label=ADMIN_USERNAME)
    filters.get_by_label("Account").select_option(label="codex-1")
    filters.get_by_label("Key").select_option(label="pool")
    filters.get_by_label("Model").select_option("gpt-5-codex")
    filters.get_by_role("button", name="Apply filters").click()
    expect(table.locator("tbody tr")).to_have_count(50)
    filters = page.get_by_role("form", name="Filters")
    filters.get_by_label("From").fill("2001-01-01T00:00")
    filters.get_by_label("Until").fill("2001-01-02T00:00")
    filters.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_text("No requests match.")).to_be_visible()


def test_web_3_a_member_sees_only_their_own_requests_and_no_account_names(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    user, bob = pool.gateway.member(pool.admin, "bob")
    bob_key = bob.post("/api/me/keys", json={"name": "bob-laptop", "group_id": 1}).json()["secret"]
    mine = pool.client(bob_key).post("/v1/responses", json=BODY).headers["x-request-id"]
    pool.client().post("/v1/responses", json=BODY)
    _records(pool, 2)
    page = _sign_in(open_context(pool.gateway.url), "bob", MEMBER_PASSWORD, "/requests")
    table = page.get_by_role("region", name="Requests table")
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.locator("tbody tr")).to_have_attribute("data-request-id", mine)
    expect(table.get_by_role("columnheader", name="Account")).to_have_count(0)
    expect(table.get_by_role("columnheader", name="Member")).to_have_count(0)
    expect(page.get_by_role("form", name="Filters").get_by_label("Account")).to_have_count(0)
    _shoot(page, "requests")
    table.get_by_role("button", name=f"Details of {mine}").click()
    details = page.get_by_role("dialog", name="Request details")
    expect(details.locator(".rule")).to_have_attribute("data-rule", "uniform_rotation")
    expect(details.locator(".rule")).to_have_text("Uniform rotation")
    for shown in (page.locator("body").inner_text(), page.content()):
        assert "codex-1" not in shown
        email = pool.admin.get(f"/api/accounts/{pool.account_ids[0]}").json()["identity"]["email"]
        assert email not in shown
    page.goto(f"/requests?user_id=1&account_id={pool.account_ids[0]}")  # cannot widen the scope
    expect(page.get_by_role("region", name="Requests table").locator("tbody tr")).to_have_count(1)
    assert user["id"] != 1


def test_hist_11_find_a_request_by_id_copy_it_and_open_its_details(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    client = pool.client()
    ids = [client.post("/v1/responses", json=BODY).headers["x-request-id"] for _ in range(3)]
    _records(pool, 3)
    wanted = ids[1]
    page = _admin_page(pool, open_context, "/admin/requests")
    filters = page.get_by_role("form", name="Filters")
    filters.get_by_label("Request ID").fill(wanted)
    filters.get_by_role("button", name="Apply filters").click()
    rows = page.get_by_role("region", name="Requests table").locator("tbody tr")
    expect(rows).to_have_count(1)
    short = pool.admin.get(f"/api/requests/{wanted}").json()["request_id_short"]
    expect(rows.locator(".short-id")).to_contain_text(short)
    assert len(short) < len(wanted)
    rows.get_by_role("button", name="Copy request ID").click()
    assert page.evaluate("navigator.clipboard.readText()") == wanted
    rows.get_by_role("button", name=f"Details of {wanted}").click()
    details = page.get_by_role("dialog", name="Request details")
    expect(details.locator(".request-id-full")).to_have_text(wanted)
    labels = ("Member", "Account", "Upstream status", "First output", "Cache hit rate", "Rule", "Candidates",
              "Excluded", "Protocol")  # fmt: skip
    for label in labels:
        expect(details.get_by_text(label, exact=True)).to_be_visible()
    expect(details).to_contain_text("codex-1")
    _shoot(page, "request-details")
    details.get_by_role("button", name="Close").click()
    expect(details).to_be_hidden()


def test_hist_10_cache_hit_rate_column_shows_the_api_value(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0].id
    client = pool.client()
    expected: dict[str, str] = {}
    for behaviour, rate in (
        (Behaviour.ok(input_tokens=800, output_tokens=5, cached_tokens=700), "87.5%"),
        (Behaviour.ok(input_tokens=3, output_tokens=5, cached_tokens=1), "33.3%"),
        (Behaviour.ok(input_tokens=100, output_tokens=5, cached_tokens=0), "0%"),
        (Behaviour.cut(2), "—"),
    ):
        pool.sim.script(account, behaviour)
        expected[client.post("/v1/responses", json=BODY).headers["x-request-id"]] = rate
    records = _records(pool, 4)
    assert {r["request_id"]: r["cache_hit_rate"] for r in records} == expected
    page = _admin_page(pool, open_context, "/admin/requests")
    table = page.get_by_role("region", name="Requests table")
    for request_id, rate in expected.items():
        expect(table.locator(f'tr[data-request-id="{request_id}"] td.cache-rate')).to_have_text(rate)


# --- TEAM-5: usage, member controls, change password -------------------------------------------

MODELS = ("gpt-5-codex", "gpt-5", "gpt-5.4-mini", "gpt-5.3-codex")


def _past_usage(pool: Pool, users: dict[str, int]) -> None:
    """Thirty days of earlier calls, written by the gateway's own history writer (records older
    than the 7 days of HIST-6 go, their summaries stay), so the charts have something to show."""
    now = pool.gateway.clock.time()
    payloads = []
    for day in range(1, 31):
        for name, user_id in users.items():
            for call in range((day * 7 + user_id * 3) % 5 + (3 if name == "carol" else 1)):
                started = now - day * 86_400 + ((call * 5 + day + user_id) % 24 - 12) * 3600
                model = MODELS[(user_id + call + day) % len(MODELS)] if name != "bob" else "gpt-5-codex"
                payloads.append(
                    signals.RequestFinished(
                        request_id=f"req_past_{user_id}_{day}_{call}",
                        started_at=started,
                        duration_ms=900,
                        first_token_ms=300,
                        user_id=user_id,
                        key_id=None,
                        group_id=1,
                        account_id=pool.account_ids[0],
                        provider="codex",
                        model=model,
                        protocol="responses",
                        operation="stream",
                        outcome=Outcome.ERROR if call == 4 else Outcome.SUCCESS,
                        input_tokens=None if call == 3 else 1500 * (call + 1) + 40 * day,
                        output_tokens=None if call == 3 else 220 * (call + 1),
                        cached_tokens=None if call == 3 else 900 * call,
                    )
                )
    recorder = pool.gateway.app.state.history
    recorder.write(payloads)


def _team_pool(make_pool: Callable[..., Pool]) -> tuple[Pool, dict[str, str]]:
    pool = make_pool()
    keys = {}
    users = {"admin": 1}
    for name in ("bob", "carol"):
        user, keys[name] = pool.member_key(name)
        users[name] = user["id"]
    _past_usage(pool, users)
    account = pool.sim_accounts[0].id
    for name, tokens, model in (
        ("bob", 1200, "gpt-5-codex"),
        ("bob", 800, "gpt-5-codex"),
        ("carol", 9000, "gpt-5"),
    ):
        pool.sim.script(
            account, Behaviour.ok(input_tokens=tokens, output_tokens=tokens // 10, cached_tokens=tokens // 2)
        )
        response = pool.client(keys[name]).post("/v1/responses", json={**BODY, "model": model})
        assert response.status_code == 200, response.text
    budget = {
        "rules": [
            {"period": "day", "limit": 5000},
            {"period": "month", "limit": 2_000_000, "model": "gpt-5-codex"},
        ]
    }
    assert pool.admin.put(f"/api/users/{users['bob']}/budgets", json=budget).status_code == 200
    return pool, keys


def _tile(page: Page, label: str) -> str:
    return (
        page.locator(".tile", has=page.locator(".tile-label", has_text=label))
        .locator(".tile-value")
        .inner_text()
    )


def test_team_5_usage_as_a_member_shows_only_their_own_numbers(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool, _keys = _team_pool(make_pool)
    page = _sign_in(open_context(pool.gateway.url), "bob", MEMBER_PASSWORD, "/usage")
    expect(page.get_by_role("heading", name="Usage", exact=True)).to_be_visible()
    mine = page.request.get("/api/me/usage?days=30").json()
    assert mine["totals"]["requests"] > 2 and "by_member" not in mine
    expect(page.locator(".tile-value").first).to_have_text(f"{mine['totals']['requests']:,}")
    assert _tile(page, "Input tokens") == f"{mine['totals']['input_tokens']:,}"
    assert _tile(page, "Without reported usage") == f"{mine['totals']['unknown_usage_requests']:,}"
    models = page.get_by_role("region", name="Usage by model")
    expect(models.locator("tbody tr")).to_have_count(1)  # bob only ever called gpt-5-codex
    expect(models).to_contain_text("gpt-5-codex")
    content = page.locator("main").inner_text()
    assert "carol" not in content and "admin" not in content.replace("admins", "")
    for forbidden in ("gpt-5.4-mini", "gpt-5.3-codex", "Top members"):
        assert forbidden not in content, forbidden  # the others' models and the member table
    heat = page.locator("svg.heatmap rect.heat")
    expect(heat).to_have_count(7 * 24)
    cells = sum(int(value) for value in heat.evaluate_all("(els) => els.map((e) => e.dataset.requests)"))
    assert cells == mine["totals"]["requests"]
    expect(page.locator("figure", has_text="Requests per day").locator("svg g.day")).to_have_count(30)
    budgets = page.get_by_role("region", name="Token budgets", exact=True)
    expect(budgets.locator("tbody tr")).to_have_count(2)
    expect(budgets).to_contain_text("gpt-5-codex")
    _shoot(page, "usage")
    page.get_by_text("7 days", exact=True).click()
    expect(page).to_have_url(re.compile(r"days=7"))
    expect(page.locator("figure", has_text="Requests per day").locator("svg g.day")).to_have_count(7)
    week = page.request.get("/api/me/usage?days=7").json()
    expect(page.locator(".tile-value").first).to_have_text(f"{week['totals']['requests']:,}")
    page.goto("/usage?days=90&user_id=3")  # no parameter widens a personal page
    quarter = page.request.get("/api/me/usage?days=90").json()["totals"]["requests"]
    expect(page.locator(".tile-value").first).to_have_text(f"{quarter:,}")
    page.goto("/admin/usage")
    expect(page.get_by_role("heading", name="Not available")).to_be_visible()
    assert page.request.get("/api/usage").status == 403


def test_cost_2_usage_pages_show_cost_beside_tokens_and_the_subscription_value(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool, _keys = _team_pool(make_pool)
    account = pool.account_ids[0]
    assert pool.admin.patch(f"/api/accounts/{account}", json={"monthly_price_usd": 200}).status_code == 200
    page = _admin_page(pool, open_context, "/admin/usage")
    expect(page.get_by_role("heading", name="Team usage")).to_be_visible()
    team = pool.admin.get("/api/usage?days=30").json()
    assert team["totals"]["cost_usd"] > 0
    digits = 4 if team["totals"]["cost_usd"] < 1 else 2
    expected = page.evaluate(  # the browser's own number format
        "([n, d]) => `$${n.toLocaleString(undefined, {minimumFractionDigits: d, maximumFractionDigits: d})}`",
        [team["totals"]["cost_usd"], digits],
    )
    assert _tile(page, "API-equivalent cost") == expected
    chart = page.locator("figure[data-chart=cost]")
    expect(chart.locator("svg g.day")).to_have_count(30)
    expect(chart.locator("svg")).to_have_attribute("aria-label", re.compile(re.escape(expected)))
    members = page.get_by_role("region", name="Usage by member")
    expect(members.locator("thead")).to_contain_text("Cost")
    top = team["by_member"][0]
    assert top["cost_usd"] is not None
    expect(members.locator("tbody tr").first.locator("td.cost")).to_have_text(re.compile(r"^\$[0-9.,]+$"))
    accounts = page.get_by_role("region", name="Usage by account")
    expect(accounts.locator("tbody tr")).to_have_count(1)
    value = page.get_by_role("region", name="Value per account")
    expect(value).to_contain_text("$200.00")
    served = pool.admin.get("/api/usage/value").json()["accounts"][0]
    expect(value).to_contain_text(f"{served['ratio']:.3g}×")  # served ÷ price
    page.set_viewport_size(DESKTOP)
    COST_IMAGE.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=COST_IMAGE, full_page=True)
    mine = _sign_in(open_context(pool.gateway.url), "bob", MEMBER_PASSWORD, "/usage")
    expect(mine.locator("figure[data-chart=cost] svg g.day")).to_have_count(30)
    assert _tile(mine, "API-equivalent cost").startswith("$")
    expect(mine.get_by_role("region", name="Usage by account")).to_have_count(0)  # accounts are the team's


def test_team_5_team_usage_as_an_admin(make_pool: Callable[..., Pool], open_context: Any) -> None:
    pool, _keys = _team_pool(make_pool)
    page = _admin_page(pool, open_context, "/admin/usage")
    expect(page.get_by_role("heading", name="Team usage")).to_be_visible()
    team = pool.admin.get("/api/usage?days=30").json()
    expect(page.locator(".tile-value").first).to_have_text(f"{team['totals']['requests']:,}")
    members = page.get_by_role("region", name="Usage by member")
    expect(members.locator("tbody tr")).to_have_count(3)
    first = members.locator("tbody tr").first.locator("th")
    expect(first).to_have_text(team["by_member"][0]["username"])  # most tokens first
    models = page.get_by_role("region", name="Usage by model")
    expect(models.locator("tbody tr")).to_have_count(len(team["by_model"]))
    bars = page.locator("figure", has_text="Tokens per day").locator("svg g.day")
    expect(bars).to_have_count(30)
    _shoot(page, "team-usage")
    page.set_viewport_size(DESKTOP)
    TEAM_USAGE_IMAGE.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=TEAM_USAGE_IMAGE)
    page.get_by_label("Member", exact=True).select_option(label="carol")
    expect(page).to_have_url(re.compile(r"user_id=\d+"))
    carol = next(row for row in team["by_member"] if row["username"] == "carol")
    expect(page.locator(".tile-value").first).to_have_text(f"{carol['requests']:,}")
    expect(page.get_by_role("region", name="Usage by member").locator("tbody tr")).to_have_count(1)
    page.get_by_text("90 days", exact=True).click()
    expect(page).to_have_url(re.compile(r"days=90"))
    expect(page.locator("figure", has_text="Requests per day").locator("svg g.day")).to_have_count(90)
    expect(page.get_by_label("Member", exact=True)).to_have_value(str(carol["user_id"]))


def test_team_5_members_limits_budgets_and_password_reset(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    bob, _key = pool.member_key("bob")
    page = _admin_page(pool, open_context, "/members")
    page.get_by_role("button", name="Edit bob").click()
    limits = page.get_by_role("form", name="Limits of bob")
    limits.get_by_label("Requests per minute (0 = unlimited)").fill("120")
    limits.get_by_role("button", name="Save limits").click()
    expect(page.locator("tr", has_text="bob").locator("td").nth(4)).to_have_text("120")
    budgets = page.get_by_role("form", name="Token budgets of bob")
    budgets.get_by_role("button", name="Add rule").click()
    budgets.get_by_label("Limit (tokens)").fill("250000")
    budgets.get_by_role("button", name="Add rule").click()
    second = budgets.locator("fieldset.rule").nth(1)
    second.get_by_label("Model").fill("gpt-5-codex")
    second.get_by_label("Per").select_option("month")
    second.get_by_label("Limit (tokens)").fill("9000000")
    budgets.get_by_role("button", name="Save budgets").click()
    table = page.get_by_role("region", name="Token budgets", exact=True)
    expect(table.locator("tbody tr")).to_have_count(2)
    stored = pool.admin.get(f"/api/users/{bob['id']}/budgets").json()["rules"]
    assert [(rule["period"], rule["limit"], rule["model"]) for rule in stored] == [
        ("day", 250000, None),
        ("month", 9000000, "gpt-5-codex"),
    ]
    _shoot(page, "member-controls")
    budgets = page.get_by_role("form", name="Token budgets of bob")
    budgets.locator("fieldset.rule").nth(0).get_by_role("button", name="Remove").click()
    budgets.get_by_role("button", name="Save budgets").click()
    expect(page.get_by_role("region", name="Token budgets", exact=True).locator("tbody tr")).to_have_count(1)
    kept = pool.admin.get(f"/api/users/{bob['id']}/budgets").json()["rules"]
    assert [rule["id"] for rule in kept] == [stored[1]["id"]]  # the kept rule keeps its ID
    member = pool.gateway.login("bob", MEMBER_PASSWORD)
    reset = page.get_by_role("form", name="Reset the password of bob")
    reset.get_by_label("New password").fill("set-by-the-admin")
    reset.get_by_role("button", name="Set password").click()
    expect(page.get_by_role("status")).to_contain_text("sessions ended")
    assert member.get("/api/me").status_code == 401
    assert pool.gateway.login("bob", "set-by-the-admin").get("/api/me").status_code == 200


def test_team_5_everyone_can_change_their_own_password(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    pool.member_key("bob")
    page = _sign_in(open_context(pool.gateway.url), "bob", MEMBER_PASSWORD, "/usage")
    page.get_by_role("link", name="My account").click()
    expect(page.get_by_role("heading", name="My account")).to_be_visible()
    change = page.get_by_role("form", name="Change password")
    change.get_by_label("Current password").fill("not-my-password")
    change.get_by_label("New password", exact=True).fill("bobs-new-password")
    change.get_by_label("New password again").fill("bobs-new-password")
    _shoot(page, "change-password")
    change.get_by_role("button", name="Change password").click()
    expect(change.get_by_role("alert")).to_contain_text("wrong_password")
    change.get_by_label("Current password").fill(MEMBER_PASSWORD)
    change.get_by_role("button", name="Change password").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("status").first).to_contain_text("Password changed")
    page.get_by_label("Username").fill("bob")
    page.get_by_label("Password").fill("bobs-new-password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Usage", exact=True)).to_be_visible()


# --- QUOTA-9, QUOTA-10, HIST-12 in the views ----------------------------------------------------


def test_quota_9_and_quota_10_every_card_shows_quota_with_freshness_and_pace(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()  # codex-1
    pool.add_account("claude", "claude-1")
    pool.add_account("antigravity", "antigravity-1")
    codex, claude, antigravity = (account.id for account in pool.sim_accounts)
    pool.sim.set_quota(codex, "primary", used_percent=100, reset_in_s=900)
    pool.sim.set_quota(codex, "secondary", used_percent=40, reset_in_s=302_400)  # half a week gone
    pool.sim.set_quota(claude, "five_hour", used_percent=70, reset_in_s=9000)  # half of 5 h gone
    pool.sim.set_quota(antigravity, "gemini-3-flash", used_percent=25, reset_in_s=3600)
    api = pool.client()
    assert api.post("/v1/responses", json=BODY).status_code == 403  # codex: the usage limit, observed
    refused = api.post("/v1/responses", json=BODY)  # and now refused while routing
    assert refused.status_code == 403
    messages = {
        "model": "claude-haiku-4-5-20251001",
        "max_tokens": 32,
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert (
        api.post("/v1/messages", json=messages, headers={"anthropic-version": "2023-06-01"}).status_code
        == 200
    )
    gemini = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert api.post("/v1beta/models/gemini-3-flash:generateContent", json=gemini).status_code == 200
    deadline = time.monotonic() + 10  # Antigravity reports quota only through its background read
    while not any(row["window"] == "gemini-3-flash" for row in _runtime_quota(pool, "antigravity-1")):
        assert time.monotonic() < deadline, "the Antigravity quota was never read"
        time.sleep(0.05)

    page = _admin_page(pool, open_context, "/accounts")
    codex_card = _card(page, "codex-1")
    expect(codex_card).to_have_attribute("data-state", "quota_exhausted")
    expect(codex_card.locator(".state")).to_contain_text("Quota exhausted · re-check in")
    primary = codex_card.locator('.quota-row[data-window="primary"]')
    expect(primary).to_contain_text("100% used")
    expect(primary).to_contain_text("fresh")
    expect(codex_card.locator('.quota-row[data-window="secondary"]')).to_contain_text(
        "10 pts behind an even pace"
    )
    claude_card = _card(page, "claude-1")
    expect(claude_card.locator('.quota-row[data-window="five_hour"]')).to_contain_text(
        "20 pts ahead of an even pace"
    )
    gemini_row = _card(page, "antigravity-1").locator('.quota-row[data-window="gemini-3-flash"]')
    expect(gemini_row).to_contain_text("25% used")
    expect(gemini_row).to_contain_text("fresh")
    _shoot(page, "accounts-quota")

    _records(pool, 4)
    page.goto("/admin/requests")
    filters = page.get_by_role("form", name="Filters")
    request_id = refused.headers["x-request-id"]
    filters.get_by_label("Request ID").fill(request_id)
    filters.get_by_role("button", name="Apply filters").click()
    rows = page.get_by_role("region", name="Requests table").locator("tbody tr")
    expect(rows).to_have_count(1)
    rows.get_by_role("button", name=f"Details of {request_id}").click()
    details = page.get_by_role("dialog", name="Request details")
    expect(details.locator(".refused")).to_have_text("quota_exhausted")
    expect(details.locator(".excluded")).to_contain_text("quota: 1")
    expect(details.locator(".rule")).to_have_text("Uniform rotation")
    _shoot(page, "request-details-quota")


def _runtime_quota(pool: Pool, name: str) -> list[dict[str, Any]]:
    accounts = pool.admin.get("/api/accounts/runtime").json()["accounts"]
    quota: list[dict[str, Any]] = next(a for a in accounts if a["name"] == name)["quota"]
    return quota


def test_pool_2_the_pool_page_shows_the_room_of_a_members_pools_and_no_account(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool(accounts=3)
    _user, key = pool.member_key("dora")
    with pool.client(key) as client:
        answer = client.post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi"})
        assert answer.status_code == 200, answer.text
    assert (
        pool.admin.patch(f"/api/accounts/{pool.account_ids[2]}", json={"enabled": False}).status_code == 200
    )
    page = _sign_in(open_context(pool.gateway.url), "dora", MEMBER_PASSWORD, "/pool")
    expect(page.get_by_role("heading", name="Pool", exact=True)).to_be_visible()
    panel = page.get_by_role("region", name="default · ChatGPT / Codex")  # the provider by its label
    expect(panel.locator(".tile", has_text="Usable accounts").locator(".tile-value")).to_have_text("2 / 3")
    expect(panel.locator("table.pool-windows tbody tr").first).to_be_visible()  # fresh windows, from the call
    content = page.locator("main").inner_text()
    for secret in ("codex-1", "codex-2", "codex-3", *(account.email for account in pool.sim_accounts)):
        assert secret not in content
    expect(page.get_by_role("link", name="Pool")).to_have_attribute("aria-current", "page")
    _shoot(page, "pool")


# --- FAIL-2 and ALIAS-1 in the web views ------------------------------------------------------------


def test_fail_2_the_request_details_list_each_attempt(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool(accounts=2)
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="30")
    )
    request_id = pool.client().post("/v1/responses", json=BODY).headers["x-request-id"]
    _records(pool, 1)
    page = _admin_page(pool, open_context, "/admin/requests")
    rows = page.get_by_role("region", name="Requests table").locator("tbody tr")
    rows.get_by_role("button", name=f"Details of {request_id}").click()
    details = page.get_by_role("dialog", name="Request details")
    attempts = details.locator("ol.attempts li")
    expect(attempts).to_have_count(2)
    expect(attempts.nth(0)).to_contain_text(f"account #{pool.account_ids[0]}: error (rate_limit_exceeded)")
    expect(attempts.nth(1)).to_contain_text(f"account #{pool.account_ids[1]}: success")
    expect(details).to_contain_text("tried already (failover): 1")
    _shoot(page, "request-attempts")
    details.screenshot(path=DOC_IMAGES / "request-attempts.png")  # docs/routing.md shows it


def _aliases_when(pool: Pool, ready: Callable[[dict[str, str]], bool]) -> dict[str, str]:
    """The default group's aliases once ``ready`` holds for them (bounded wait)."""
    deadline = time.monotonic() + 10
    while True:
        answer = pool.admin.get("/api/groups/1/aliases").json()
        aliases = {entry["alias"]: entry["model"] for entry in answer["aliases"]}
        if ready(aliases) or time.monotonic() > deadline:
            return aliases
        time.sleep(0.05)


def test_alias_1_the_group_page_edits_its_aliases(make_pool: Callable[..., Pool], open_context: Any) -> None:
    pool = make_pool()
    page = _admin_page(pool, open_context, "/groups")
    page.get_by_role("button", name="Edit default").click()
    editor = page.get_by_role("form", name="Aliases of default")
    rows = editor.locator("tr.alias-row")
    expect(rows.first).to_contain_text("built-in")
    defaults = rows.count()
    assert defaults > 0
    editor.get_by_role("button", name="Remove gemini-3.8-flash").click()
    editor.get_by_role("button", name="Add alias").click()
    new = rows.last
    new.get_by_label("Alias", exact=True).fill("fast")
    new.get_by_label("Model of the new alias").fill("gpt-5-codex")
    editor.get_by_role("button", name="Save aliases").click()
    saved = _aliases_when(pool, lambda aliases: "fast" in aliases)  # the page saves in the background
    assert saved["fast"] == "gpt-5-codex" and "gemini-3.8-flash" not in saved
    assert pool.client().post("/v1/responses", json=dict(BODY, model="fast")).status_code == 200
    # A refusal is shown in the form, and nothing changes.
    editor.get_by_role("button", name="Add alias").click()
    rows.last.get_by_label("Alias", exact=True).fill("gpt-5-codex")
    rows.last.get_by_label("Model of the new alias").fill("gpt-5")
    editor.get_by_role("button", name="Save aliases").click()
    expect(editor.get_by_role("alert")).to_contain_text("alias_shadows_model")
    _shoot(page, "group-aliases")
    page.get_by_role("region", name="Aliases of default").screenshot(path=DOC_IMAGES / "group-aliases.png")
    editor.get_by_role("button", name="Remove gpt-5-codex").click()
    editor.get_by_role("button", name="Restore defaults").click()
    editor.get_by_role("button", name="Save aliases").click()
    restored = _aliases_when(pool, lambda aliases: "gemini-3.8-flash" in aliases)
    assert len(restored) == defaults + 1 and "fast" in restored  # the defaults and "fast"
    expect(editor.locator("tr[data-alias='gemini-3.8-flash']")).to_contain_text("built-in")


# --- AUTH-1: two-factor sign-in in the web views --------------------------------------------------


def test_auth_1_set_up_two_factor_sign_in_and_sign_in_with_a_code(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    import pyotp

    pool = make_pool()
    pool.gateway.add_member(pool.admin, "hal")
    page = _sign_in(open_context(pool.gateway.url), "hal", MEMBER_PASSWORD, "/password")
    expect(page.get_by_role("heading", name="My account")).to_be_visible()
    page.get_by_role("button", name="Set up two-factor sign-in").click()
    expect(page.get_by_role("img", name="QR code of the authenticator set-up")).to_be_visible()
    secret = page.locator(".totp-secret").inner_text()
    _shoot(page, "totp-setup")
    confirm = page.get_by_role("form", name="Confirm two-factor sign-in")
    confirm.get_by_label("Code from the app", exact=True).fill(
        "000000" if pyotp.TOTP(secret).now() != "000000" else "1"
    )
    confirm.get_by_role("button", name="Turn on").click()
    expect(confirm.get_by_role("alert")).to_contain_text("invalid_totp")
    confirm.get_by_label("Code from the app", exact=True).fill(pyotp.TOTP(secret).now())
    confirm.get_by_role("button", name="Turn on").click()
    codes = page.locator(".recovery-codes li")
    expect(codes).to_have_count(10)
    recovery = codes.first.inner_text()
    page.get_by_role("button", name="Done").click()
    expect(page.locator(".totp-state")).to_contain_text("is on")
    page.get_by_role("button", name="Sign out").click()
    # Signing in asks for the code once the password is right.
    page.get_by_label("Username").fill("hal")
    page.get_by_label("Password").fill(MEMBER_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    code = page.get_by_label("Authenticator code (or a recovery code)")
    expect(code).to_be_visible()
    code.fill(pyotp.TOTP(secret).at(time.time() + 30))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    # Turned off with the password and a recovery code.
    page.goto("/password")
    off = page.get_by_role("form", name="Turn two-factor sign-in off")
    off.get_by_label("Password", exact=True).fill(MEMBER_PASSWORD)
    off.get_by_label("Code or recovery code", exact=True).fill(recovery)
    off.get_by_role("button", name="Turn off").click()
    expect(page.locator(".totp-state")).to_contain_text("is off")


# --- AUTH-2: single sign-on through a real OpenID provider, in the browser ----------------------------


def test_auth_2_sign_in_with_sso_through_the_providers_page(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    from oidc_server import oidc_provider

    with oidc_provider() as provider:
        pool = make_pool(
            oidc_issuer=provider.issuer,
            oidc_client_id="sublane",
            oidc_client_secret="web-sso-secret",
            oidc_auto_create=True,
            oidc_allowed_domains="example.org",
            trusted_proxies="127.0.0.1",  # the browser's Host is believed (AUTH-2 redirect)
        )
        provider.set_user("u-ivy", email="ivy@example.org", email_verified=True)
        provider.set_user("u-zed", email="zed@elsewhere.net", email_verified=True)
        page = open_context(pool.gateway.url).new_page()
        page.goto("/requests")
        sso = page.get_by_role("link", name="Sign in with SSO")
        expect(sso).to_be_visible()
        _shoot(page, "sign-in-sso")
        # A user of a domain that may not sign in comes back with the reason.
        sso.click()
        page.locator("input[name=sub]").fill("u-zed")
        page.get_by_role("button", name="Authorize").click()
        expect(page.locator("p.notice")).to_contain_text("sso_domain_not_allowed")
        # One that may is created, signed in, and lands on their requests.
        page.get_by_role("link", name="Sign in with SSO").click()
        page.locator("input[name=sub]").fill("u-ivy")
        page.get_by_role("button", name="Authorize").click()
        expect(page.get_by_role("button", name="Sign out")).to_be_visible()
        expect(page.locator("#who")).to_contain_text("ivy@example.org")
        assert page.url.endswith("/requests")


def test_auth_2_link_sso_from_my_account_in_the_browser(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    """An existing user's e-mail is refused at SSO sign-in; signed in with the password, My account's
    button links the identity, and SSO then signs them in."""
    from oidc_server import oidc_provider

    with oidc_provider() as provider:
        pool = make_pool(
            oidc_issuer=provider.issuer,
            oidc_client_id="sublane",
            oidc_client_secret="web-sso-secret",
            trusted_proxies="127.0.0.1",
        )
        pool.gateway.add_member(pool.admin, "kim@example.org")
        provider.set_user("u-kim", email="kim@example.org", email_verified=True)
        page = open_context(pool.gateway.url).new_page()
        page.goto("/requests")
        page.get_by_role("link", name="Sign in with SSO").click()
        page.locator("input[name=sub]").fill("u-kim")
        page.get_by_role("button", name="Authorize").click()
        expect(page.locator("p.notice")).to_contain_text("account_exists")
        page = _sign_in(page.context, "kim@example.org", MEMBER_PASSWORD, "/password")
        page.get_by_role("button", name="Link single sign-on").click()
        page.locator("input[name=sub]").fill("u-kim")
        page.get_by_role("button", name="Authorize").click()
        expect(page.locator("p.notice")).to_contain_text("Single sign-on is linked")
        expect(page.get_by_role("region", name="Single sign-on")).to_contain_text("Linked")
        _shoot(page, "account-sso-linked")
        page.get_by_role("button", name="Sign out").click()
        page.get_by_role("link", name="Sign in with SSO").click()
        page.locator("input[name=sub]").fill("u-kim")
        page.get_by_role("button", name="Authorize").click()
        expect(page.locator("#who")).to_contain_text("kim@example.org")


# --- AUTH-3: a key's client networks in the web views ------------------------------------------------


def test_auth_3_a_key_limited_to_client_networks_from_the_keys_page(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    page = _admin_page(pool, open_context, "/keys")
    create = page.get_by_role("form", name="Create a key")
    create.get_by_label("Key name").fill("office-only")
    create.get_by_label("Client networks (optional)").fill("10.0.0.0/8, 2001:db8::/32")
    create.get_by_role("button", name="Create key").click()
    secret = page.locator(".secret-value").inner_text()
    mine = page.get_by_role("region", name="Your keys")
    row = mine.locator("tr", has_text="office-only")
    expect(row.locator(".networks")).to_have_text("10.0.0.0/8, 2001:db8::/32")
    refused = pool.client(secret).post("/v1/responses", json=BODY)  # from 127.0.0.1
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "ip_not_allowed"
    _shoot(page, "keys-networks")
    page.once("dialog", lambda dialog: dialog.accept("127.0.0.0/8"))
    row.get_by_role("button", name="Client networks of office-only").click()
    expect(row.locator(".networks")).to_have_text("127.0.0.0/8")
    assert pool.client(secret).post("/v1/responses", json=BODY).status_code == 200
    page.once("dialog", lambda dialog: dialog.accept("not-a-network"))
    row.get_by_role("button", name="Client networks of office-only").click()
    expect(page.locator("#status")).to_contain_text("Not changed")
    expect(row.locator(".networks")).to_have_text("127.0.0.0/8")


# --- BULK-1/2: the accounts page exports and imports bundles -----------------------------------------


def test_bulk_1_2_export_and_import_buttons_on_the_accounts_page(
    make_pool: Callable[..., Pool], open_context: Any, tmp_path: Path
) -> None:
    pool = make_pool(accounts=1)
    page = _admin_page(pool, open_context, "/accounts")
    export = page.get_by_role("form", name="Export accounts")
    export.get_by_label("Passphrase").fill("a long enough passphrase")
    with page.expect_download() as download:
        export.get_by_role("button", name="Export all accounts").click()
    bundle = tmp_path / "accounts.bundle"
    download.value.save_as(bundle)
    assert bundle.read_bytes().startswith(b"SUBLANE-BUNDLE")
    assert pool.admin.delete(f"/api/accounts/{pool.account_ids[0]}").status_code == 204
    importer = page.get_by_role("form", name="Import a bundle")
    importer.get_by_label("Bundle file").set_input_files(str(bundle))
    importer.get_by_label("Its passphrase").fill("the wrong passphrase")
    importer.get_by_role("button", name="Import accounts").click()
    expect(importer.get_by_role("alert")).to_contain_text("bad_bundle")
    importer.get_by_label("Its passphrase").fill("a long enough passphrase")
    importer.get_by_role("button", name="Import accounts").click()
    expect(importer.locator(".bundle-result")).to_contain_text("Imported 1: codex-1")
    _shoot(page, "accounts-bundles")
    assert [account["name"] for account in pool.admin.get("/api/accounts").json()["items"]] == ["codex-1"]


def test_alert_5_the_alerts_page_adds_tests_disables_and_removes_a_webhook(
    make_pool: Callable[..., Pool], open_context: Any, tmp_path: Path
) -> None:
    pool = make_pool(alert_retry_s=0.2)
    port, log = free_port(), tmp_path / "received.jsonl"
    url = f"http://127.0.0.1:{port}/hook"
    shown = f"http://127.0.0.1:{port}/***"  # ALERT-1: the path is a secret, shown masked
    page = _admin_page(pool, open_context, "/admin/alerts")
    expect(page.get_by_text("No webhooks yet")).to_be_visible()
    add = page.get_by_role("form", name="Add a webhook")
    add.get_by_label("URL").fill(url)
    add.get_by_label("All events").uncheck()
    add.get_by_label("account.cooling", exact=True).check()
    add.get_by_label("account.reauth_required", exact=True).check()
    add.get_by_role("button", name="Add webhook").click()
    secret = page.get_by_role("region", name="New webhook secret").locator("code").inner_text()
    assert secret.startswith("whsec_")
    [hook] = pool.admin.get("/api/webhooks").json()["items"]
    assert hook["url"] == shown and hook["events"] == ["account.cooling", "account.reauth_required"]
    assert "secret" not in hook
    row = page.locator(f"tr[data-webhook='{hook['id']}']")
    expect(row).to_contain_text("account.cooling, account.reauth_required")
    with receiver(port, secret, log):
        page.get_by_role("button", name=f"Test {shown}").click()
        got = received(log, 1)
        assert got[0]["event"] == "webhook.test" and got[0]["valid"]  # signed with the secret shown
        deadline = time.monotonic() + 10
        while (
            pool.admin.get(f"/api/webhooks/{hook['id']}/deliveries").json()["items"][0]["status"]
            != "delivered"
        ):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        page.get_by_role("button", name="Refresh").click()
        expect(page.locator("tr[data-event='webhook.test']")).to_contain_text("delivered")
        expect(page.locator("tr[data-event='webhook.test']")).to_contain_text(got[0]["delivery"])
    _shoot(page, "alerts")
    page.screenshot(path=DOC_IMAGES / "alerts.png", full_page=True)  # docs/alerts.md shows it
    row.get_by_role("button", name="Disable").click()
    expect(row).to_contain_text("off")
    expect(row.get_by_role("button", name=f"Test {shown}")).to_be_disabled()
    assert pool.admin.get("/api/webhooks").json()["items"][0]["enabled"] is False
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name=f"Remove {shown}").click()
    expect(page.get_by_text("No webhooks yet")).to_be_visible()
    assert pool.admin.get("/api/webhooks").json()["items"] == []


def test_egress_3_the_accounts_page_sets_a_proxy_and_checks_through_it(
    make_pool: Callable[..., Pool], open_context: Any, tmp_path: Path
) -> None:
    from proxy_servers import proxies_installed, start_socks_proxy

    if not proxies_installed():
        pytest.skip("microsocks is not installed")
    socks = start_socks_proxy(tmp_path / "socks", "127.0.0.2", "egress", "web-pw-7731")
    try:
        pool = make_pool()
        page = _admin_page(pool, open_context, "/accounts")
        card = _card(page, "codex-1")
        expect(card.locator("dd.egress")).to_have_text("direct")
        card.get_by_label("Egress proxy (http, https, socks5, socks5h)").fill(socks.url())
        card.get_by_role("button", name="Save proxy").click()
        expect(card.locator("dd.egress")).to_have_text(f"socks5://egress:***@127.0.0.1:{socks.port}")
        card.get_by_role("button", name="Check").click()
        expect(card.locator(".check-result")).to_contain_text("OK through its proxy")
        assert {record.peer for record in pool.sim.requests(endpoint="codex.usage")} >= {"127.0.0.2"}
        assert "web-pw-7731" not in page.content()
        card.get_by_role("button", name="Remove proxy").click()
        expect(card.locator("dd.egress")).to_have_text("direct")
        assert pool.admin.get(f"/api/accounts/{pool.account_ids[0]}").json()["proxy_url"] is None
    finally:
        socks.stop()


def test_client_7_the_upstream_changes_page_lists_what_upstreams_answered_that_sublane_does_not_know(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool(account_options={"models": ["gpt-5-codex", "gpt-7-orion"]})
    page = _admin_page(pool, open_context, "/admin/upstream-changes")
    expect(page.get_by_role("heading", name="Upstream changes")).to_be_visible()
    expect(page.get_by_role("link", name="Upstream changes")).to_have_attribute("aria-current", "page")
    changed = Behaviour.ok(extra_event="response.aroma.delta", extra_field="safety_report")
    pool.sim.script(pool.sim_accounts[0].id, changed)
    answer = pool.client().post("/v1/responses", json=BODY)
    assert answer.status_code == 200 and "event: response.aroma.delta" in answer.text
    deadline = time.monotonic() + 10
    while len(pool.admin.get("/api/upstream-changes").json()["items"]) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    page.reload()
    rows = page.locator("table.upstream-changes tbody tr")
    expect(rows).to_have_count(3)
    event = page.locator("tr[data-kind='event']")
    expect(event).to_contain_text("Stream event type")
    expect(event).to_contain_text("response.aroma.delta")
    expect(event.get_by_role("link", name=answer.headers["x-request-id"])).to_be_visible()
    expect(page.locator("tr[data-kind='terminal_field']")).to_contain_text("safety_report")
    expect(page.locator("tr[data-kind='model']")).to_contain_text("gpt-7-orion")
    _shoot(page, "upstream-changes")
    page.screenshot(path=DOC_IMAGES / "upstream-changes.png", full_page=True)  # docs/operations.md shows it
    _member, session = pool.gateway.member(pool.admin, "mo")
    assert session.get("/api/upstream-changes").status_code == 403


def test_ops_13_request_details_show_the_timing_bar_and_team_usage_its_percentiles(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(header_delay_ms=200))
    wanted = pool.client().post("/v1/responses", json=BODY).headers["x-request-id"]
    (record,) = _records(pool, 1)
    page = _admin_page(pool, open_context, "/admin/requests")
    page.get_by_role("region", name="Requests table").get_by_role(
        "button", name=f"Details of {wanted}"
    ).click()
    details = page.get_by_role("dialog", name="Request details")
    expect(details.get_by_role("heading", name="Where time went")).to_be_visible()
    bar = details.locator(".timing-bar")
    expect(bar).to_be_visible()
    upstream = (
        record["timing"]["first_byte_ms"] - record["timing"]["queue_ms"] - record["timing"]["sublane_ms"]
    )
    assert upstream >= 190
    expect(bar).to_have_attribute("aria-label", re.compile(rf"Upstream to first byte {upstream} ms"))
    widths = {part: bar.locator(f".timing-{part}").evaluate("e => e.getBoundingClientRect().width")
              for part in ("queue", "sublane", "upstream")}  # fmt: skip
    assert widths["upstream"] > widths["sublane"] and widths["upstream"] > widths["queue"]
    _shoot(page, "request-timing")
    details.get_by_role("button", name="Close").click()
    page.goto(f"{pool.gateway.url}/admin/usage?days=1")
    table = page.locator(".timing-percentiles")
    expect(table.locator("tr[data-provider=codex]")).to_contain_text("1")
    first = record["timing"]["first_byte_ms"]
    expect(table.locator("tr[data-provider=codex]")).to_contain_text(f"{first} ms / {first} ms")


def test_paid_2_the_accounts_page_marks_metered_accounts_and_the_details_the_overflow(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()  # one Codex subscription, then an OpenAI API key (metered)
    pool.add_account("openai", "openai-key")
    pool.sim.set_default(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="60")
    )
    request_id = pool.client().post("/v1/responses", json=BODY).headers["x-request-id"]
    _records(pool, 1)
    page = _admin_page(pool, open_context, "/accounts")
    expect(_card(page, "openai-key")).to_have_attribute("data-billing", "metered")
    expect(_card(page, "openai-key").locator(".badge.metered")).to_be_visible()
    expect(_card(page, "codex-1").locator(".badge.metered")).to_be_hidden()
    page.goto("/admin/requests")
    rows = page.get_by_role("region", name="Requests table").locator("tbody tr")
    rows.get_by_role("button", name=f"Details of {request_id}").click()
    details = page.get_by_role("dialog", name="Request details")
    expect(details.locator(".badge.metered")).to_have_text("metered")
    expect(details.locator(".overflow-reason")).to_have_attribute("data-reason", "all_cooling")
    expect(details.locator(".overflow-reason")).to_have_text("every subscription account cooling")
    _shoot(page, "request-metered")


# --- PAID-3: metered spend caps in the group and member forms ----------------------------------


def test_paid_3_group_and_member_forms_set_the_metered_caps(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    bob, _key = pool.member_key("bob")
    page = _admin_page(pool, open_context, "/members")
    page.get_by_role("button", name="Edit bob").click()
    limits = page.get_by_role("form", name="Limits of bob")
    expect(limits).to_contain_text("Spent $0.00 of metered use this month")  # read from bob's limits
    limits.get_by_label("Metered spend per month, US dollars (empty = no limit)").fill("25.5")
    limits.get_by_role("button", name="Save limits").click()
    expect(page.get_by_role("status")).to_contain_text("Limits of bob saved")
    assert pool.admin.get(f"/api/users/{bob['id']}/limits").json()["metered_monthly_usd"] == 25.5
    own = _sign_in(open_context(pool.gateway.url), "bob", MEMBER_PASSWORD, "/usage")
    expect(own.locator("dd[data-metered]")).to_have_text("$0.00 of $25.50")  # the member's own view

    page.goto("/groups")
    page.get_by_role("button", name="Edit default").click()
    edit = page.get_by_role("form", name="Edit default")
    expect(edit).to_contain_text("Spent $0.00 of metered use this month")
    edit.get_by_label("Metered spend cap per month, US dollars (empty = no cap)").fill("100")
    edit.get_by_role("button", name="Save group").click()
    expect(page.get_by_role("form", name="Edit default")).to_have_count(0)  # saved: the editor closed
    [group] = [g for g in pool.admin.get("/api/groups").json()["items"] if g["id"] == 1]
    assert group["metered_monthly_usd"] == 100
    page.get_by_role("button", name="Edit default").click()
    cap = page.get_by_role("form", name="Edit default").get_by_label(
        "Metered spend cap per month, US dollars (empty = no cap)"
    )
    expect(cap).to_have_value("100")
    cap.fill("")
    page.get_by_role("form", name="Edit default").get_by_role("button", name="Save group").click()
    expect(page.get_by_role("form", name="Edit default")).to_have_count(0)
    [group] = [g for g in pool.admin.get("/api/groups").json()["items"] if g["id"] == 1]
    assert group["metered_monthly_usd"] is None


def test_paid_3_team_usage_shows_each_groups_metered_spend_this_month(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool(accounts=0)
    pool.add_account("openai", "openai-key")  # the only account: a metered one serves the call
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    _records(pool, 1)
    assert pool.admin.patch("/api/groups/1", json={"metered_monthly_usd": 50}).status_code == 200
    spent = pool.admin.get("/api/groups").json()["items"][0]["metered_spent_usd"]
    assert spent > 0  # the ledger is written with the records
    page = _admin_page(pool, open_context, "/admin/usage")
    row = page.get_by_role("region", name="Metered spend by group").locator("tr[data-group-id='1']")
    shown = f"${spent:,.4f}" if spent < 1 else f"${spent:,.2f}"  # formatUsd: 4 places below a dollar
    expect(row.locator("td.spent")).to_have_text(shown)
    expect(row.locator("td.cap")).to_have_text("$50.00")
    expect(row.locator("meter")).to_have_attribute("aria-label", f"{shown} of $50.00")
    _shoot(page, "team-usage-metered")


# --- PAID-1/PAID-2 in the web: adding an API key, a group's metered routing ---------------------

COMPAT = "openai-compatible"


def test_paid_1_the_add_form_takes_an_api_key_and_keeps_it_nowhere(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    compat = pool.sim.create_account("compat")
    offered = {item["name"]: item for item in pool.admin.get("/api/providers").json()["items"]}
    assert offered[COMPAT]["api_key"] == {"default_base_url": None, "base_url_required": True, "models": True}
    public = offered["openai"]["api_key"]
    assert public["base_url_required"] is False and public["default_base_url"] and not public["models"]
    assert offered["codex"]["api_key"] is None
    page = _admin_page(pool, open_context, "/accounts")
    page.get_by_role("form", name="Import a credential file").get_by_label("Provider").select_option(
        label=offered["openai"]["label"]
    )
    form = page.get_by_role("form", name="Add an API key")  # the form follows the provider's billing
    expect(form.get_by_label("Credential file content")).to_be_hidden()
    expect(form.get_by_label("API key", exact=True)).to_have_attribute("type", "password")
    base_url = form.get_by_label("Base URL", exact=True)
    expect(base_url).to_have_attribute("placeholder", public["default_base_url"])
    expect(base_url).not_to_have_attribute("required", "")
    expect(form.get_by_label("Models (optional, comma-separated)")).to_be_hidden()

    form.get_by_label("Provider").select_option(label=offered[COMPAT]["label"])
    expect(base_url).to_have_attribute("required", "")
    form.get_by_label("Name", exact=True).fill("local-vllm")
    form.get_by_label("API key", exact=True).fill("sk-not-a-key-0123456789")
    base_url.fill(pool.sim.compat_base_url)
    form.get_by_label("Models (optional, comma-separated)").fill("qwen3-coder-30b")
    _shoot(page, "accounts-add-api-key")
    form.get_by_role("button", name="Import account").click()
    expect(form.get_by_role("alert")).to_contain_text("invalid_credentials")  # the key was checked
    expect(form.get_by_label("API key", exact=True)).to_have_value("")  # and left the page
    assert pool.admin.get("/api/accounts").json()["items"][-1]["name"] != "local-vllm"

    form.get_by_label("API key", exact=True).fill(compat.api_key)
    form.get_by_role("button", name="Import account").click()
    expect(_card(page, "local-vllm")).to_have_attribute("data-billing", "metered")
    [added] = [a for a in pool.admin.get("/api/accounts").json()["items"] if a["name"] == "local-vllm"]
    assert added["provider"] == COMPAT and added["billing"] == "metered"
    values = page.evaluate("[...document.querySelectorAll('input, textarea')].map((el) => el.value).join()")
    assert compat.api_key not in values and compat.api_key not in page.content()


def test_paid_2_the_group_form_sets_the_metered_routing_and_its_overflow_wait(
    make_pool: Callable[..., Pool], open_context: Any
) -> None:
    pool = make_pool()
    page = _admin_page(pool, open_context, "/groups")
    page.get_by_role("button", name="Edit default").click()
    edit = page.get_by_role("form", name="Edit default")
    expect(edit.get_by_role("radio", name=re.compile("^Overflow"))).to_be_checked()  # the default
    expect(edit).to_contain_text("API keys are never used for this group.")
    wait = edit.get_by_label(re.compile("^Overflow after"))
    expect(wait).to_have_value("5")
    edit.get_by_role("radio", name=re.compile("^Normal")).check()
    wait.fill("4000")
    edit.get_by_role("button", name="Save group").click()
    expect(edit.get_by_role("alert")).to_contain_text("from 0 to 3600")  # shown in the form, nothing sent
    group = pool.admin.get("/api/groups/1").json()
    assert (group["metered"], group["overflow_after_s"]) == ("overflow", 5)
    wait.fill("12.5")
    edit.get_by_role("button", name="Save group").click()
    expect(edit).to_have_count(0)  # saved: the editor closed
    group = pool.admin.get("/api/groups/1").json()
    assert (group["metered"], group["overflow_after_s"]) == ("normal", 12.5)
    expect(page.locator("tr[data-group-id='1'] td.metered-routing")).to_have_text("normal")
    page.get_by_role("button", name="Edit default").click()
    expect(edit.get_by_role("radio", name=re.compile("^Normal"))).to_be_checked()
    expect(wait).to_have_value("12.5")
    _shoot(page, "group-metered-routing")
