"""Serving the views: the shell at every page path, the assets beside it, nothing from elsewhere."""

from __future__ import annotations

import re

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from sublane_web import PAGES, STATIC_DIR, STATIC_PREFIX, mount


@pytest.fixture
def client() -> TestClient:
    app = Starlette()
    mount(app)
    return TestClient(app)


@pytest.mark.parametrize("path", PAGES)
def test_every_page_path_answers_the_shell_with_a_same_origin_policy(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert f'src="{STATIC_PREFIX}/app.js"' in answer.text
    policy = answer.headers["content-security-policy"]
    assert (
        "default-src 'self'" in policy
        and "script-src 'self'" in policy
        and "frame-ancestors 'none'" in policy
    )


def test_assets_are_served_and_revalidated(client: TestClient) -> None:
    modules = (
        "app.js", "lib.js", "accounts.js", "requests.js", "keys.js", "people.js", "audit.js", "usage.js",
        "charts.js", "password.js", "clients.js",
    )  # fmt: skip
    for name in (*modules, "app.css"):
        answer = client.get(f"{STATIC_PREFIX}/{name}")
        assert answer.status_code == 200, name
        assert answer.headers["cache-control"] == "no-cache"
    assert "javascript" in client.get(f"{STATIC_PREFIX}/app.js").headers["content-type"]
    assert client.get(f"{STATIC_PREFIX}/missing.js").status_code == 404


def test_modules_import_only_each_other_and_reference_no_other_origin() -> None:
    for path in STATIC_DIR.iterdir():
        text = path.read_text()
        assert not re.search(r"https?://", text), f"{path.name} refers to another origin"
        for target in re.findall(r'from "([^"]+)"', text):
            assert target.startswith("./") and (STATIC_DIR / target).exists(), (path.name, target)
